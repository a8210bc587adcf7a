"""An early return on an instance flag bound once to a device-type test, for TP101.

Sample Y's N2 (judged noise): nnue-pytorch's ``data_loader/dataset.py`` sets
``self.prefetch_to_device = self.device is not None and self.device.type == "cuda"`` in
``__init__``, and ``_resolve_prefetch_device`` opens with ``if not self.prefetch_to_device:
return None`` before ``torch.device("cuda", torch.cuda.current_device())``: that line runs
only when the caller's device was CUDA. ``semantic/_guards`` reads such a test through a
plain name bound to it (``use_cuda = x.device.type == "cuda"``), not through an attribute,
whose writes may be anywhere.

Left alone only when all of this holds (otherwise the CUDA stays reported):

* the line is in a method (a ``def`` directly in a class) whose own body, before the
  statement holding the line, has ``if not <self>.<flag>: return ...`` (``<self>`` its first
  parameter, the arm that single ``return``);
* the class has one ``__init__``, whose own body (not a branch) assigns ``<self>.<flag> =
  <value>`` once, and the class body binds no ``<flag>`` (a property, a class attribute);
* ``<value>`` where it holds is a device-type test saying CUDA (``semantic/_guards``'
  ``test_guard`` gives ``DEVICE_TYPE``, and ``every_accelerator_arm`` does not hold: not
  ``self.device.type != "cpu"``);
* across the file's repository (``rules/_project_calls``' reading: the tree under the
  nearest ``.git``; none, or the module importable once installed, keeps the finding) nothing
  but that assignment writes any ``.<flag>`` attribute: no other assignment, augmented
  assignment or ``del`` of ``x.<flag>`` for any ``x``, no string spelling the flag
  (``setattr(obj, "<flag>", v)``, a config), no non-Python text file naming it.
"""

from __future__ import annotations

import ast
import os
import re

from torchport.check._context import Context
from torchport.check._listing import remembered
from torchport.check._syntax import parsed_module
from torchport.check.semantic._guards import Guard, every_accelerator_arm, test_guard

__all__ = ["flag_exit_says_cuda"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def flag_exit_says_cuda(node: ast.AST, ctx: Context) -> bool:
    """Whether ``node`` (being checked) runs only past ``if not self.<flag>: return`` with
    ``<flag>`` bound once, in ``__init__``, to a test saying the device is CUDA (above)."""
    chain = [*ctx.ancestors, node]
    for i in range(len(chain) - 2, 0, -1):
        method, cls = chain[i], chain[i - 1]
        if isinstance(method, _FUNCTIONS):
            if not isinstance(cls, ast.ClassDef) or not method.args.args:
                return False
            stmt = chain[i + 1]
            break
    else:
        return False
    me = method.args.args[0].arg
    flags = _exits_before(method.body, stmt, me)
    return any(_bound_to_cuda(cls, flag, ctx) for flag in flags)


def _exits_before(body: list[ast.stmt], stmt: ast.AST, me: str) -> list[str]:
    """The flags of ``if not <me>.<flag>: return ...`` statements of ``body`` before ``stmt``."""
    flags: list[str] = []
    for each in body:
        if each is stmt:
            return flags
        test = getattr(each, "test", None)
        if (
            isinstance(each, ast.If)
            and not each.orelse
            and len(each.body) == 1
            and isinstance(each.body[0], ast.Return)
            and isinstance(test, ast.UnaryOp)
            and isinstance(test.op, ast.Not)
            and isinstance(test.operand, ast.Attribute)
            and isinstance(test.operand.value, ast.Name)
            and test.operand.value.id == me
        ):
            flags.append(test.operand.attr)
    return []  # `stmt` is not in the method's own body


def _bound_to_cuda(cls: ast.ClassDef, flag: str, ctx: Context) -> bool:
    inits = [s for s in cls.body if isinstance(s, _FUNCTIONS) and s.name == "__init__"]
    if len(inits) != 1 or not inits[0].args.args:
        return False
    if any(_binds(s, flag) for s in cls.body if s is not inits[0]):
        return False  # `prefetch = property(...)`, `def prefetch(self)`, a class attribute
    me = inits[0].args.args[0].arg
    values = [
        s.value
        for s in inits[0].body
        if isinstance(s, ast.Assign)
        and len(s.targets) == 1
        and isinstance(s.targets[0], ast.Attribute)
        and s.targets[0].attr == flag
        and isinstance(s.targets[0].value, ast.Name)
        and s.targets[0].value.id == me
    ]
    if len(values) != 1 or every_accelerator_arm(values[0], True):
        return False  # `self.device.type != "cpu"` holds on MPS and XPU too
    if test_guard(values[0], ctx, True) is not Guard.DEVICE_TYPE:
        return False
    return bool(ctx.path) and _written_once(ctx.path, flag)


def _binds(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
        return stmt.name == name
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt))


def _written_once(path: str, flag: str) -> bool:
    """Whether exactly one write of an attribute ``flag`` is in the repository of ``path``."""
    from torchport.check.rules import _project_calls as project  # on first use

    if not os.path.isfile(path):
        return False
    here = os.path.dirname(os.path.abspath(path))
    root = project.repository_of(here)
    if root is None or project.installed_module(here, root):
        return False
    return bool(remembered(project._SEEN, ("writes", root, flag), lambda: _count(root, flag)))


def _count(root: str, flag: str) -> bool:
    from torchport.check.rules import _project_calls as project

    texts = project.repository_texts(root)
    if texts is None:
        return False
    word = re.compile(rb"(?<![\w])" + re.escape(flag.encode()) + rb"(?![\w])")
    writes = 0
    for file, data in texts:
        if flag.encode() not in data or word.search(data) is None:
            continue
        if not file.endswith(".py"):
            return False  # a config or notebook naming it may set it
        try:
            tree = parsed_module(file, data.decode("utf-8", "surrogateescape"))
        except (SyntaxError, ValueError):
            return False
        for sub in ast.walk(tree):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and flag in sub.value:
                return False  # `setattr(obj, "flag", v)`, `__slots__`, a format string
            if _names_otherwise(sub, flag):
                return False  # a class attribute, a keyword (`SimpleNamespace(flag=...)`)
            if isinstance(sub, ast.Attribute) and sub.attr == flag:
                writes += not isinstance(sub.ctx, ast.Load)
            if isinstance(sub, ast.AugAssign) and getattr(sub.target, "attr", None) == flag:
                writes += 1  # (its target is a Store too: counted twice, so never once)
    return writes == 1


def _names_otherwise(node: ast.AST, flag: str) -> bool:
    """``flag`` bound as a plain name, defined, or given as a keyword or parameter."""
    if isinstance(node, ast.Name):
        return node.id == flag and not isinstance(node.ctx, ast.Load)
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return node.name == flag
    if isinstance(node, (ast.keyword, ast.arg)):
        return node.arg == flag
    return False
