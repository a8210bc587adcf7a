"""The calls and attributes ``torchport port`` recognises: tensor factories, moves, host reads.

Syntax only, on the standard library's ``ast``: nothing here imports torch.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Callable

from torchport._device_types import MOVE_METHODS
from torchport.check._context import Context
from torchport.check.port._models import QualName
from torchport.check.semantic._resolve import Callee

__all__ = [
    "CREATORS",
    "HOST_READS",
    "META_ATTRS",
    "NOT_TENSOR_SPACES",
    "PARAMETER",
    "SAME_KIND_CALLS",
    "TENSOR_SPACES",
    "TORCH_LOADS",
    "TORCH_NOT_TENSORS",
    "TYPED_CONSTRUCTORS",
    "VARIABLE",
    "api_cpu_arguments",
    "argument_at",
    "called",
    "cpu_only_device",
    "device_target",
    "follows_a_tensor",
    "grad_leaf",
    "grad_maker",
    "grad_source",
    "handed_arguments",
    "host_library",
    "host_result",
    "is_move",
    "library_result",
    "made_by_stdlib",
    "moved_beside",
    "moves_all",
    "moves_tensors",
    "moves_to_program_device",
]

# Calls that make a new tensor on the CPU unless told otherwise.
CREATORS = frozenset(
    f"torch.{n}"
    for n in ("tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full",
              "arange", "linspace", "logspace", "eye", "rand", "randn", "randint", "randperm",
              "normal", "bernoulli", "tril_indices", "triu_indices")
)  # fmt: skip
# The legacy typed constructors (`torch.LongTensor([...])`): CPU tensors, no `device=` taken.
TYPED_CONSTRUCTORS = frozenset(
    f"torch.{n}"
    for n in ("Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor",
              "LongTensor", "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")
)  # fmt: skip
# torch callables whose result is no tensor; any other `torch.lower_case(...)` makes one.
TORCH_NOT_TENSORS = frozenset(
    {"device", "dtype", "Size", "Generator", "finfo", "iinfo", "typename", "numel", "save",
     "manual_seed", "seed", "initial_seed", "no_grad", "enable_grad", "inference_mode",
     "set_grad_enabled", "compile", "autocast", "broadcast_shapes", "result_type",
     "promote_types", "can_cast", "use_deterministic_algorithms", "set_num_threads",
     "get_num_threads", "set_printoptions", "set_default_dtype", "get_default_dtype",
     "set_default_device", "get_default_device", "set_float32_matmul_precision"}
)  # fmt: skip
# Loads: what they return is not known (a tensor, a dict, a model ...).
TORCH_LOADS = frozenset({"torch.load", "torch.hub.load", "torch.jit.load"})
# torch namespaces whose functions make tensors, and ones whose functions make none.
TENSOR_SPACES = (
    "torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.",
    "torch.nn.utils.rnn.", "torch.distributions.",
)  # fmt: skip
NOT_TENSOR_SPACES = (
    "torch.cuda.", "torch.backends.", "torch.optim.", "torch.accelerator.", "torch.mps.",
    "torch.xpu.", "torch.distributed.", "torch.multiprocessing.", "torch.utils.",
)  # fmt: skip
# `Variable(t)` is `t`; `nn.Parameter(t)` a tensor.
VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# Calls whose result is of their first argument's kind (a copy of a tensor is a tensor where it was)
SAME_KIND_CALLS = VARIABLE | {"copy.copy", "copy.deepcopy"}
PARAMETER = frozenset({"torch.nn.Parameter", "torch.nn.parameter.Parameter"})
# Methods that may put what they return on a device (`.to(device)`, `.cuda()`, `.type(...)`):
# any other method of host data gives host data.
MOVING_METHODS = MOVE_METHODS | frozenset({"to", "type"})
# Methods whose result lives on the host or describes a tensor without its data.
HOST_READS = frozenset(
    {"item", "tolist", "numpy", "cpu", "size", "dim", "numel", "nelement", "stride",
     "data_ptr", "is_contiguous", "element_size", "__len__", "get_device"}
)  # fmt: skip
# Host libraries that read what they are given with numpy (`np.asarray`), which refuses a
# device tensor: scikit-learn's `check_array`, scipy, pandas' constructors, seaborn. What
# they return is host data (a float, an array, a frame). Not scikit-learn's splitting and
# indexing helpers (`train_test_split`, `shuffle`): they index what they are given, which a
# device tensor allows (tried on `sim`: `train_test_split(t, y)` runs, `accuracy_score` raises).
_HOST_LIBRARIES = ("sklearn.", "scipy.", "pandas.", "seaborn.")
_INDEXING = ("sklearn.model_selection.", "sklearn.utils.")
META_ATTRS = frozenset({"shape", "device", "dtype", "ndim", "is_cuda", "requires_grad", "T_"})
_DEVICE_TEXT = re.compile(r"dev|cuda|gpu|accelerator|rank", re.IGNORECASE)


# Objects whose `.device` is a setting: the device the program chose, not one a tensor is on.
_SETTINGS = frozenset({"self", "args", "opt", "opts", "cfg", "config", "hparams"})


def follows_a_tensor(expr: ast.expr) -> bool:
    """``x.device``: the device some tensor or model is on, not the program's choice.

    ``torch.tensor(v, device=denom.device)`` follows ``denom`` wherever it is:
    device-aware code, which does not make a device value of its own.
    """
    return (
        isinstance(expr, ast.Attribute)
        and expr.attr == "device"
        and not (isinstance(expr.value, ast.Name) and expr.value.id in _SETTINGS)
    )


def host_library(name: str) -> bool:
    """Whether the qualified name ``name`` is a host library's function that reads its
    arguments through numpy (see ``_HOST_LIBRARIES``)."""
    return name.startswith(_HOST_LIBRARIES) and not name.startswith(_INDEXING)


def host_result(name: str) -> bool:
    """Whether calling the qualified name ``name`` gives host data whatever it is given: a host
    library's function (``accuracy_score``, ``pd.DataFrame``) or matplotlib's (an artist)."""
    return host_library(name) or name.startswith("matplotlib.")


def device_target(expr: ast.expr) -> bool:
    """Whether a ``.to()`` argument names a device that may be an accelerator (not the CPU)."""
    if isinstance(expr, ast.Constant):
        if isinstance(expr.value, int) and not isinstance(expr.value, bool):
            return True  # `.to(0)`: a GPU index
        return isinstance(expr.value, str) and expr.value.partition(":")[0] != "cpu"
    if isinstance(expr, ast.Call):  # `torch.device("cuda", 0)`: the index alone is no device
        return any(device_target(a) for a in expr.args if not _int(a)) or any(
            device_target(k.value) for k in expr.keywords if not _int(k.value)
        )
    if isinstance(expr, ast.Subscript):  # `cfg["device"]`: a config's device entry
        key = expr.slice
        return (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and bool(_DEVICE_TEXT.search(key.value))
        )
    text = ast.unparse(expr) if isinstance(expr, (ast.Attribute, ast.Name)) else ""
    return bool(_DEVICE_TEXT.search(text))


def _int(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and isinstance(expr.value, int)


def is_move(call: ast.AST) -> bool:
    """Whether ``call`` is ``x.to(<device>)``/``x.cuda()``: an explicit placement.

    ``x.to(y.device)`` counts (the author placed ``x``); whether it lands on the
    program's device is :func:`moves_to_program_device`'s question.
    """
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
        return False
    if call.func.attr == "cuda":
        return True
    if call.func.attr != "to":
        return False
    target = (
        call.args[0]
        if call.args
        else next((k.value for k in call.keywords if k.arg == "device"), None)
    )
    return target is not None and device_target(target)


def moves_all(value: ast.expr) -> bool:
    """A tuple or comprehension of moves (``x.to(d), y.to(d)``, ``{k: v.to(d) ...}``)."""
    if isinstance(value, (ast.Tuple, ast.List)):
        return bool(value.elts) and all(is_move(e) for e in value.elts)
    if isinstance(value, (ast.DictComp, ast.ListComp)):
        return any(is_move(n) for n in ast.walk(value))
    return False


def moves_tensors(item: ast.expr) -> bool:
    """``v.to(device)``, or ``v.to(device) if isinstance(v, Tensor) else v``: a moved batch."""
    if is_move(item):
        return True
    return (
        isinstance(item, ast.IfExp)
        and is_move(item.body)
        and isinstance(item.orelse, ast.Name)
        and isinstance(item.test, ast.Call)
        and getattr(item.test.func, "id", "") == "isinstance"
    )


def moves_to_program_device(call: ast.AST) -> bool:
    """``x.to(device)``/``x.cuda()``, not ``x.to(y.device)``, which puts ``x`` next to ``y``."""
    if not is_move(call):
        return False
    assert isinstance(call, ast.Call)
    target = call.args[0] if call.args else None
    target = target or next((k.value for k in call.keywords if k.arg == "device"), None)
    return target is None or not follows_a_tensor(target)


# APIs that want an argument on the CPU: (qualified name, its position, its keyword).
CPU_ARGUMENTS = (("torch.nn.utils.rnn.pack_padded_sequence", 1, "lengths"),)


def called(call: ast.Call, ctx: Context) -> Callee | None:
    """What ``call`` calls by its imports or through names bound once (``Resolver.called``)."""
    name = ctx.qualname(call.func)
    if name is not None:
        return Callee(name)
    root = call.func
    while isinstance(root, ast.Attribute):
        root = root.value
    func = call.func
    if isinstance(func, ast.Attribute) and ctx.attribute_alias_tails.get(func.attr):
        return ctx.scopes.called(call)  # `self.pack(...)` after `self.pack = pps`
    if not isinstance(root, ast.Name) or not ctx.may_hold_a_value(root.id):
        return None  # no `name = value` binds it: no alias to follow
    return ctx.scopes.called(call)


def api_cpu_arguments(call: ast.Call, ctx: Context) -> list[tuple[str, ast.expr]]:
    """(API, what it is given) for each argument of ``call`` that an API of
    :data:`CPU_ARGUMENTS` wants on the CPU, the API called by its name or through a name
    bound once to it (``pack = nn.utils.rnn.pack_padded_sequence``, a ``functools.partial``
    of it, ``R.pack_padded_sequence`` after ``R = nn.utils.rnn``: ``Resolver.called``)."""
    callee = called(call, ctx)
    if callee is None:
        return []
    name, fixed, keywords = callee.name, callee.args, callee.keywords
    found = []
    for api, index, keyword in CPU_ARGUMENTS:
        if name != api:
            continue
        given = next((k.value for k in (*keywords, *call.keywords) if k.arg == keyword), None)
        if given is None and index < len(fixed):
            given = fixed[index]  # a partial's own arguments come first
        elif given is None:
            given = argument_at(call, index - len(fixed), keyword)
        if given is not None:
            found.append((api, given))
    return found


def cpu_arguments(call: ast.Call, ctx: Context) -> list[ast.expr]:
    """What ``call`` passes where it must stay on the CPU (once per call and file): the
    lengths of ``pack_padded_sequence`` (it raises for device lengths), or what a function
    of the file hands there as it is (:func:`cpu_parameters`): no operand meets the device."""
    memo = ctx.memo.setdefault("port.cpu_arguments", {})  # the call (by identity) -> found
    assert isinstance(memo, dict)
    return list(memo[call] if call in memo else memo.setdefault(call, _cpu_arguments(call, ctx)))


def _cpu_arguments(call: ast.Call, ctx: Context) -> list[ast.expr]:
    found = [given for _, given in api_cpu_arguments(call, ctx)]
    func = call.func
    if found or not isinstance(func, ast.Name) or not (call.args or call.keywords):
        return found
    bound = ctx.scopes.bindings(func.id, call)
    own = bound[0].node if len(bound) == 1 else None
    if not isinstance(own, ast.FunctionDef | ast.AsyncFunctionDef):
        return found
    a = own.args
    positions = [p.arg for p in (*a.posonlyargs, *a.args)]
    for param in cpu_parameters(own, ctx):
        index = positions.index(param) if param in positions else -1
        if (given := argument_at(call, index, param)) is not None:
            found.append(given)
    return found


def cpu_parameters(func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context) -> tuple[str, ...]:
    """Parameters ``func`` hands as they are to an argument wanting them on the CPU.

    ``def encode(net, ids, lengths): pack_padded_sequence(net.emb(ids), lengths, ...)``:
    the port leaves ``lengths`` where its caller put it (the call raises for device
    lengths). Worked out once per function and file.
    """
    memo = ctx.memo.setdefault("port.cpu_parameters", {})
    assert isinstance(memo, dict)
    known = memo.get(id(func))
    if known is not None:
        return tuple(known)
    a = func.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    found: list[str] = []
    for node in ast.walk(func):
        if not isinstance(node, ast.Call):
            continue
        for _, given in api_cpu_arguments(node, ctx):
            if (
                isinstance(given, ast.Name)
                and given.id in params
                and given.id not in found
                and _function_of(given, ctx) is func
            ):
                found.append(given.id)
    memo[id(func)] = kept = tuple(found)
    return kept


def _function_of(node: ast.AST, ctx: Context) -> ast.AST | None:
    """The function (or lambda) ``node`` is read in."""
    parent = ctx.scopes.parent(node)
    while parent is not None and not isinstance(parent, _SCOPES):
        parent = ctx.scopes.parent(parent)
    return parent


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def argument_at(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    """What ``call`` passes as its parameter ``keyword``, by name or at ``index``."""
    given = next((k.value for k in call.keywords if k.arg == keyword), None)
    if given is None and 0 <= index < len(call.args):
        given = call.args[index]
    return given


def cpu_only_device(node: ast.AST, qualname: QualName) -> bool:
    """Whether ``node`` is ``<name with device> = torch.device("cpu")`` (TP507 rebinds it)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return False
    target, value = node.targets[0], node.value
    return (
        isinstance(target, ast.Name)
        and "device" in target.id.lower()
        and isinstance(value, ast.Call)
        and qualname(value.func) == "torch.device"
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Constant)
        and value.args[0].value == "cpu"
    )


def grad_leaf(value: ast.expr, qualname: QualName) -> ast.expr | None:
    """The factory call of a weight made by hand, or what it is copied from, or None.

    ``torch.randn(4, 2, requires_grad=True)``, ``torch.zeros(2).requires_grad_()``,
    ``nn.Parameter(torch.randn(3))``, ``Variable(torch.randn(3), requires_grad=True)``:
    a tensor the program trains. Not one made with ``device=`` (already placed).
    Made from another tensor (``start.clone().requires_grad_()``, ``nn.Parameter(w)``):
    that expression, whose tensors meet the weight (:func:`grad_source`).
    """

    def creator(expr: ast.expr) -> ast.expr | None:
        return grad_maker(expr, qualname)

    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr == "requires_grad_":
        return creator(func.value)
    name = qualname(func)
    if name in PARAMETER or name in VARIABLE:
        if not value.args:
            return None
        if name in VARIABLE and not any(
            k.arg == "requires_grad" and _true(k.value) for k in value.keywords
        ):
            return None
        return creator(value.args[0])
    made = creator(value)
    if isinstance(made, ast.Call) and any(
        k.arg == "requires_grad" and _true(k.value) for k in made.keywords
    ):
        return made
    return None


def grad_maker(expr: ast.expr, qualname: QualName) -> ast.expr | None:
    """What makes the tensor ``expr`` that becomes a raw weight: a torch factory with no
    ``device`` (through copies: ``torch.zeros(2).float()``), or ``expr`` when it is a
    copy of another tensor (:func:`grad_source`); None otherwise."""
    base = expr
    while (
        isinstance(base, ast.Call)
        and isinstance(base.func, ast.Attribute)
        and base.func.attr in _COPIES
    ):
        base = base.func.value  # `start.clone().detach()`, `torch.zeros(2).float()`
    if not isinstance(base, ast.Call) or qualname(base.func) not in CREATORS:
        return expr if grad_source(expr, qualname) else None
    return None if any(k.arg in ("device", None) for k in base.keywords) else base


# Tensor methods that give a copy or a view of the same values (a raw weight made from them).
_COPIES = frozenset(
    {"clone", "detach", "float", "double", "half", "contiguous", "view", "reshape", "flatten"}
)


def grad_source(expr: ast.expr, qualname: QualName) -> bool:
    """Whether ``expr`` (a raw weight's maker, :func:`grad_leaf`) is another tensor, a name
    or its copy, rather than a torch factory: what it reads must meet the device."""
    while (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Attribute)
        and expr.func.attr in _COPIES
    ):
        expr = expr.func.value
    return isinstance(expr, ast.Name)


def _true(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


# Standard-library calls that hand back an object they were given or had stored, a tensor
# among them (`copy.deepcopy(t)`, `pickle.loads(...)`, `random.choice(batches)`): not sure
_PASSING_CALLS = frozenset(
    {"pickle.load", "pickle.loads", "_pickle.load",
     "_pickle.loads", "functools.reduce", "heapq.heappop", "heapq.heappushpop",
     "heapq.heapreplace", "random.choice", "random.choices", "random.sample"}
)  # fmt: skip
# `operator.add(a, b)`, `operator.getitem(batch, 0)`: any of them but the getter makers
_NOT_PASSING_OPERATORS = frozenset(
    {"operator.itemgetter", "operator.attrgetter", "operator.methodcaller"}
)
_STDLIB = frozenset(sys.stdlib_module_names)


def library_result(name: str) -> bool | None:
    """For a call of ``name`` (qualified, not torch's): None where it is not the standard
    library's (a third-party library's result); else whether its result may be an object it
    was handed or had stored, so perhaps a tensor (``copy.deepcopy``, ``pickle.loads``)."""
    head = name.partition(".")[0]
    if head not in _STDLIB:
        return None
    return name in _PASSING_CALLS or (head == "operator" and name not in _NOT_PASSING_OPERATORS)


def made_by_stdlib(
    expr: ast.expr, qualname: QualName, nothing_to_move: Callable[[ast.expr], bool]
) -> bool:
    """Whether ``expr`` is made by the standard library out of nothing to move: an attribute,
    or a method given nothing to move, of a call of a standard-library function or class that
    hands back nothing it was given (:func:`library_result` False), itself given nothing to
    move (``Path(__file__).resolve().parent``, ``os.path.join(root, "x").upper()``). The
    standard library makes no tensor, so nothing such a value holds is one; a name between
    (``p = Path(x)`` then ``p.parent``) ends the chain: what was stored on it is not seen."""
    while True:
        if isinstance(expr, ast.Attribute):
            expr = expr.value
            continue
        if not isinstance(expr, ast.Call):
            return False
        given = [*expr.args, *(k.value for k in expr.keywords)]
        if any(isinstance(a, ast.Starred) or not nothing_to_move(a) for a in given):
            return False
        name = qualname(expr.func)
        if name is not None:
            return library_result(name) is False
        if not isinstance(expr.func, ast.Attribute):
            return False
        expr = expr.func.value


def handed_arguments(call: ast.Call, params: tuple[tuple[int, str], ...]) -> list[ast.expr] | None:
    """The arguments ``call`` hands the parameters ``(position or -1, name)`` (None: one
    is not told, a default or after a ``*args``)."""
    given: list[ast.expr] = []
    for position, name in params:
        keyword = next((k.value for k in call.keywords if k.arg == name), None)
        if keyword is not None:
            given.append(keyword)
        elif 0 <= position < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[: position + 1]
        ):
            given.append(call.args[position])
        else:
            return None
    return given


def moved_beside(call: ast.Call) -> ast.expr | None:
    """``y`` of ``x.to(y.device)`` (or ``device=y.device``): what the result lives beside."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "to"):
        return None
    target = call.args[0] if call.args else None
    target = target or next((k.value for k in call.keywords if k.arg == "device"), None)
    if target is None or not follows_a_tensor(target):
        return None
    assert isinstance(target, ast.Attribute)
    return target.value
