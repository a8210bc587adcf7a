"""TP117 factory-beside-tensor-arguments: a CPU tensor made here meets the tensor arguments."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._autograd_saved import saved_tensors
from torchport.check.rules._module_tensors import in_a_module_method, tensor_annotation, zero_dim
from torchport.check.rules._port import creators
from torchport.check.rules._tensor_meetings import (
    appended,
    binding,
    loop_rows,
    meetings,
    own_statements,
)

_MOVES = frozenset({"to", "cuda", "type_as", "new_tensor"})
_HOST_READS = frozenset({"item", "tolist"})
_HEAD = "import torch\n\n\ndef step(hessian: torch.Tensor, damping: float):\n"


class FactoryBesideTensorArguments(Rule):
    """## What it does
    Finds a tensor made without `device=` (`torch.eye(n)`, `torch.tensor([...])`,
    `torch.arange(n)`) in a function whose parameters are annotated as tensors,
    where it meets one of them: in arithmetic (`hessian + d * torch.eye(n)`), in a
    torch function's arguments (`torch.pow(r, torch.tensor([...]))`) or in one
    sequence given to one (`torch.cat((padding, target))`), in one list that collects
    both (`out.append(...)`), directly or through a local name, through values
    computed from them, or through the rows of a loop over them (`for target in
    targets[name]`, `enumerate(...)`, `.items()`).

    ## Why is this bad?
    The function takes its tensors from its callers, wherever they live; the tensor
    it makes lives on the CPU. Once a caller passes accelerator tensors, the first
    operation mixing the two fails. Making the tensor on the argument's device
    (`device=hessian.device`, or `torch.eye(n).to(hessian)`) keeps the function
    device-agnostic. Reported without a fix: which argument to follow is the
    author's choice.

    The values a `torch.autograd.Function` unpacks from `ctx.saved_tensors` count as
    tensor arguments too (`X, = ctx.saved_tensors` in `backward`).

    A method of an `nn.Module` is left to TP504 (its inputs and parameters decide
    there), a 0-dim tensor (`torch.tensor(2.0)`) mixes with any device, one made
    into `out=` lives where that tensor does: left alone, as is one meeting no argument.

    ## Why is it off by default?
    New (recall round 5c), and not yet judged on the precision samples: a helper
    that only ever sees CPU tensors is reported too. `--extend-select TP117` runs it.
    """

    code = "TP117"
    name = "factory-beside-tensor-arguments"
    intent = Intent.DEVICE
    default = False
    message = (
        "make this tensor on the tensor arguments' device (`device=x.device`): "
        "made on the CPU, it meets the caller's tensors wherever they are"
    )
    fix_safety = FixSafety.NONE
    node_types = (ast.FunctionDef, ast.AsyncFunctionDef)
    valid = (
        _HEAD + "    return hessian + damping * torch.eye(len(hessian), device=hessian.device)\n",
        _HEAD + "    return hessian * torch.tensor(2.0)\n",
        "import torch\n\n\ndef step(hessian, damping):\n"
        "    return hessian + damping * torch.eye(len(hessian))\n",
    )
    invalid = (
        Example(_HEAD + "    return hessian + damping * torch.eye(len(hessian))\n"),
        Example(_HEAD + "    c = torch.tensor([1.0, 2.0])\n    return torch.pow(hessian, c)\n"),
        Example(
            "import torch\n\n\nclass Sig(torch.autograd.Function):\n    @staticmethod\n"
            "    def backward(ctx, grad):\n        x, k = ctx.saved_tensors\n"
            "        return grad * (x + 1e-9 * torch.eye(x.shape[-1]))\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        args = node.args
        every = (*args.posonlyargs, *args.args, *args.kwonlyargs)
        saved = saved_tensors(node, ctx)
        follows = {
            a.arg for a in every if a.annotation is not None and tensor_annotation(a.annotation)
        } | saved
        if not follows:
            return
        if in_a_module_method(node, ctx):
            return  # TP504's: the module's inputs and parameters decide its device
        host: dict[str, list[ast.Call]] = {}  # local names bound to CPU tensors made here
        reported: set[int] = set()
        # lists collecting the arguments' tensors, and the CPU factories others collect
        collects: set[str] = set()
        collected: dict[str, list[ast.Call]] = {}
        for stmt in own_statements(node.body):
            found = [
                call
                for a, b in meetings(stmt, ctx)
                for one, other in ((a, b), (b, a))
                if _refers(one, follows, ctx) and not _refers(other, follows, ctx)
                for call in _made(other, host, follows, ctx)
            ]
            follows.update(loop_rows(stmt, lambda e: _refers(e, follows, ctx)))
            if (item := appended(stmt)) is not None:
                if _refers(item[1], follows, ctx):
                    collects.add(item[0])
                else:
                    collected.setdefault(item[0], []).extend(_made(item[1], host, follows, ctx))
                if item[0] in collects:
                    found += collected.pop(item[0], [])
            for call in found:
                if id(call) not in reported:
                    reported.add(id(call))
                    yield ctx.finding(self, call)
            target, value = binding(stmt)
            if target is None or value is None:
                continue
            if _refers(value, follows, ctx):
                follows.add(target)
                host.pop(target, None)
            elif made := _made(value, host, follows, ctx):
                host[target] = made
            else:
                host.pop(target, None)
                if not (target in saved and "saved_" in ctx.segment(value)):
                    follows.discard(target)  # (not `x = ctx.saved_tensors[0]`)


def _refers(expr: ast.AST, names: set[str], ctx: Context) -> bool:
    """Whether ``expr`` reads one of ``names`` outside the arguments of a tensor factory."""
    made_by, typed = creators()
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and node.id in names:
            return True
        if isinstance(node, ast.Call) and ctx.qualname(node.func) in made_by | typed:
            todo.extend(k.value for k in node.keywords if k.arg == "device")
            continue  # `torch.tensor([rs ** 3])` is still made on the CPU
        if isinstance(node, ast.Attribute) and node.attr in ("shape", "dtype", "ndim"):
            continue  # `x.shape`: sizes, not the tensor
        todo.extend(ast.iter_child_nodes(node))
    return False


def _made(
    expr: ast.AST, host: dict[str, list[ast.Call]], follows: set[str], ctx: Context
) -> list[ast.Call]:
    """The CPU factories (of one dimension or more) whose tensors ``expr`` holds."""
    made_by, typed = creators()
    found: list[ast.Call] = []
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Subscript):
            todo.append(node.value)  # CPU index tensors index a tensor anywhere
            continue
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in _HOST_READS:
            continue  # `eps.sum().item()`: a Python number, on no device
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Name) and node.id in host:
            found.extend(host[node.id])
        elif (
            isinstance(node, ast.Call)
            and (name := ctx.qualname(node.func) or "") in made_by | typed
        ):
            placed = keyword(node, "device") or keyword(node, "out")  # `out=`: where it is
            if placed is None and not zero_dim(node, name):
                first = node.args[0] if node.args else None
                if not (isinstance(first, ast.Name) and first.id in follows):  # a copy keeps it
                    found.append(node)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in _MOVES:
            return []  # moved (or made) where something else lives
    return found
