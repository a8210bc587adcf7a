"""Which expressions of a file build or hold an ``nn.Module``: the port's knowledge of models.

``torchport port`` moves the model to the device where it is built, so it must
know which classes are modules (subclasses of ``nn.Module``, directly or through
other classes of the file), which calls build one (``Net()``, ``nn.Linear(..)``,
``torchvision.models.resnet18()``, ``AutoModel.from_pretrained(..)``), which
functions return one (``def build(): return Net()``), and which calls only wrap
one (``nn.DataParallel``, DDP, ``torch.compile``). Everything here looks at
syntax and import names only; it never imports torch.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

__all__ = [
    "MODEL_METHODS",
    "WRAPPERS",
    "ModelKnowledge",
    "QualName",
    "assignments",
    "changed_after",
    "library_driven",
    "module_classes",
]

# Calls that take a model as their first argument and return a model around it.
WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.compile",
        "torch.jit.script",
    }
)
# Methods of nn.Module that return the module itself.
MODEL_METHODS = frozenset(
    {"to", "cuda", "cpu", "train", "eval", "float", "double", "half", "bfloat16",
     "requires_grad_", "share_memory", "to_empty", "type"}
)  # fmt: skip
# torch.nn sub-packages whose capitalised names are not modules.
_NOT_MODULES = frozenset({"functional", "init", "utils", "attention"})
_NOT_MODULE_NAMES = frozenset({"Parameter", "UninitializedParameter", "Buffer"})
_CONTAINERS = frozenset({"Sequential", "ModuleList", "ModuleDict", "ParameterList"})
_MOVES = frozenset({"to", "cuda", "to_empty"})
_LOSS_TENSORS = frozenset({"weight", "pos_weight", None})  # None: **kwargs
# torchmetrics' public classes are ``nn.Module`` subclasses (``Metric`` and every metric: a
# metric's ``update`` runs on the device the metric was moved to, as a module's ``forward``
# does): those of the package and of its metric packages, as their ``__all__`` lists them
# (torchmetrics 1.9: 321 classes, every one a module). Not ``utilities``' or ``functional``'s
# (enums, exceptions, datasets), nor a name a metric's own file imports.
_METRIC_PACKAGES = frozenset(
    {"audio", "classification", "clustering", "detection", "image", "multimodal", "nominal",
     "regression", "retrieval", "segmentation", "shape", "text", "video", "wrappers"}
)  # fmt: skip
_METRIC_BASES = frozenset(
    {"torchmetrics.metric.Metric", "torchmetrics.collections.MetricCollection"}
)

QualName = Callable[[ast.expr], "str | None"]


def own_build(value: ast.expr | None, name: str) -> ast.Call | None:
    """The ``name(...)`` call ``value`` builds, moved or not: ``GRUmodel(...)``, and
    ``GRUmodel(...).to(device)`` as the port writes it (a port's second round reads it so)."""
    while (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr in _MOVES
    ):
        value = value.func.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == name:
        return value
    return None


def module_classes(classes: list[ast.ClassDef], qualname: QualName) -> set[str]:
    """Names of the classes (of one file) that are ``nn.Module`` subclasses.

    A class is a module when a base is ``torch.nn.Module`` or any capitalised
    ``torch.nn`` or ``torchmetrics`` class (``torchmetrics.Metric``), a base's name
    ends with ``Module`` (``LightningModule``),
    or a base is another module class of the file.
    """
    # Each base is read once: a class is a module by a base of its own (torch.nn's, a
    # `...Module`) or through a module class of the file it names. The classes found
    # through those names are the closure of the first kind (order does not matter).
    found: set[str] = set()
    through: list[tuple[str, set[str]]] = []  # (class, the file's names among its bases)
    for cls in classes:
        named: set[str] = set()
        for base in cls.bases:
            tail = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
            # the tail first: a `...Module` base needs no qualified name (nor the scope map
            # that may take, where the imports alone cannot say what the name is)
            if tail.endswith("Module") or _library_module(qualname(base) or ""):
                found.add(cls.name)
                break
            if isinstance(base, ast.Name):
                named.add(base.id)
        else:
            if named:
                through.append((cls.name, named))
    changed = True
    while changed:
        changed = False
        for name, named in through:
            if name not in found and not named.isdisjoint(found):
                found.add(name)
                changed = True
    return found


def _library_module(name: str) -> bool:
    """Whether the qualified name is a library's ``nn.Module`` class: any capitalised
    ``torch.nn`` class, or a public torchmetrics class (see ``_METRIC_PACKAGES``)."""
    parts = name.split(".")
    if not parts[-1][:1].isupper() or len(parts) < 2:
        return False
    if parts[:2] == ["torch", "nn"]:
        return len(parts) > 2
    if parts[0] != "torchmetrics":
        return False
    return (
        len(parts) == 2
        or (len(parts) == 3 and parts[1] in _METRIC_PACKAGES)
        or (name in _METRIC_BASES)
    )


# The fields holding statements (of a statement, an ``except`` handler, a ``match`` case):
# an assignment is found only there, never inside an expression.
_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def assignments(tree: ast.AST) -> list[ast.Assign]:
    """Every ``ast.Assign`` in ``tree`` (as ``ast.walk`` finds them, in another order), by a
    walk of its statements only: the expressions around them (most of a file) are not met."""
    found: list[ast.Assign] = []
    stack = [tree]
    assign = ast.Assign
    while stack:
        node = stack.pop()
        for name in _BLOCKS:
            block = getattr(node, name, None)
            if block.__class__ is list:  # (an `IfExp`'s or a lambda's `body` is no list)
                for child in block:
                    if child.__class__ is assign:
                        found.append(child)
                    stack.append(child)
    return found


class ModelKnowledge:
    """Answers "does this expression build or hold a model" for one file."""

    def __init__(
        self,
        classdefs: list[ast.ClassDef],
        qualname: QualName,
        project: Callable[[ast.expr], tuple[str, str] | None] | None = None,
        tree: ast.AST | None = None,
        *,
        bases: QualName | None = None,
    ) -> None:
        self.qualname = qualname
        self.classdefs = {c.name: c for c in classdefs}
        # (`bases`: how the classes' bases are read, where it differs: the same answers)
        self.classes = module_classes(classdefs, bases or qualname)
        self.factories: set[str] = set()  # module-level functions that return a model
        self.spelled: set[str] = set()  # of those, `partial(Net)` and the like: no code moves
        # `MODELS = {"a": NetA, "b": NetB}` at module level, bound once: its classes' names
        self.registries = registries(tree) if isinstance(tree, ast.Module) else {}
        # What a name (or `module.name`) imported from the project's own modules is:
        # ("class" | "factory" | ..., name), see torchport.check.port._project.
        self.project = project
        if project is not None:  # a class deriving from a project's model class
            changed = True
            while changed:
                changed = False
                for cls in classdefs:
                    if cls.name not in self.classes and any(
                        (found := project(b)) is not None and found[0] == "class" for b in cls.bases
                    ):
                        self.classes.add(cls.name)
                        changed = True
        # `GRUmodel = GRUmodel(...)`: the class's name holds the model after that line,
        # so a call of it elsewhere is a forward (it returns a tuple, maybe), not a build.
        self.rebound: set[str] = set()
        self.rebinding: set[int] = set()  # the `GRUmodel(...)` calls that build it
        for node in assignments(tree) if tree is not None else ():
            if (
                len(node.targets) == 1
                and isinstance(name := node.targets[0], ast.Name)
                and (build := own_build(node.value, name.id)) is not None
                and (name.id in self.classes or self._project_kind(build.func) == "class")
            ):
                self.rebound.add(name.id)
                self.rebinding.add(id(build))

    def _project_kind(self, expr: ast.expr) -> str | None:
        found = self.project(expr) if self.project is not None else None
        return found[0] if found is not None else None

    def constructor(self, call: ast.Call) -> bool:
        """Whether ``call`` builds a new module (``Net()``, ``nn.Linear(3, 4)``, ...)."""
        func = call.func
        if isinstance(func, ast.Name) and func.id in self.rebound:
            return id(call) in self.rebinding
        if isinstance(func, ast.Name) and func.id in self.classes:
            return True
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):  # (x31al)
            held = self.registries.get(func.value.id)  # `MODELS[args.arch]()`: any key's
            return bool(held) and all(c in self.classes for c in held or ())
        if isinstance(func, ast.Call) and func.args and isinstance(func.args[0], ast.Name):
            partial_of = self.qualname(func.func) == "functools.partial"  # `partial(Net)()`
            return partial_of and func.args[0].id in self.classes
        if self._project_kind(func) == "class":
            return True  # `Net()` after `from model import Net`
        name = self.qualname(func)
        if name is None:
            return False
        if name in WRAPPERS:
            return False  # wraps a model that is built (and moved) elsewhere
        if name.startswith("torch.nn."):
            parts = name.split(".")
            return (
                len(parts) >= 3
                and parts[2] not in _NOT_MODULES
                and parts[-1][:1].isupper()
                and parts[-1] not in _NOT_MODULE_NAMES
            )
        if name.startswith("torchvision.models.") or name == "timm.create_model":
            return True
        return (
            name.startswith("transformers.")
            and name.endswith(".from_pretrained")
            and not any(w in name for w in ("Tokenizer", "Config", "Processor", "Extractor"))
        )

    def project_factory(self, call: ast.Call) -> bool:
        """``build()`` after ``from model import build``: another module's model factory."""
        if isinstance(call.func, ast.Name) and call.func.id in self.spelled & self.factories:
            return True  # `Net = functools.partial(_Net)`: its model made here (x31al)
        return self._project_kind(call.func) == "factory"

    def stateless(self, call: ast.Call) -> bool:
        """A ``torch.nn`` module that holds no tensors (``nn.ReLU()``, ``nn.MSELoss(...)``)."""
        name = self.qualname(call.func) or ""
        if not name.startswith("torch.nn."):
            return False
        tail = name.rsplit(".", 1)[1]
        if tail.endswith("Loss"):  # options only, unless it holds class weights
            return not call.args and all(k.arg not in _LOSS_TENSORS for k in call.keywords)
        return not call.args and not call.keywords and tail not in _CONTAINERS

    def wrapper(self, call: ast.Call) -> bool:
        """Whether ``call`` wraps its first argument (``nn.DataParallel(m)``, ``torch.compile``)."""
        return bool(call.args) and self.qualname(call.func) in WRAPPERS

    def builds(self, expr: ast.expr, holds: Callable[[ast.expr], bool]) -> bool:
        """Whether ``expr`` evaluates to a model; ``holds`` answers for names and attributes."""
        for _ in range(16):
            if isinstance(expr, (ast.Name, ast.Attribute)) and holds(expr):
                return True
            if isinstance(expr, ast.IfExp):  # `Net().cuda() if use_cuda else Net()`
                return self.builds(expr.body, holds) and self.builds(expr.orelse, holds)
            if not isinstance(expr, ast.Call):
                return False
            func = expr.func
            if self.constructor(expr):
                return True
            if isinstance(func, ast.Name) and func.id in self.factories:
                return True
            if self._project_kind(func) == "factory":
                return True
            if self.wrapper(expr):
                expr = expr.args[0]
                continue
            if isinstance(func, ast.Attribute) and func.attr in MODEL_METHODS:
                expr = func.value
                continue
            return False
        return False

    def moved(self, expr: ast.expr) -> bool:
        """Whether a model expression already carries a move (``Net().to(d)``, ``.cuda()``)."""
        for _ in range(16):
            if not isinstance(expr, ast.Call):
                return False
            func = expr.func
            if isinstance(func, ast.Attribute) and func.attr in MODEL_METHODS:
                if func.attr in _MOVES:
                    return True
                expr = func.value
            elif self.wrapper(expr):
                expr = expr.args[0]
            else:
                # A factory's own returns are moved (or reported) inside it; a project
                # module's factory is not, and its model is moved where it is called.
                return (
                    isinstance(func, ast.Name)
                    and func.id in self.factories
                    and func.id not in self.spelled  # (its model is made by no code: here)
                )
        return False


def library_driven(
    imports: list[ast.AST], classdefs: list[ast.ClassDef], qualname: QualName
) -> set[str]:
    """Classes whose methods a library calls: those deriving from a class it gives.

    ``nn.Module`` (its ``forward``), ``torch.optim.Optimizer`` (``step``),
    ``Dataset``, a Lightning module, any imported base, and the file's classes
    deriving from those. The port moves data in the scripts that drive them, not
    inside them.
    """
    found: set[str] = set()
    # Names any import binds, relative ones too (`from .base import BaseLoss`: a
    # package's own base class, which qualname cannot resolve without the package).
    imported_names = {
        (alias.asname or alias.name).partition(".")[0]
        for node in imports  # the file's imports, anywhere in it
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    changed = True
    while changed:
        changed = False
        for cls in classdefs:
            if cls.name in found:
                continue
            for base in cls.bases:
                if isinstance(base, ast.Subscript):
                    base = base.value  # `Base[T]`: the class it parametrises
                local = isinstance(base, ast.Name) and base.id in found
                imported = qualname(base) is not None or (
                    isinstance(base, ast.Name) and base.id in imported_names
                )
                if local or imported or isinstance(base, ast.Attribute):
                    found.add(cls.name)
                    changed = True
                    break
    return found


def registries(tree: ast.Module) -> dict[str, list[str]]:
    """``NAME = {key: Class, ...}`` at the module's top level, every value a name, bound once
    there and no item stored into it (``NAME[k] = ...``) anywhere: the names of its values."""
    found: dict[str, list[str]] = {}
    for stmt in tree.body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Dict)
            and stmt.value.values
            and all(isinstance(v, ast.Name) for v in stmt.value.values)
        ):
            found[stmt.targets[0].id] = [v.id for v in stmt.value.values]  # type: ignore[attr-defined]
    if not found:
        return found  # no candidate: the stores need no count (most files: no walk)
    counts: dict[str, int] = {}
    for stmt in tree.body:
        for node in ast.walk(stmt) if not isinstance(stmt, ast.ClassDef) else ():
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                if node.id in found:
                    counts[node.id] = counts.get(node.id, 0) + 1
            elif (
                isinstance(node, ast.Subscript)
                and not isinstance(node.ctx, ast.Load)
                and isinstance(node.value, ast.Name)
                and node.value.id in found
            ):
                counts[node.value.id] = counts.get(node.value.id, 0) + 2
    return {
        name: held
        for name, held in found.items()
        if counts.get(name) == 1 and not changed_after(tree, name)  # (`.update`: x31an)
    }


def changed_after(tree: ast.Module, name: str) -> bool:
    """Whether the file may change the container the module-level ``name`` is bound to, or
    rebind it: a use of the name other than its binding, an item read (``name[k]``,
    ``name.get(k)``, ``.keys()``/``.values()``/``.items()``/``.copy()``) or ``k in name``
    (``name.update(...)``, ``name[k] = v``, ``del name[k]``, handed to a call: changed)."""
    read: set[int] = set()
    for node in ast.walk(tree):
        item = isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
        if item or (isinstance(node, ast.Attribute) and node.attr in _READ_METHODS):
            read.add(id(node.value))  # type: ignore[attr-defined]
        elif isinstance(node, ast.Compare) and all(
            isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
        ):
            read.update(id(c) for c in node.comparators)
    names = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name]
    stores = [n for n in names if not isinstance(n.ctx, ast.Load)]
    return len(stores) != 1 or any(id(n) not in read for n in names if isinstance(n.ctx, ast.Load))


_READ_METHODS = frozenset({"get", "keys", "values", "items", "copy"})
