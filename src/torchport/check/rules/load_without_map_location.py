"""TP301 load-without-map-location: ``torch.load(path)`` without ``map_location``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, called, in_tests, keyword
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules import _loading
from torchport.check.rules._loading import LOADS, loaded_elsewhere, written_by_this_run
from torchport.check.rules._own_caches import cached_here
from torchport.check.rules._snippets import DEVICE_LINE
from torchport.check.semantic._library_imports import uses_cuda_only_library

_LOAD = frozenset({"load"})
# a TorchScript archive restores its tensors where they were saved too (branch r34al)
_MAPPABLE = LOADS | {"torch.jit.load"}


class LoadWithoutMapLocation(Rule):
    """## What it does
    Finds `torch.load(...)` and `torch.jit.load(...)` calls that do not pass
    `map_location`.

    ## Why is this bad?
    Without `map_location`, tensors are restored to the device they were saved
    from. A checkpoint written on a GPU then fails to load on a CPU-only or
    Apple machine ("Attempting to deserialize object on a CUDA device"), and
    one written on `cuda:3` lands on GPU 3 of every process.

    The rule stays quiet where the file itself shows the load is fine: the
    other arm of the same `if` loads with `map_location` (an `if args.cuda:`
    split), the file saves the same file name from CPU tensors
    (`torch.save(feats.cpu(), join(d, "feats.pth"))`), a TensorRT engine's state
    is loaded (`torch2trt` imported in the same block), or the same run wrote
    the file a moment before on the same machine (a temporary directory, or a
    `torch.save` to the same path earlier in the function), where the program
    caches what it builds in that file (`try: x = torch.load(p)`, then
    `torch.save(x, p)` where it was missing; a PyG dataset's `processed_paths`,
    which its own `process()` writes: `_own_caches`), where what is
    loaded takes the place of a plain Python object the program otherwise
    builds (`enc = Vocab(data)` on one path, `enc = torch.load(path)` on the
    other, with `Vocab` a class of the project that stores no tensors), a file
    that saves checkpoints itself in a project whose `.py` files never name a
    device (all it writes are CPU tensors), and in tests, which load their own
    fixtures.

    ## Fix safety
    The fix loads onto the module's `device`. Where the checkpoint used to be
    restored on a specific GPU (`cuda:3`) it now lands on the current one, and
    tensors saved on the CPU now load on the accelerator. So the fix is offered
    only where what is loaded goes into `load_state_dict(...)` (directly, by
    key, or through a name used for nothing else), which copies it to wherever
    the model or optimizer lives; a checkpoint used any other way could meet
    tensors on the CPU, and is reported without a fix.
    """

    code = "TP301"
    name = "load-without-map-location"
    intent = Intent.DEVICE
    default = True  # one form only: _select.ONLY_FORMS (check/_default_scope.py's KEPT_ON)
    default_contexts = frozenset({"code"})  # judged: check/_default_scope.py
    message = 'pass `map_location=device` (or `"cpu"`) so checkpoints load on any machine'
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = _LOAD
    valid = (
        'import torch\n\nstate = torch.load("ckpt.pt", map_location="cpu")\n',
        "import torch\n\nstate = torch.load(path, device)\n",
        "import torch\n\n"
        "if args.cuda:\n"
        "    ckpt = torch.load(path)\n"
        "else:\n"
        "    ckpt = torch.load(path, map_location=lambda s, loc: s)\n",
        "import os\nimport torch\n\n"
        'torch.save(feats.cpu(), os.path.join(out, "feats.pth"))\n'
        'feats = torch.load(os.path.join(src, "feats.pth"))\n',
        # What is loaded stands in for a plain object (a vocabulary): nothing to map.
        "import torch\n\n"
        "class Vocab:\n"
        "    def __init__(self, words):\n"
        "        self.ids = {w: i for i, w in enumerate(words)}\n\n"
        "if args.vocab is None:\n"
        "    vocab = Vocab(words)\n"
        "else:\n"
        "    vocab = torch.load(args.vocab)\n",
        # ... also through a name both are copied into.
        "import torch\n\n"
        "class Vocab:\n"
        "    pass\n\n"
        "built = Vocab()\n"
        "loaded = torch.load(path)\n"
        "use = built\n"
        "if trust:\n"
        "    use = loaded\n",
    )
    invalid = (
        Example(
            'import torch\n\nnet.load_state_dict(torch.load("ckpt.pt", weights_only=True))\n',
            fixed="import torch\n\n"
            f"{DEVICE_LINE}"
            "\n"
            'net.load_state_dict(torch.load("ckpt.pt", weights_only=True, map_location=device))\n',
        ),
        Example(
            'import torch\n\nnet.load_state_dict(torch.load(p, weights_only=True)["net"])\n',
            fixed=f"import torch\n\n{DEVICE_LINE}\n"
            'net.load_state_dict(torch.load(p, weights_only=True, map_location=device)["net"])\n',
        ),
        Example('import torch\n\nfeats = torch.load("f.pt", weights_only=True)\nsim = feats @ q\n'),
        Example('import torch\n\nnet = torch.jit.load("net.pt")\nout = net(x)\n'),
        # The other path builds an object that stores a tensor: the load may restore it anywhere.
        Example(
            "import torch\n\n"
            "class Table:\n"
            "    def __init__(self, n):\n"
            "        self.rows = torch.zeros(n)\n\n"
            "table = Table(3) if fresh else torch.load(path)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if called(node, ctx, _LOAD) not in _MAPPABLE or len(node.args) > 1:
            return
        if keyword(node, "map_location") is not None or any(k.arg is None for k in node.keywords):
            return
        from torchport.check.rules._cpu_checkpoints import saved_from_cpu  # on first use

        if in_tests(ctx) or _other_arm_maps(node, ctx) or saved_from_cpu(node, ctx):
            return  # tests load their own fixtures, or the file shows the load is fine
        if uses_cuda_only_library(node, ctx):
            return  # a TensorRT engine's state (`if trt: from torch2trt import TRTModule`)
        if written_by_this_run(node, ctx) or _loading.stands_for_plain_object(node, ctx):
            return
        if cached_here(node, ctx):
            return  # the program's own cache: `try: torch.load(p)` then `torch.save(x, p)`
        from torchport.check.rules._cpu_projects import cpu_only_project  # on first use

        if cpu_only_project(ctx):
            return  # its own checkpoints, in a project that never names a device: CPU ones
        why = loaded_elsewhere(node, ctx)
        if why is not None:
            message = f"{self.message} (no automatic fix: {why})"
            yield ctx.finding(self, node, message=message)
            return
        found = ctx.device_at(node)
        if found is None:
            yield ctx.finding(self, node)  # no name is safely the device here: by hand
            return
        name, edits = found
        add = add_keyword(node, f"map_location={name}", ctx)
        yield ctx.finding(self, node, fix=Fix((add, *edits), FixSafety.UNSAFE, _MAPPED))


_MAPPED = (
    "tensors saved on a specific GPU (`cuda:3`) now load on the current accelerator, "
    "and tensors saved on the CPU load on the accelerator too"
)


def _maps(tree: ast.AST, ctx: Context) -> bool:
    """Whether ``tree`` holds a load that passes ``map_location``."""
    return any(
        isinstance(sub, ast.Call)
        and keyword(sub, "map_location") is not None
        and called(sub, ctx, _LOAD) in _MAPPABLE
        for sub in ast.walk(tree)
    )


def _other_arm_maps(node: ast.Call, ctx: Context) -> bool:
    """Whether an enclosing ``if``'s other arm loads with ``map_location`` (a device split)."""
    child: ast.AST = node
    parent = ctx.scopes.parent(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(parent, (ast.If, ast.IfExp)):
            body = parent.body if isinstance(parent.body, list) else [parent.body]
            orelse = parent.orelse if isinstance(parent.orelse, list) else [parent.orelse]
            other = orelse if any(child is s for s in body) else body
            if any(_maps(stmt, ctx) for stmt in other):
                return True
        child, parent = parent, ctx.scopes.parent(parent)
    return False
