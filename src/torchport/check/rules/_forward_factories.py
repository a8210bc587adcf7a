"""Which of TP504's findings a default run reports: a tensor ``forward`` makes on the CPU.

``model.to(device)`` moves a module's parameters and buffers, not the tensors its methods make on
each call. Of 80 judged findings of ``check --select TP504`` on 23 repositories no earlier sample
used (benchmarks/data/precision_sample_tp504.csv, branch t34an), 47 are real; most of the others
are in methods run once or never (sampling, a result turned into text, dead code), build host
data that is copied either way (``torch.from_numpy``, a Python list), or are made where
``out=`` or ``torch.normal``'s tensor arguments place them. In the form this module tells, 19 of
the 20 judged findings are real: the call is in a module's ``forward`` (what every training and
inference step runs), its value is not read back to Python at once (``torch.rand(1).item()``: a
host number, on no device) and it is not filled element by element in a loop (``mask[i][j] =
0``: better made on the host and moved in one copy). The rest is left to a run that names the
rule (``_select.ONLY_FORMS``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.rules._module_tensors import method_of_a_module
from torchport.check.rules._port import creators, port_facts

__all__ = ["made_in_forward"]

_READ_BACK = frozenset({"item", "tolist", "numpy"})


def made_in_forward(node: ast.AST, ctx: Context) -> bool:
    """Whether the TP504 finding at ``node`` is the form a default run reports."""
    if not isinstance(node, ast.Call) or any(k.arg in ("device", "out") for k in node.keywords):
        return False
    made_by, typed = creators()
    if ctx.qualname(node.func) not in made_by | typed:
        return False  # a module list, a tensor attribute, a lambda: other forms of the rule
    facts = port_facts(ctx)
    method = method_of_a_module(facts.scope_of.get(id(node)))
    if method is None or method.name != "forward":
        return False
    parents = facts.parents
    if _read_back(node, parents):
        return False
    bound = parents.get(id(node))
    return not (
        isinstance(bound, ast.Assign)
        and len(bound.targets) == 1
        and isinstance(target := bound.targets[0], ast.Name)
        and _filled_in_a_loop(target.id, method)
    )


def _read_back(node: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """``torch.rand(1).item()``, ``torch.zeros(3).long().tolist()``: a Python value at once."""
    at: ast.AST = node
    while isinstance(up := parents.get(id(at)), ast.Attribute) and up.value is at:
        if up.attr in _READ_BACK:
            return True
        call = parents.get(id(up))
        if not isinstance(call, ast.Call) or call.func is not up:
            return False
        at = call
    return False


def _filled_in_a_loop(name: str, method: ast.FunctionDef) -> bool:
    """Whether ``name[...] = ...`` (or ``name[i][j] = ...``) is written in a loop of ``method``."""
    for loop in ast.walk(method):
        if not isinstance(loop, ast.For | ast.While):
            continue
        for stmt in ast.walk(loop):
            if isinstance(stmt, ast.Assign | ast.AugAssign):
                for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                    while isinstance(target, ast.Subscript):
                        target = target.value
                        if isinstance(target, ast.Name) and target.id == name:
                            return True
    return False
