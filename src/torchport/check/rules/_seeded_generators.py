"""A CUDA-or-CPU choice that only places a seeded generator handed to a diffusers pipeline.

Held-out sample AD, pos 82 (neural-compressor's Wan example, ``run_inference``): ``gen =
torch.Generator(device="cuda" if torch.cuda.is_available() else "cpu").manual_seed(seed)``,
read only as ``pipe(..., generator=gen)``, judged low (f). Diffusers makes its noise with
``diffusers.utils.torch_utils.randn_tensor``, which draws from a CPU generator on the CPU and
moves the result to the pipeline's device (it refuses only a CUDA generator with a CPU
pipeline): a CPU generator serves a pipeline on MPS or XPU, and picking the accelerator for
the generator changes nothing there. TP109 leaves the choice when all of this holds (any
doubt: reported):

* the choice is the device of ``torch.Generator(...)`` (its first argument or ``device=``),
  maybe seeded in the same expression (``.manual_seed(s)``), and the module imports from
  ``diffusers``;
* that generator is given as ``generator=`` to a call of a pipeline: a name every binding of
  which in the function holding the call (or, bound nowhere there, in the module) is a
  parameter or ``x = <...>.from_pretrained(...)`` (``from_single_file``, ``from_pipe``) or a
  diffusers class called; or an attribute
  (``self.pipe``) that resolves to nothing of torch's; or it is bound to a name in a function
  (``gen = ...``) whose every read there is such a ``generator=`` or a statement
  ``gen.manual_seed(s)``, one read at least, the function declaring it neither ``global`` nor
  ``nonlocal`` and calling no ``locals``, ``vars``, ``eval`` or ``exec``.

Kept: a module one of whose functions (or lambdas) takes a parameter named ``generator`` (a
pipeline attribute or parameter called may be the module's own class, drawing with it on its
own device), a generator also given to torch (``torch.randn(..., generator=gen)`` needs a
generator on the tensor's device), to a function or class of the module (it may do the same),
returned or stored (``self.gen = gen``), a module-level generator (another module may import
it), and a module importing nothing from diffusers. Not seen from the module: a pipeline (a
community one, another module's class) that draws with the generator on its own device
instead of calling ``randn_tensor``.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context

__all__ = ["only_seeds_a_pipeline"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOADERS = frozenset({"from_pretrained", "from_single_file", "from_pipe"})
_NAMESPACE_READERS = frozenset({"locals", "vars", "eval", "exec"})


def only_seeds_a_pipeline(node: ast.IfExp, ctx: Context) -> bool:
    """Whether the choice ``node`` only places a generator a diffusers pipeline is given."""
    chain = list(ctx.ancestors)
    if chain and isinstance(chain[-1], ast.keyword):
        chain.pop()  # `device=<the choice>`
    if len(chain) < 3 or not _generator_device(node, chain[-1], ctx):
        return False
    if not any((target or "").startswith("diffusers") for _, target in ctx.imported):
        return False
    if any(
        isinstance(a, ast.arg) and a.arg == "generator" for a in ast.walk(ctx.tree)
    ):  # the module's own code takes a generator: a pipeline called may be its own
        return False
    made, i = chain[-1], len(chain) - 1
    seed = chain[i - 1]
    if isinstance(seed, ast.Attribute) and seed.attr == "manual_seed" and i >= 3:
        call = chain[i - 2]
        if isinstance(call, ast.Call) and call.func is seed:
            made, i = call, i - 2
    holder = chain[i - 1]
    func = next((a for a in reversed(chain) if isinstance(a, _FUNCTIONS)), None)
    if isinstance(holder, ast.keyword):
        scope = ctx.tree if func is None else func
        return holder.arg == "generator" and _pipeline(chain[i - 2], scope, ctx)
    if not (isinstance(holder, ast.Assign) and holder.value is made and func is not None):
        return False
    if len(holder.targets) != 1 or not isinstance(holder.targets[0], ast.Name):
        return False
    return _read_only_as_seeds(holder.targets[0].id, func, ctx)


def _generator_device(node: ast.IfExp, call: ast.AST, ctx: Context) -> bool:
    """``node`` is the device of ``call``, a ``torch.Generator(...)``."""
    if not isinstance(call, ast.Call) or ctx.qualname(call.func) != "torch.Generator":
        return False
    return (bool(call.args) and call.args[0] is node) or any(
        k.arg == "device" and k.value is node for k in call.keywords
    )


def _pipeline(call: ast.AST | None, scope: ast.AST, ctx: Context) -> bool:
    """``call`` calls a pipeline (the module docstring); ``scope``: the function holding it."""
    if not isinstance(call, ast.Call):
        return False
    callee = call.func
    if isinstance(callee, ast.Attribute):
        name = ctx.qualname(callee)
        return name is None or name.startswith("diffusers.")
    if not isinstance(callee, ast.Name):
        return False
    here = _bindings(scope, callee.id, ctx)
    if here is None or here:
        return bool(here)
    return bool(_bindings(ctx.tree, callee.id, ctx))  # a global: bound at the module


def _bindings(scope: ast.AST, name: str, ctx: Context) -> int | None:
    """How many times ``scope`` binds ``name`` as a parameter or to a loaded pipeline; None
    when it binds it any other way (a call of something else, a loop, a ``def``, an
    import)."""
    assigned = {id(t) for t in _assigned_names(scope)}
    bound = 0
    for sub in ast.walk(scope):
        if isinstance(sub, ast.arg) and sub.arg == name:
            bound += 1
        elif isinstance(sub, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in sub.targets
        ):
            if len(sub.targets) != 1 or not _loads_a_pipeline(sub.value, ctx):
                return None
            bound += 1
        elif isinstance(sub, ast.Name) and sub.id == name and not isinstance(sub.ctx, ast.Load):
            if id(sub) not in assigned:
                return None  # `for pipe in ...`, `with ... as pipe`, `del pipe`
        elif isinstance(sub, (*_FUNCTIONS, ast.ClassDef)) and sub.name == name:
            return None  # the module's own function or class
        elif isinstance(sub, ast.alias) and (sub.asname or sub.name) == name:
            return None  # an import (a pipeline class is called to build one, not to draw)
        elif isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            return None
    return bound


def _assigned_names(tree: ast.AST) -> list[ast.Name]:
    return [
        t
        for sub in ast.walk(tree)
        if isinstance(sub, ast.Assign) and len(sub.targets) == 1
        for t in sub.targets
        if isinstance(t, ast.Name)
    ]


def _loads_a_pipeline(value: ast.expr, ctx: Context) -> bool:
    """``<...>.from_pretrained(...)`` (or another loader), or a diffusers class called."""
    if not isinstance(value, ast.Call):
        return False
    if isinstance(value.func, ast.Attribute) and value.func.attr in _LOADERS:
        return True
    return (ctx.qualname(value.func) or "").startswith("diffusers.")


def _read_only_as_seeds(name: str, func: ast.AST, ctx: Context) -> bool:
    """Every read of ``name`` in ``func`` is ``generator=`` of a pipeline's call or a
    statement ``name.manual_seed(...)``; one at least."""
    parents: dict[int, ast.AST] = {}
    for holder in ast.walk(func):
        for child in ast.iter_child_nodes(holder):
            parents[id(child)] = holder
    reads = 0
    for sub in ast.walk(func):
        if isinstance(sub, (ast.Global, ast.Nonlocal)) and name in sub.names:
            return False
        if isinstance(sub, ast.Call) and getattr(sub.func, "id", None) in _NAMESPACE_READERS:
            return False
        if not (isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load)):
            continue
        reads += 1
        up = parents.get(id(sub))
        if isinstance(up, ast.keyword) and up.arg == "generator":
            if not _pipeline(parents.get(id(up)), func, ctx):
                return False
            continue
        call = parents.get(id(up))
        if not (
            isinstance(up, ast.Attribute)
            and up.attr == "manual_seed"
            and isinstance(call, ast.Call)
            and call.func is up
            and isinstance(parents.get(id(call)), ast.Expr)
        ):
            return False
    return reads > 0
