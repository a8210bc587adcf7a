"""CUDA's own arm of a dispatch on a device-type string, for TP101 (held-out sample AD's F7,
judged low (f): spacecraft-telemetry-anomaly-detection's ``resolve_device(setting)``, whose
``if setting == "cuda":`` arm returns ``torch.device("cuda")`` beside its own ``if setting ==
"mps":`` arm).

The CUDA at a node is left alone where the node is in the body of an ``if NAME == "cuda":``
(``"cuda" == NAME``, ``"cuda:0"``) of the function holding it, and that function also
compares the same plain name with another accelerator's type (``NAME == "mps"``, ``!=``,
``NAME in ("xpu", "cpu")``). There the name holds CUDA's type, so the literal says what the
name says, and the function already has another accelerator's branch: naming the device from
``torch.accelerator`` in CUDA's arm changes nothing. A name containing ``dev`` is the
device guard's already (``semantic/_guards``). A test of another accelerator on another name,
or no such test (``if backend == "cuda": ... else: <CPU>``, which may be a CUDA-or-CPU
choice), keeps the finding; so does CUDA outside the arm.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.semantic._devices import OTHER_ACCELERATORS

__all__ = ["cuda_arm_of_a_dispatch"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TESTS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def cuda_arm_of_a_dispatch(node: ast.AST, ctx: Context) -> bool:
    """Whether ``node`` is in CUDA's arm of a dispatch on a type string naming another
    accelerator (above)."""
    chain = [*ctx.ancestors, node]
    func = next((a for a in reversed(chain[:-1]) if isinstance(a, _FUNCTIONS)), None)
    if func is None:
        return False
    for holder, child in zip(reversed(chain[:-1]), reversed(chain[1:]), strict=True):
        if holder is func:
            return False
        if isinstance(holder, ast.If) and any(child is s for s in holder.body):
            name = _cuda_test(holder.test)
            if name is not None and _tests_another_accelerator(func, name):
                return True
    return False


def _cuda_test(test: ast.expr) -> str | None:
    """``NAME == "cuda"`` (either side, ``"cuda:N"``): the name."""
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return None
    sides = (test.left, test.comparators[0])
    for name, kind in (sides, sides[::-1]):
        if isinstance(name, ast.Name) and _types(kind) == {"cuda"}:
            return name.id
    return None


def _tests_another_accelerator(func: ast.AST, name: str) -> bool:
    """A comparison of ``name`` in ``func`` with a type string of another accelerator."""
    for sub in ast.walk(func):
        if not (isinstance(sub, ast.Compare) and len(sub.ops) == 1):
            continue
        if not isinstance(sub.ops[0], _TESTS):
            continue
        sides = (sub.left, sub.comparators[0])
        for side, other in (sides, sides[::-1]):
            if (
                isinstance(side, ast.Name)
                and side.id == name
                and _types(other) & OTHER_ACCELERATORS
            ):
                return True
    return False


def _types(expr: ast.expr) -> set[str]:
    """The lower-case types a string constant (or a tuple, list or set of them) names."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return {expr.value.partition(":")[0].lower()}
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_types(e) for e in expr.elts))
    return set()
