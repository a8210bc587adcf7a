"""TP109 cuda-or-cpu-device-choice: ``"cuda" if torch.cuda.is_available() else "cpu"``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import is_cpu_target
from torchport.check._records import replace
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._counted_choice import counted_choice
from torchport.check.rules._cpu_or_cuda_only import only_cpu_or_cuda
from torchport.check.rules._cuda_choice import chooses_cuda_or_the_cpu
from torchport.check.rules._idle_choices import decides_nothing
from torchport.check.rules._snippets import DEVICE_LINE
from torchport.check.rules._test_code import benchmark_code, collected_by_a_test_runner
from torchport.check.semantic._following import why_not_followed


class CudaOrCpuDeviceChoice(Rule):
    """## What it does
    Finds choices between CUDA and the CPU made with `torch.cuda.is_available()` (directly or
    through a flag bound to it): the idiom
    `torch.device("cuda" if torch.cuda.is_available() else "cpu")`, and branches such as
    `if torch.cuda.is_available(): model.cuda()`; also by the count (`"cuda" if n_gpu > 0 else
    "cpu"`, `if torch.cuda.device_count() == 0: device = "cpu"`), those without a fix
    (`_counted_choice`). The CUDA code inside such a branch is not
    reported by TP101 or TP401: this rule reports the choice once, spanning the CUDA branch. A
    branch naming no CUDA device or API (a dtype choice, building a CUDA extension, CUDA's RNG
    state), only asking CUDA questions (`mem = torch.cuda.memory_reserved() if
    torch.cuda.is_available() else 0`, `empty_cache()`) or waiting for it around a timer
    (`synchronize()`) is no device choice and is left alone, as are `assert
    torch.cuda.is_available()` and chains also testing MPS or XPU (`elif torch.backends.mps...`).

    Test code is left alone: a file in a `test` or `tests` folder, a `conftest.py`, a module pytest
    collects (`test_*.py`, `*_test.py`) or a file in a `testing` folder that imports `pytest` or
    `unittest`, or a `test*` function, `Test*` class or fixture (`@pytest.fixture`) in a file that
    imports them. There the choice decides where the test runs, and on MPS or XPU the test still
    runs on the CPU and passes. A program named like a test (an experiment driver `run_test.py`
    whose `test_*` functions its `__main__` calls, no test framework imported) is a program, and
    stays reported. Left too: benchmark code (`_test_code.benchmark_code`) and modules where CUDA
    or the CPU is all they can use (`_cpu_or_cuda_only`): one importing Horovod, or one sharing
    what the choice places with worker processes (`model.share_memory()`,
    `Process(args=(model,))`): Horovod's collectives and `torch.multiprocessing` take CPU or CUDA
    tensors only. So are a choice the next statement binds over unread, one bound in a function to
    a name the function never reads, one in a build script,
    and `if use_cuda:` on the function's own parameter over NVTX marks only (`_idle_choices`),
    a choice that only places a seeded `torch.Generator` given to a diffusers pipeline (a CPU
    generator serves any device), one a FastAPI route returns as a text field, and an
    autocast: `torch.autocast("cuda") if <test> else nullcontext()`, or `if <test>:` over
    one `with torch.autocast("cuda"):` (no `else`, or one doing the same): no device is picked.

    ## Why is this bad?
    It is not wrong: the PyTorch documentation teaches it, and the program runs everywhere. But it
    knows two devices only, so on an Apple (MPS), Intel (XPU) or other accelerator it silently runs
    on the CPU. `torch.accelerator` (torch >= 2.6) picks whatever accelerator is present.

    ## Fix safety
    Only the idiom itself is rewritten, to the `torch.accelerator` expression (its `.type` string
    when the idiom was a string, so `device == "cuda"` tests keep their meaning): on a machine with
    MPS or XPU the program now runs there instead of on the CPU, which changes speed, numerics and
    memory use.

    Moving the device moves everything placed through it, so the fix is offered only where
    everything that meets those values follows it too: the choice is one plain name (not
    `self.device`), used only to place things (`.to(device)`, `device=device`), to print, or in
    `== "cuda"` tests; the file reaches CUDA no other way (`.cuda()`, `"cuda"`); every model it
    builds is moved to the device; placed values reach no model held elsewhere (`self.model`, a
    parameter some caller fills with an unmoved model) and meet no tensor made on the CPU.
    Otherwise the finding says what stays behind and has no fix. Flags (a CUDA index flag too:
    `"cpu" if args.gpu < 0 else f"cuda:{args.gpu}"`) and branches are always reported without a
    fix: the code they guard may be CUDA-only (`.cuda()`), and would then fail on the other
    accelerators.
    """

    code = "TP109"
    name = "cuda-or-cpu-device-choice"
    intent = Intent.DEVICE
    message = (
        "use `torch.accelerator` to pick the device: this CUDA-or-CPU choice works, but runs "
        "on the CPU where MPS or XPU is available"
    )
    fix_safety = FixSafety.UNSAFE
    default_contexts = frozenset({"code"})  # judged: check/_default_scope.py
    node_types = (ast.If, ast.IfExp)
    valid = (
        "import torch\n\n"
        "device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() "
        'else torch.device("cpu")\n',
        'import torch\n\ndt = "bf16" if torch.cuda.is_available() else "fp16"\n',
        "import torch\n\nif torch.cuda.is_available():\n    torch.cuda.empty_cache()\n",
        "import torch\n\nif torch.cuda.is_available():\n    torch.cuda.synchronize()\n",
        "import torch\n\nif torch.cuda.is_available():\n    d = 'cuda'\n"
        "elif torch.backends.mps.is_available():\n    d = 'mps'\n",
        "import torch\n\nassert torch.cuda.is_available()\n",
        "import torch\n\nif torch.cuda.is_available():\n    sources += ['nms_cuda.c']\n",
        "import torch\n\nif torch.cuda.is_available():\n"
        '    print(f"on {torch.cuda.get_device_name(torch.cuda.current_device())}")\n'
        "    torch.backends.cudnn.benchmark = True\n",
        'import torch\n\nif x.device.type == "cuda":\n    ok = torch.cuda.is_available()\n',
        'import torch\n\nmode = "cpu" if args.batch < 0 else "cuda"\n',  # not a flag for CUDA
        'import torch\n\ndevice = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "model = Net().to(device)\nmodel.share_memory()\n",
    )
    invalid = (
        Example(
            "import torch\n\n"
            'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n',
            fixed=f"import torch\n\n{DEVICE_LINE}",
        ),
        Example(
            "import torch\n\ndef run(x):\n"
            '    return x.to(torch.device("cuda" if torch.cuda.is_available() else "cpu"))\n',
            fixed=f"import torch\n\n{DEVICE_LINE}\ndef run(x):\n    return x.to(device)\n",
        ),
        Example(
            'import torch\n\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n',
            fixed="import torch\n\ndevice = torch.accelerator.current_accelerator().type "
            'if torch.accelerator.is_available() else "cpu"\n',
        ),
        Example(
            "import torch\n\nuse_cuda = torch.cuda.is_available()\nif use_cuda:\n    model.cuda()\n"
        ),
        Example("import torch\n\nif torch.cuda.is_available():\n    x = x.cuda()\n"),
        Example(  # a flag holding a CUDA index, below 0 for the CPU: no fix, as for any flag
            'import torch\n\ndevice = torch.device("cpu" if args.gpu < 0 else f"cuda:{args.gpu}")\n'
        ),
        Example(
            "import torch\n\n"
            'dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")\n',
            fixed="import torch\n\n" + DEVICE_LINE.replace("device = ", "dev = ", 1),
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, (ast.If, ast.IfExp))
        counted = not chooses_cuda_or_the_cpu(node, ctx)
        if (counted and not counted_choice(node, ctx)) or collected_by_a_test_runner(ctx):
            return
        if benchmark_code(ctx) or only_cpu_or_cuda(node, ctx) or decides_nothing(node, ctx):
            return  # a benchmark's own, where CPU or CUDA are all it can use, or idle
        test = node.test
        if isinstance(node, ast.If):  # the test, spanning the CUDA branch it guards
            end = ctx.finding(self, node.body[-1])
            yield replace(ctx.finding(self, test), end_line=end.end_line, end_col=end.end_col)
            return
        if counted or not (isinstance(test, ast.Call) and is_cpu_target(node.orelse, ctx)):
            yield ctx.finding(self, node)  # `"cuda" if use_cuda else "cpu"`: no fix
            return
        yield _idiom(self, node, ctx)


def _idiom(rule: Rule, node: ast.IfExp, ctx: Context) -> Finding:
    """The idiom itself, rewritten only where everything it places follows the new device."""
    from torchport.check.port._models import ModelKnowledge  # on first use

    parent, idiom = ctx.parent, node  # type: ast.AST | None, ast.expr
    if _is_device_call(parent, node, ctx):
        assert isinstance(parent, ast.Call)
        idiom, parent = parent, (ctx.ancestors[-2] if len(ctx.ancestors) > 1 else None)
    known = ModelKnowledge(ctx.scopes.nodes_of(ast.ClassDef), ctx.qualname)  # type: ignore[arg-type]
    why = why_not_followed(idiom, ctx, lambda c: known.constructor(c) and not known.stateless(c))
    torch = ctx.torch_at(idiom)
    if why is not None or torch is None:
        detail = why or "torch is not imported where the choice is made"
        return ctx.finding(rule, idiom, message=f"{rule.message} (no automatic fix: {detail})")
    t, imports = torch
    if idiom is node and isinstance(node.body, ast.Constant):
        # A string stays a string, so `device == "cuda"` tests further on keep working.
        acc = f"{t}.accelerator"
        text = f'{acc}.current_accelerator().type if {acc}.is_available() else "cpu"'
        edits = (ctx.replace(node, text), *imports)
    elif isinstance(parent, ast.arguments) or (
        isinstance(parent, ast.Assign) and parent.value is idiom
    ):
        edits = (ctx.replace(idiom, ctx.device_expr(t)), *imports)
    else:
        found = ctx.device_at(idiom)
        if found is None:
            return ctx.finding(rule, idiom)
        edits = (ctx.replace(idiom, found[0]), *found[1])
    return ctx.finding(rule, idiom, fix=Fix(edits, FixSafety.UNSAFE, _ELSEWHERE))


_ELSEWHERE = (
    "where CUDA is missing but another accelerator is there (MPS, XPU), the program now "
    "runs on it instead of the CPU: speed, numerics and memory use change there"
)


def _is_device_call(parent: ast.AST | None, node: ast.expr, ctx: Context) -> bool:
    return (
        isinstance(parent, ast.Call)
        and len(parent.args) == 1
        and parent.args[0] is node
        and not parent.keywords
        and ctx.qualname(parent.func) == "torch.device"
    )
