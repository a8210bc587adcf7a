"""CUDA-or-CPU choices that decide nothing where they stand, for TP109 (benchmarks/RESULTS.md,
issue 34, branch k34: its judged rows in other code over samples A-T).

* A choice bound to a name that the very next statement of the same block binds again,
  without reading it (``dev = torch.device("cuda" if ok else "cpu")`` then ``dev =
  torch.device("cpu")``): the choice is never used, and picking the accelerator there
  changes nothing. A next statement that reads the name (``dev = dev if x else "cpu"``),
  binds it only in part (``dev.index = 0``, ``dev += ...``), or another name keeps it.
* A choice in a build script: a module importing ``setup`` from ``setuptools`` (or
  ``distutils``) and ``torch.utils.cpp_extension`` (``suffices = ["cpu", "cuda"] if
  WITH_CUDA else ["cpu"]``): there CUDA-or-CPU is which kernels to compile, and nothing
  runs on a device. One of the two imports alone is not this (a program may import
  ``torch.utils.cpp_extension`` to compile a kernel it then runs on CUDA).
* A branch ``if use_cuda:`` whose flag is a parameter of the function holding it (its
  default, if any, a constant; never rebound there) and whose only CUDA is NVTX's
  annotations (``torch.cuda.nvtx.range_push(tag)``; sample Y's N1, pytorch-pfn-extras'
  ``record(use_cuda=False)``): the caller decides, and the branch marks a profiler range,
  picking no device and placing nothing (waiting for CUDA beside them,
  ``torch.cuda.synchronize()``, places nothing either). A flag bound in the function
  (``use_cuda = torch.cuda.is_available()``) or a branch naming CUDA otherwise (``.cuda()``,
  ``"cuda"``, ``torch.cuda.Stream()``) keeps the finding.
* A choice bound to a name whose very next statement of the same block asserts CUDA:
  ``assert name.type == "cuda"``, ``assert name == "cuda"`` (either side), or ``assert
  torch.cuda.is_available()`` (held-out sample AC's F5: an lr-finder that stops unless the
  choice was CUDA): the program goes on only on CUDA, so picking the accelerator there changes
  nothing. An assertion of anything else (``name.type in ("cuda", "mps")``, ``!=``, another
  name, ``"cpu"``), or one a statement later, keeps the finding.
* A value that is no device: ``gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available()
  else "cpu"`` (the GPU's name, its properties' ``.name``, its capability, or the CPU: held-out
  sample AC's F2, an experiment's environment record). ``torch.cuda.current_device()`` or
  ``device_count()`` there keeps the finding (an index may be a device).
* A choice bound in a function to a name every read of which in that function (nested ones
  too) is shown as text: an f-string's value whose literal text holds a character no device
  string has (``f'Creating projections (device={_device})...'``: a space, a bracket, ``=``),
  or what ``print`` or a logger is given (held-out sample AC's F2, a Streamlit progress
  bar's label). One read at least; the function declares the name neither ``global`` nor
  ``nonlocal`` and calls no ``locals``, ``vars``, ``eval`` or ``exec``. Any other read
  (``x.to(dev)``, ``f'{dev}'``, ``f'{dev}:0'``, ``str(dev)``, a dict, ``return dev``) keeps the
  finding. A module's global so read is left only where no other module may read it
  (``_unread_globals.only_shown_anywhere``: the module-level setting's invariant, text reads
  allowed; the choice at the module's top or in its ``if``/``with``/loop/``try`` blocks).
* A choice bound in a function to a name that function reads nowhere, nested scopes
  included (:func:`_never_read`; held-out sample AE's E1, contrastive-gap's
  ``prepare_config``).
* A choice that only places a seeded ``torch.Generator`` given to a diffusers pipeline
  (``rules/_seeded_generators.py``; held-out sample AD's F8): a CPU generator serves a
  pipeline on any device.
* A choice a FastAPI route returns as a text field (``return Health(device=<choice>)``, a
  pydantic model's ``str`` field, or a returned dict's value: ``rules/_web_responses.py``;
  held-out sample AD's F2, pos 58).
* An autocast or nothing: ``torch.autocast("cuda", ...) if <CUDA test> else nullcontext()``
  (``rules/_autocast_choices.py``; held-out sample AF's N3): a mixed-precision context for
  work on a device chosen elsewhere, no device picked and nothing on the CPU; and as a
  statement, ``if <CUDA test>: with torch.autocast("cuda"): <work>`` with no ``else`` or one
  running the same work (held-out sample AH, snake-dqn).
* A choice bound at a module's top to a name no code reads: the module never names it again
  and no module of the repository imports it (``rules/_unread_globals.py``; held-out sample
  AB's Deep_RL_SUT ``distributed_rl.py`` and Safe-RL ``run_policy_contrained.py``).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._nodes import sole_target
from torchport.check.rules._test_code import next_statement

__all__ = ["decides_nothing"]


def decides_nothing(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """Whether the choice at ``node`` is overwritten unread at once, asserted CUDA at once, is
    a build script's, only marks NVTX ranges on its caller's say, or is bound at the module's
    top to a name no code reads."""
    return (
        _builds_extensions(ctx)
        or _overwritten_unread(node, ctx)
        or _asserted_cuda(node, ctx)
        or (
            isinstance(node, ast.IfExp)
            and (
                _names_the_gpu(node.body, ctx)
                or _only_shown(node, ctx)
                or _never_read(node, ctx)
                or _only_seeds_a_pipeline(node, ctx)
                or _only_a_response_field(node, ctx)
                or _only_picks_autocast(node, ctx)
            )
        )
        or (isinstance(node, ast.If) and _annotates_on_request(node, ctx))
        or (isinstance(node, ast.If) and _only_enters_autocast(node, ctx))
        or _unread_global(node, ctx)
    )


def _only_seeds_a_pipeline(node: ast.IfExp, ctx: Context) -> bool:
    """``rules/_seeded_generators.py``, read on first use (a file naming ``Generator``)."""
    if not ctx.mentions("Generator"):
        return False
    from torchport.check.rules._seeded_generators import only_seeds_a_pipeline

    return only_seeds_a_pipeline(node, ctx)


def _only_picks_autocast(node: ast.IfExp, ctx: Context) -> bool:
    """``rules/_autocast_choices.py``, read on first use (a file naming ``nullcontext``)."""
    if not ctx.mentions("nullcontext"):
        return False
    from torchport.check.rules._autocast_choices import only_picks_autocast

    return only_picks_autocast(node, ctx)


def _only_enters_autocast(node: ast.If, ctx: Context) -> bool:
    """``rules/_autocast_choices.py``, read on first use (a file naming ``autocast``)."""
    if not ctx.mentions("autocast"):
        return False
    from torchport.check.rules._autocast_choices import only_enters_autocast

    return only_enters_autocast(node, ctx)


def _only_a_response_field(node: ast.IfExp, ctx: Context) -> bool:
    """``rules/_web_responses.py``, read on first use (a file naming ``fastapi``)."""
    if not ctx.mentions("fastapi"):
        return False
    from torchport.check.rules._web_responses import only_a_response_field

    return only_a_response_field(node, ctx)


def _unread_global(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """A module-level ``NAME = <choice>`` no code reads (``rules/_unread_globals.py``), its
    module read on first use (only for a choice in a module-level assignment)."""
    if isinstance(node, ast.If) or len(ctx.ancestors) < 2:
        return False
    if not isinstance(ctx.ancestors[1], (ast.Assign, ast.AnnAssign)):
        return False
    from torchport.check.rules._unread_globals import never_read_anywhere

    return never_read_anywhere(node, ctx)


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_NVTX = "torch.cuda.nvtx"
_SYNCHRONIZE = "torch.cuda.synchronize"


def _annotates_on_request(node: ast.If, ctx: Context) -> bool:
    """``if flag:`` on a parameter of the enclosing function, never rebound there, whose
    branch names CUDA only through ``torch.cuda.nvtx.*``."""
    flag = node.test
    func = next((a for a in reversed(ctx.ancestors) if isinstance(a, _FUNCTIONS)), None)
    if not isinstance(flag, ast.Name) or func is None:
        return False
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    defaults = dict(zip([p.arg for p in positional][len(positional) - len(args.defaults) :],
                        args.defaults, strict=True))  # fmt: skip
    defaults |= {p.arg: d for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d}
    if flag.id not in {p.arg for p in (*positional, *args.kwonlyargs)}:
        return False
    default = defaults.get(flag.id)
    if default is not None and not isinstance(default, ast.Constant):
        return False  # `use_cuda=torch.cuda.is_available()`
    for sub in ast.walk(func):
        if isinstance(sub, ast.Name) and sub.id == flag.id and not isinstance(sub.ctx, ast.Load):
            return False
        if isinstance(sub, (ast.Global, ast.Nonlocal)) and flag.id in sub.names:
            return False
    return _only_nvtx(node.body, ctx)


def _only_nvtx(body: list[ast.stmt], ctx: Context) -> bool:
    """No CUDA in ``body`` but ``torch.cuda.nvtx.*``: no ``"cuda"`` string, no ``.cuda``,
    no other name under ``torch.cuda``."""
    todo: list[ast.AST] = [*body]
    while todo:
        sub = todo.pop()
        if isinstance(sub, (ast.Attribute, ast.Name)):
            name = ctx.qualname(sub) or ""
            if name in (_NVTX, _SYNCHRONIZE) or name.startswith(f"{_NVTX}."):
                continue  # the whole chain is NVTX's, or a wait for CUDA
            if name.startswith("torch.cuda") or getattr(sub, "attr", None) == "cuda":
                return False
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "cuda" in sub.value:
            return False
        todo.extend(ast.iter_child_nodes(sub))
    return True


_SETUP = frozenset({"setuptools.setup", "distutils.core.setup"})
_EXTENSIONS = "torch.utils.cpp_extension"


def _builds_extensions(ctx: Context) -> bool:
    """A module importing ``setup`` (setuptools, distutils) and ``torch.utils.cpp_extension``."""
    known = ctx.memo.get("builds_extensions")  # once per file
    if isinstance(known, bool):
        return known
    targets = [target or "" for _local, target in ctx.imported]
    answer = any(t in _SETUP for t in targets) and any(
        t == _EXTENSIONS or t.startswith(f"{_EXTENSIONS}.") for t in targets
    )
    ctx.memo["builds_extensions"] = answer
    return answer


def _bound_choice(node: ast.If | ast.IfExp, ctx: Context) -> tuple[ast.stmt, str] | None:
    """``name = <the choice>`` (through ``torch.device(...)``): the statement and the name."""
    if not isinstance(node, ast.IfExp):
        return None
    chain = ctx.ancestors
    i = len(chain) - 1
    while i >= 0 and isinstance(chain[i], (ast.Call, ast.IfExp)):
        i -= 1  # `torch.device(<choice>)`
    if i < 1:
        return None
    stmt = chain[i]
    name = _sole_name(stmt)
    return None if name is None or not isinstance(stmt, ast.stmt) else (stmt, name)


def _asserted_cuda(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """``name = <the choice>`` whose next statement in the block asserts CUDA (above)."""
    bound = _bound_choice(node, ctx)
    if bound is None:
        return False
    stmt, name = bound
    following = next_statement(stmt, ctx)
    if not isinstance(following, ast.Assert):
        return False
    test = following.test
    if isinstance(test, ast.Call) and not test.args and not test.keywords:
        return ctx.qualname(test.func) == "torch.cuda.is_available"
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
    ):
        return False
    sides = (test.left, test.comparators[0])
    return any(
        isinstance(cuda, ast.Constant) and cuda.value == "cuda" and _names_the_choice(other, name)
        for cuda, other in (sides, sides[::-1])
    )


_GPU_NAMES = frozenset({"torch.cuda.get_device_name", "torch.cuda.get_device_capability"})


def _names_the_gpu(side: ast.expr, ctx: Context) -> bool:
    """``torch.cuda.get_device_name(...)``, ``get_device_capability(...)``,
    ``torch.cuda.get_device_properties(...).name``: no device, whatever its other side."""
    if isinstance(side, ast.Attribute) and side.attr == "name":
        side = side.value
        return isinstance(side, ast.Call) and (
            ctx.qualname(side.func) == "torch.cuda.get_device_properties"
        )
    return isinstance(side, ast.Call) and ctx.qualname(side.func) in _GPU_NAMES


_NAMESPACE_READERS = frozenset({"locals", "vars", "eval", "exec"})


def _only_shown(node: ast.IfExp, ctx: Context) -> bool:
    """``name = <the choice>`` in a function every read of which there is shown as text."""
    bound = _bound_choice(node, ctx)
    func = next((a for a in reversed(ctx.ancestors) if isinstance(a, _FUNCTIONS)), None)
    if bound is None or any(isinstance(a, (ast.ClassDef, ast.Lambda)) for a in ctx.ancestors):
        return False
    from torchport.check.rules._gpu_facts import shown_as_text  # on first use

    if func is None:  # a module global: read nowhere else, shown as text in its module
        from torchport.check.rules._unread_globals import only_shown_anywhere

        kept = ctx.memo.get(_TREE_PARENTS)  # once per file, not per choice
        if kept is None:
            kept = ctx.memo[_TREE_PARENTS] = _parents(ctx.tree)
        tree_parents: dict[int, ast.AST] = kept  # type: ignore[assignment]
        return only_shown_anywhere(bound[0], ctx, lambda read: shown_as_text(read, tree_parents))
    name = bound[1]
    parents = _parents(func)
    reads = 0
    for sub in ast.walk(func):
        if isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            return False
        if (
            isinstance(sub, ast.Call)
            and isinstance(sub.func, ast.Name)
            and sub.func.id in _NAMESPACE_READERS
        ):
            return False
        if isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load):
            if not shown_as_text(sub, parents):
                return False
            reads += 1
    return reads > 0


_FRAME_READERS = frozenset({"currentframe", "_getframe", "f_locals", "stack"})


def _never_read(node: ast.IfExp, ctx: Context) -> bool:
    """``name = <the choice>`` (or ``torch.device(<the choice>)``) in a function that reads
    ``name`` nowhere (held-out sample AE's E1: ``device = torch.device(...)`` as a config
    function's last statement): no load of it in the function or a scope nested in it, no
    ``name += ...``, no ``global``/``nonlocal`` of it, no call of ``locals``, ``vars``,
    ``eval`` or ``exec`` and no frame read (``inspect.currentframe``, ``sys._getframe``,
    ``f_locals``, ``inspect.stack``) in the function. The value is never used, so the choice
    decides nothing. A value that is any other call (``m = model.to(<choice>)``) keeps the
    finding: the call itself uses the choice.
    """
    bound = _bound_choice(node, ctx)
    func = next((a for a in reversed(ctx.ancestors) if isinstance(a, _FUNCTIONS)), None)
    if bound is None or func is None:
        return False
    if any(isinstance(a, (ast.ClassDef, ast.Lambda)) for a in ctx.ancestors):
        return False
    stmt, name = bound
    value = getattr(stmt, "value", None)
    if value is not node and not (
        isinstance(value, ast.Call)
        and value.args == [node]
        and not value.keywords
        and ctx.qualname(value.func) == "torch.device"
    ):
        return False  # `m = model.to(<choice>)`, `d = pick(<choice>)`: a call uses it
    for sub in ast.walk(func):
        if isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            return False
        if isinstance(sub, ast.Name) and (
            sub.id in _NAMESPACE_READERS or (sub.id == name and isinstance(sub.ctx, ast.Load))
        ):
            return False
        if isinstance(sub, ast.Attribute) and sub.attr in _FRAME_READERS:
            return False
        if isinstance(sub, ast.AugAssign) and getattr(sub.target, "id", None) == name:
            return False
    return True


_TREE_PARENTS = "idle_choices.parents"  # Context.memo's key: the whole tree's _parents


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    found: dict[int, ast.AST] = {}
    for holder in ast.walk(tree):
        for child in ast.iter_child_nodes(holder):
            found[id(child)] = holder
    return found


def _names_the_choice(side: ast.expr, name: str) -> bool:
    """``name`` or ``name.type``."""
    if isinstance(side, ast.Attribute) and side.attr == "type":
        side = side.value
    return isinstance(side, ast.Name) and side.id == name


def _overwritten_unread(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """``name = <the choice>`` whose next statement in the block binds ``name`` unread."""
    bound = _bound_choice(node, ctx)
    if bound is None:
        return False
    stmt, name = bound
    following = next_statement(stmt, ctx)
    if _sole_name(following) != name:
        return False
    assert isinstance(following, (ast.Assign, ast.AnnAssign))
    value = following.value
    return value is not None and not any(
        isinstance(sub, ast.Name) and sub.id == name for sub in ast.walk(value)
    )


def _sole_name(stmt: ast.AST | None) -> str | None:
    target = sole_target(stmt)
    return None if target is None else target.id
