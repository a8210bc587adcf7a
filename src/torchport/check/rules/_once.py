"""What runs once a run, for the rules on tensors made on the host and moved (TP106, TP905).

A copy made once costs nothing that matters; the same copy per step does. A module's
own statements outside loops, a function a script calls only from its top level, and a
value an object makes on first use and keeps on ``self`` run once: TP106 leaves them,
and TP905 (off by default) reports only them.
"""

from __future__ import annotations

import ast
import weakref

from torchport.check._context import Context

__all__ = ["runs_once"]

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _in_test_code(ctx: Context) -> bool:
    """Code a test runner collects (``rules/_test_code.py``): any function of a file in a
    ``tests`` folder, a ``test*`` function (or one nested in it) of a pytest/unittest file."""
    from torchport.check.rules._test_code import collected_by_a_test_runner  # on first use

    return collected_by_a_test_runner(ctx)


def _fixed_count(comprehension: ast.AST) -> bool:
    """Whether every ``for`` of a comprehension (or a ``for`` statement) runs over ``range``
    of numbers written out."""
    generators = getattr(comprehension, "generators", None) or [comprehension]
    return bool(generators) and all(
        isinstance(g.iter, ast.Call)
        and isinstance(g.iter.func, ast.Name)
        and g.iter.func.id == "range"
        and not g.iter.keywords
        and all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in g.iter.args)
        for g in generators
    )


def _repeated_as_set_up(node: ast.AST, ctx: Context) -> bool:
    """Whether, in test code, only a test's set-up repeats ``node`` within its function.

    No loop at all; or only loops that make the test's inputs: a comprehension over
    ``range(...)`` (``[torch.ones(n).to(device) for _ in range(n_epochs - 2)]``: a list
    of inputs, made once), a ``for`` over the devices the test runs on (``for
    metric_device in metric_devices:``: once per device) and a ``for`` over ``range`` of
    numbers written out (``for _ in range(5):``: a few random trials, each its inputs;
    sample N, torchcde). A ``while``, or a ``for`` over anything else (steps, batches,
    ``range(n_steps)``), repeats work: not set-up.
    """
    child = node
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, _SCOPES):
            return True
        if isinstance(outer, ast.While):
            if not any(s is child for s in outer.orelse):
                return False
        elif isinstance(outer, (ast.For, ast.AsyncFor)):
            repeated = child is not outer.iter and child is not outer.target
            if repeated and not any(s is child for s in outer.orelse):
                target = outer.target
                if not (
                    (isinstance(target, ast.Name) and "device" in target.id.lower())
                    or _fixed_count(outer)  # `for _ in range(5):` random trials' inputs
                ):
                    return False
        elif isinstance(outer, _COMPREHENSIONS) and not _over_range(outer):
            first = outer.generators[0]
            if child is not first:  # (the first iterable runs once)
                return False
        child = outer
    return True


def _over_range(comprehension: ast.AST) -> bool:
    """Whether every ``for`` of a comprehension runs over ``range(...)``: a count of inputs."""
    generators = getattr(comprehension, "generators", ())
    return bool(generators) and all(
        isinstance(g.iter, ast.Call)
        and isinstance(g.iter.func, ast.Name)
        and g.iter.func.id == "range"
        for g in generators
    )


def runs_once(node: ast.AST, ctx: Context) -> bool:
    """Whether ``node`` runs once a run (TP106: a one-off copy saves nothing; TP905 reports it).

    Outside every function, loop and comprehension: a module's own statements (and its
    classes' bodies) run once, when the module is imported or run; so does a module-level
    comprehension over ``range`` of numbers written out (a fixed set of dummy inputs). In
    a script (``if __name__ == "__main__":`` at module level): a module-level function the
    script calls
    only at its top level, outside loops, and names nowhere else (a test script's
    ``check_zero_offset()``). A function called from another function, or never called in
    the file, is not known to run once (it may be imported and called per step); nor is a
    function of a module without that test.
    Anywhere, a value an object makes once and keeps (``if not hasattr(self, "queue"):
    self.queue = ...``, ``if self.buf is None: self.buf = ...``) runs once per object; so
    does a module's ``__init__`` (a class deriving from ``Module``: built once, used per
    step) and a private method only its ``__init__`` calls (a shape probe); so do those
    of a class that owns a model (its ``__init__`` builds an optimizer or loads weights:
    an agent, a trainer) unless the file makes one in a loop. A fallback under ``if
    torch.isnan(x).any():`` runs when values go bad, not per step. A function that runs
    a gradient check (``gradcheck(...)``) is a test: its statements outside loops run once;
    so do those of any function in test code (TP109's standard: a file in a ``tests``
    folder, helpers included; a ``test*`` function of a file importing ``pytest``).
    """
    if _memoised_on_self(ctx) or _building_a_module(ctx) or _when_values_go_bad(ctx):
        return True
    functions = [a for a in ctx.ancestors if isinstance(a, _FUNCTIONS)]
    if functions and ctx.loop_of(node) is None and _checks_gradients(functions[-1]):
        return True  # a gradient check: a test, run by hand, never per step
    if functions and _in_test_code(ctx) and _repeated_as_set_up(node, ctx):
        return True  # test code runs once per test run: its inputs are set-up
    if not functions:
        # a module's (or a class body's) own statements run once, on import or as a script,
        # unless a loop or a comprehension repeats them; a comprehension over a fixed
        # count (`[torch.randn(1, 3).to(device) for _ in range(100)]`: dummy inputs) is
        # set-up made once, not work repeated per step
        return not any(
            isinstance(a, _LOOPS) or (isinstance(a, _COMPREHENSIONS) and not _fixed_count(a))
            for a in ctx.ancestors
        )
    if not _is_script(ctx.tree) or ctx.loop_of(node) is not None:
        return False
    scopes = [a for a in ctx.ancestors if isinstance(a, _SCOPES)]
    function = scopes[0]
    return (
        len(scopes) == 1
        and isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(s is function for s in ctx.tree.body)
        and function.name in _called_once(ctx.tree)
    )


def _building_a_module(ctx: Context) -> bool:
    """In ``__init__`` of a ``Module`` subclass or of a class owning a model, or in a private
    method only that calls."""
    functions = [a for a in ctx.ancestors if isinstance(a, _FUNCTIONS)]
    if len(functions) != 1 or not isinstance(functions[0], ast.FunctionDef):
        return False
    method = functions[0]
    owner = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.ClassDef)), None)
    if owner is None or not any(s is method for s in owner.body):
        return False
    if not any(_base_name(b) == "Module" for b in owner.bases) and not _owns_a_model(owner, ctx):
        return False
    if method.name == "__init__":
        return True
    if not method.name.startswith("_") or method.name.startswith("__"):
        return False  # a public method may be called from anywhere, per step
    uses = [
        (m.name, n)
        for m in owner.body
        if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(m)
        if isinstance(n, ast.Attribute) and n.attr == method.name
    ]
    return bool(uses) and all(name == "__init__" for name, _ in uses)


def _owns_a_model(owner: ast.ClassDef, ctx: Context) -> bool:
    """Whether ``owner``'s ``__init__`` builds an optimizer or loads weights (``optim.Adam(
    net.parameters())``, ``net.load_state_dict(...)``, ``torch.load(...)``), and the file
    makes no instance in a loop or a comprehension: an agent or a trainer, made once a run
    and used per step, not a batch or a sample made per step."""
    known = _OWNERS.get(owner)  # once per class: every creation in its methods asks
    if known is None:
        init = next(
            (m for m in owner.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"),
            None,
        )
        known = init is not None and any(_trains_or_loads(n, ctx) for n in ast.walk(init))
        known = known and not _made_in_a_loop(owner.name, ctx.tree)
        _OWNERS[owner] = known
    return known


def _trains_or_loads(node: ast.AST, ctx: Context) -> bool:
    """``x.parameters()``, ``x.load_state_dict(...)``, ``torch.load(...)``, ``optim.X(...)``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    if node.func.attr in ("parameters", "named_parameters", "load_state_dict"):
        return True
    name = ctx.qualname(node.func) or ""
    return name == "torch.load" or name.startswith("torch.optim.")


def _made_in_a_loop(name: str, tree: ast.Module) -> bool:
    """Whether the file calls ``name(...)`` inside a loop or a comprehension."""
    for node in ast.walk(tree):
        if isinstance(node, _LOOPS + _COMPREHENSIONS) and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
            for n in ast.walk(node)
        ):
            return True
    return False


def _checks_gradients(function: ast.AST) -> bool:
    """Whether ``function`` runs ``gradcheck``/``gradgradcheck`` (``torch.autograd.gradcheck``)."""
    known = _GRADIENT_CHECKS.get(function)  # once per function
    if known is None:
        known = _GRADIENT_CHECKS[function] = any(
            isinstance(n, ast.Call)
            and (getattr(n.func, "id", None) or getattr(n.func, "attr", None))
            in ("gradcheck", "gradgradcheck")
            for n in ast.walk(function)
        )
    return known


def _base_name(base: ast.expr) -> str | None:
    """``Module`` of ``nn.Module``, ``torch.nn.Module`` or ``Module``."""
    if isinstance(base, ast.Attribute):
        return base.attr
    return base.id if isinstance(base, ast.Name) else None


def _when_values_go_bad(ctx: Context) -> bool:
    """In the body of an ``if`` that tests ``isnan``/``isinf`` (a fallback for bad values)."""
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, _SCOPES):
            return False
        if (
            isinstance(outer, ast.If)
            and any(child is s for s in outer.body)
            and any(_names_a_bad_value_test(n) for n in ast.walk(outer.test))
        ):
            return True
        child = outer
    return False


def _names_a_bad_value_test(node: ast.AST) -> bool:
    """``isnan`` / ``isinf`` (``torch.isnan``, ``x.isnan()``, ``math.isinf``)."""
    if isinstance(node, ast.Attribute):
        return node.attr in ("isnan", "isinf")
    return isinstance(node, ast.Name) and node.id in ("isnan", "isinf")


def _memoised_on_self(ctx: Context) -> bool:
    """In the body of ``if not hasattr(self, "a"):`` or ``if self.a is None:`` that sets
    ``self.a``, in a class that never drops ``self.a`` again: made on the object's first
    call and kept (a parameter tested for None is not: the caller may leave it out on
    every call)."""
    child: ast.AST | None = None
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, _SCOPES):
            return False
        if isinstance(outer, ast.If) and any(child is s for s in outer.body):
            kept = _kept_on_self(outer.test)
            if kept is not None and any(
                isinstance(t, ast.Attribute)
                and t.attr == kept
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                for s in outer.body
                if isinstance(s, ast.Assign)
                for t in s.targets
            ):
                return not _reset_elsewhere(kept, ctx)
        child = outer
    return False


def _reset_elsewhere(attr: str, ctx: Context) -> bool:
    """Whether the class may drop ``self.attr`` again outside ``__init__`` (``self.hidden =
    None`` per episode, ``del self.attr``): then the guarded value is made again each time."""
    owner = next((a for a in reversed(ctx.ancestors) if isinstance(a, ast.ClassDef)), None)
    if owner is None:
        return True
    for method in owner.body:
        if not isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "delattr":
                return True
            if isinstance(node, ast.Delete) and any(_on_self(t, attr) for t in node.targets):
                return True
            if (
                method.name != "__init__"
                and isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value is None
                and any(_on_self(t, attr) for t in node.targets)
            ):
                return True
    return False


def _on_self(target: ast.expr, attr: str) -> bool:
    return (
        isinstance(target, ast.Attribute)
        and target.attr == attr
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    )


def _kept_on_self(test: ast.expr) -> str | None:
    """``a`` of ``not hasattr(self, "a")`` or ``self.a is None``, else None."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        call = test.operand
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Name)
            and call.func.id == "hasattr"
            and len(call.args) == 2
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == "self"
            and isinstance(call.args[1], ast.Constant)
            and isinstance(call.args[1].value, str)
        ):
            return call.args[1].value
        return None
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, ast.Attribute)
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == "self"
    ):
        return test.left.attr
    return None


def _called_once(tree: ast.Module) -> frozenset[str]:
    """The module-level functions a script calls at its top level only, outside loops."""
    known = _ONCE.get(tree)
    if known is not None:
        return known
    defs = {s.name for s in tree.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
    called: set[str] = set()
    at_top: set[int] = set()  # the Name nodes that are such calls' functions

    # A stack, not a recursive closure: that would be a cycle left for the collector.
    stack: list[tuple[ast.AST, bool]] = [(tree, True)]
    while stack:
        node, top = stack.pop()
        for child in ast.iter_child_nodes(node):
            if top and isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                called.add(child.func.id)
                at_top.add(id(child.func))
            inner = top and not isinstance(child, _SCOPES + _LOOPS + _COMPREHENSIONS)
            stack.append((child, inner))
    elsewhere = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in at_top}
    found = frozenset((called & defs) - elsewhere)
    _ONCE[tree] = found
    return found


def _is_script(tree: ast.Module) -> bool:
    """``if __name__ == "__main__":`` at module level: run, not imported."""
    return any(
        isinstance(s, ast.If)
        and isinstance(s.test, ast.Compare)
        and isinstance(s.test.left, ast.Name)
        and s.test.left.id == "__name__"
        for s in tree.body
    )


_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_ONCE: weakref.WeakKeyDictionary[ast.Module, frozenset[str]] = weakref.WeakKeyDictionary()
_OWNERS: weakref.WeakKeyDictionary[ast.ClassDef, bool] = weakref.WeakKeyDictionary()
_GRADIENT_CHECKS: weakref.WeakKeyDictionary[ast.AST, bool] = weakref.WeakKeyDictionary()
