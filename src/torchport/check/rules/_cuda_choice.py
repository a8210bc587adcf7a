"""How TP109 recognises a choice between CUDA and the CPU: its test and its CUDA branch.

Also which CUDA under such a test is the choice's (left to TP109) and which is
TP101's: a move in code that carries its device must follow that device.
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check._match import called, cuda_string, is_cpu_target, method_name, names
from torchport.check.semantic import BindingKind
from torchport.check.semantic._carried import carried_device
from torchport.check.semantic._devices import (
    OTHER_ACCELERATORS,
    built_cuda_string,
    cuda_flag,
    cuda_index_arm,
    cuda_index_test,
)
from torchport.check.semantic._guards import Guard, device_guard, tests_other_accelerators
from torchport.check.semantic._receivers import enters_call_named
from torchport.check.semantic._residence import bound_value

__all__ = [
    "NOT_TORCH",
    "OWN_DEVICE_LIBRARIES",
    "chooses_cuda_or_the_cpu",
    "cuda_api",
    "default_never_runs",
    "foreign_device",
    "left_alone",
    "moves_to_cuda",
    "not_implemented_elsewhere",
    "serves_horovod",
    "tests_cuda",
]

# Work spread over several GPUs in one process: CUDA's (DataParallel's ids; TP405's), no place.
MULTI_GPU = frozenset(
    {
        "torch.nn.parallel.data_parallel",
        "torch.nn.parallel.data_parallel.data_parallel",
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
    }
)


def cuda_api(name: str) -> bool:
    """Whether the qualified name is CUDA's own API: a ``torch.cuda`` function (not a
    legacy tensor type, TP104's) or DataParallel over several GPUs (:data:`MULTI_GPU`)."""
    return name in MULTI_GPU or (name.startswith("torch.cuda.") and not name.endswith("Tensor"))


_AVAILABLE = "torch.cuda.is_available"
_TAILS = frozenset({"is_available"})
# Calls choosing no device: questions, seeding (TP402's), housekeeping (`empty_cache()`).
_QUERIES = frozenset(f"torch.cuda.{n}" for n in ("is_available", "is_bf16_supported",
    "get_device_name", "get_device_capability", "device_count", "manual_seed",
    "manual_seed_all", "empty_cache", "ipc_collect", "reset_peak_memory_stats",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "memory_summary",
    "max_memory_reserved", "memory_cached", "max_memory_cached", "memory_stats",
    "mem_get_info", "reset_accumulated_memory_stats", "reset_max_memory_allocated"))  # fmt: skip
# ... and saving or restoring CUDA's RNG state (`"cuda": torch.cuda.get_rng_state() if
# torch.cuda.is_available() else None` in a checkpoint): seeding's kin, no device is picked
_RNG_STATE = frozenset(f"torch.cuda.{n}" for n in ("get_rng_state", "get_rng_state_all",
    "set_rng_state", "set_rng_state_all", "seed", "seed_all", "initial_seed"))  # fmt: skip

# ... and, for TP109 alone (``timing``), what only times CUDA or describes or caps the GPU:
# `synchronize()` around a timer, CUDA events (`torch.cuda.Event(enable_timing=True)`; its
# `.record()`/`.elapsed_time()` are the event's), the device's properties and a memory cap
# (held-out samples Y, Z, AA and AB: `if torch.cuda.is_available():` around a step timer,
# a print of the GPU's name and memory, a per-process memory fraction, judged low). Another
# device would run these and fail, so TP103's fix still counts them as CUDA.
_TIMING = frozenset(f"torch.cuda.{n}" for n in ("synchronize", "Event", "streams.Event",
    "get_device_properties", "set_per_process_memory_fraction"))  # fmt: skip


def chooses_cuda_or_the_cpu(node: ast.If | ast.IfExp, ctx: Context) -> bool:
    """TP109's subject: a test of CUDA whose branch names CUDA, or whose value falls back to
    the CPU (either arm, for a CUDA index flag: ``"cpu" if args.cuda < 0 else f"cuda:{...}"``,
    whose ``if`` statement is one too where its branch names CUDA);
    not where the code already looks further (``elif torch.backends.mps...``) or is ported
    already."""
    index = cuda_index_test(node.test)
    if index and isinstance(node, ast.IfExp):  # one arm the CPU, the other the flag's CUDA
        assert isinstance(node.test, ast.Compare)
        arms = (node.body, node.orelse)
        if not any(
            is_cpu_target(a, ctx) and cuda_index_arm(b, node.test) for a, b in (arms, arms[::-1])
        ):
            return False
    if not (index or tests_cuda(node.test, ctx)):
        return False
    falls_back = isinstance(node, ast.IfExp) and (
        is_cpu_target(node.orelse, ctx) or (index and is_cpu_target(node.body, ctx))
    )
    moves = moves_to_cuda(node, ctx, timing=True)
    if index and not moves and isinstance(node, ast.If) and node.orelse:
        # `if args.cuda < 0: device = "cpu"` `else: device = "cuda:%d" % args.cuda`
        moves = moves_to_cuda(ast.If(node.test, node.orelse, []), ctx, timing=True)
    if not (falls_back or moves):
        return False
    if tests_other_accelerators(node, ctx) or foreign_device(node, ctx):
        return False  # `elif torch.backends.mps...` looks further; XGBoost's `device=`
    return device_guard(node, ctx) is not Guard.DEVICE_TYPE


def tests_cuda(test: ast.expr, ctx: Context, depth: int = 0) -> bool:
    """``torch.cuda.is_available()`` in ``test``, directly or through a flag bound to it.

    A flag named for CUDA (``use_cuda``, ``args.cuda``, ``cfg["gpu"]``) counts
    too, whatever it is bound to: it switches between CUDA and the CPU.
    """
    for _ in range(3 - depth):
        if cuda_flag(test):
            return True
        if isinstance(test, ast.Name):
            if not ctx.mentions("is_available"):
                return False  # no flag in this file can hold the answer
            bound = bound_value(test, ctx)
            if bound is None or not names(bound, "is_available"):
                return False
            test = bound
            continue
        if isinstance(test, ast.BoolOp):
            # `x = x and y` binds a name to itself: the depth bounds the search.
            return depth < 2 and any(tests_cuda(v, ctx, depth + 1) for v in test.values)
        if isinstance(test, ast.UnaryOp):
            return False  # `if not torch.cuda.is_available():` is the CPU branch
        return isinstance(test, ast.Call) and called(test, ctx, _TAILS) == _AVAILABLE
    return False


def moves_to_cuda(node: ast.If | ast.IfExp, ctx: Context, *, timing: bool = False) -> bool:
    """Whether the branch taken on CUDA names CUDA: ``.cuda()``, ``"cuda"``, ``torch.cuda.*``.

    With ``timing`` (TP109), :data:`_TIMING` names no device either: a branch that only
    waits for CUDA, records CUDA events around a timer, reads the device's properties or caps
    its memory (held-out samples Y, Z, AA, AB, judged low) picks nothing; elsewhere another
    device would run those calls and fail.

    What the branch only prints or logs (``print(torch.cuda.get_device_name())``,
    ``logger.info(f"on {torch.cuda.current_device()}")``) places nothing; with ``timing``,
    neither does a ``current_device()`` whose value is only described (``_gpu_facts``: a
    query's argument, a GPU record's value; held-out samples Z-AC's F1), nor does a saved
    state's ``"cuda"`` entry a CUDA RNG state restore is given (``_rng_restores``: sample AG).
    """
    from torchport.check.rules._rng_restores import shown_apart  # (read on first use)

    body: list[ast.AST] = [*node.body] if isinstance(node, ast.If) else [node.body]
    for part in body:
        for sub in shown_apart(part, timing, ctx):  # (TP103's fix keeps a "cuda" key CUDA's)
            if isinstance(sub, ast.Constant) and cuda_string(sub) is not None:
                return True
            if isinstance(sub, (ast.JoinedStr, ast.BinOp)) and built_cuda_string(sub):
                return True  # `f"cuda:{i}"`, `"cuda:%d" % i`, `"cuda:" + str(i)`
            if isinstance(sub, ast.Call):
                func = sub.func
                if built_cuda_string(sub):
                    return True  # `"cuda:{}".format(i)`
                if isinstance(func, ast.Attribute) and func.attr == "cuda":
                    if ctx.qualname(func) is None:
                        return True
                    continue
                name = ctx.qualname(func) or ""
                if (
                    name.startswith("torch.cuda.")
                    and name not in _QUERIES
                    and name not in _RNG_STATE
                    and not (timing and (name in _TIMING or _described(sub, node, ctx)))
                ):
                    return True
    return False


def _described(call: ast.Call, branch: ast.If | ast.IfExp, ctx: Context) -> bool:
    """``torch.cuda.current_device()`` only described (``_gpu_facts``, read on first use)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "current_device"):
        return False
    from torchport.check.rules._gpu_facts import only_described

    return only_described(call, branch, ctx)


def left_alone(node: ast.AST, ctx: Context) -> bool:
    """Whether TP101 leaves the CUDA at ``node`` alone: a test, or a device check makes it fine.

    A CUDA device that is an operand of a comparison (``dev == torch.device("cuda")``) tests
    where the code runs; it places nothing. A test of the device's type around ``node`` makes
    its CUDA ported code; a CUDA-or-CPU test makes it TP109's choice, except around a move
    (``.cuda()``, ``.to(...)``) in code that carries its device: that move must follow the
    carried device, whatever the test says. Inside ``with pytest.warns(...)`` (``assertWarns``,
    ``assertLogs``, ``deprecated_call``) the CUDA is the test's set-up on purpose
    (``model.device = torch.device("cuda")`` to trigger a GPU warning): another device fails the
    test. So is test code whose subject is CUDA (``_test_code.cuda_is_the_subject``), benchmark
    code (``_test_code.benchmark_code``: a benchmark measures one device on purpose), a class's
    own ``cuda()`` method (:func:`_own_cuda_method`), a move of a loss that holds no tensor
    (``_empty_losses.moves_nothing``), a default that never runs (:func:`_default_never_runs`) or an
    option whose value only parameters no code reads get (``_unread_options``), a module-level
    setting no code reads (``_unread_globals``), CUDA's own arm of a dispatch on a type string
    naming another accelerator (``_type_dispatch``), a line past ``if not self.<flag>: return``
    whose flag is bound once to a test saying CUDA (``_instance_flags``), and CUDA made under
    ``with FakeTensorMode():`` in test code (:func:`_fakes_tensors`), and test code of a
    CUDA-only kernel (``_cuda_kernels.tests_a_kernel``), and a CUDA runtime probe's own tensor
    (``_cuda_probes``), and a device only other libraries use (``_foreign_devices``).
    """
    if isinstance(ctx.parent, ast.Compare) or expects_a_warning(ctx) or _own_cuda_method(ctx):
        return True
    if isinstance(node, ast.Call) and (_moves_nothing(node, ctx) or _default_never_runs(node, ctx)):
        return True
    if isinstance(node, ast.Call) and method_name(node) == "add_argument":
        from torchport.check.rules._unread_options import option_never_read  # on first use

        if option_never_read(node, ctx):
            return True  # the option's value reaches only parameters no code reads
    if _unread_global(node, ctx) or _only_foreign_uses(node, ctx):
        return True
    from torchport.check.rules._test_code import (  # on first use
        benchmark_code,
        collected_by_a_test_runner,
        cuda_is_the_subject,
    )

    if cuda_is_the_subject(node, ctx) or benchmark_code(ctx) or _probes_cuda(node, ctx):
        return True
    if collected_by_a_test_runner(ctx) and (_fakes_tensors(ctx) or _tests_a_kernel(ctx)):
        return True
    guard = device_guard(node, ctx)
    if guard is None:
        return _unguarded_yet_fine(node, ctx)
    if guard is Guard.DEVICE_TYPE or not isinstance(node, ast.Call):
        return True
    if method_name(node) not in ("cuda", "to"):
        return True
    return carried_device(node, ctx) is None


def _only_foreign_uses(node: ast.AST, ctx: Context) -> bool:
    """Every use of the device at ``node`` is another library's (``_foreign_devices``)."""
    if not any(library in ctx.source for library in NOT_TORCH):
        return False  # a cheap look first: none of them named
    from torchport.check.rules._foreign_devices import only_foreign_uses  # on first use

    return only_foreign_uses(node, ctx, NOT_TORCH)


def _probes_cuda(node: ast.AST, ctx: Context) -> bool:
    """A CUDA runtime probe's own tensor (``rules/_cuda_probes.py``, read on first use)."""
    if not ctx.mentions("is_available"):
        return False
    from torchport.check.rules._cuda_probes import probes_cuda

    return probes_cuda(node, ctx)


def _unread_global(node: ast.AST, ctx: Context) -> bool:
    """:func:`._unread_globals.never_read_anywhere` of a module-level setting, its module read
    on first use."""
    stmt = ctx.ancestors[1] if len(ctx.ancestors) > 1 else node
    value = getattr(stmt, "value", None)
    if not isinstance(stmt, _SETTINGS) or not (
        isinstance(value, (ast.Constant, ast.IfExp))
        or (isinstance(value, ast.Call) and method_name(value) == "device")
    ):
        return False  # a string, a choice, `torch.device(...)` (`x = t.cuda()`: no module read)
    from torchport.check.rules._unread_globals import never_read_anywhere

    return never_read_anywhere(node, ctx)


_SETTINGS = (ast.Assign, ast.AnnAssign)


def _unguarded_yet_fine(node: ast.AST, ctx: Context) -> bool:
    """CUDA past a method's flag exit saying CUDA (``_instance_flags``) or in CUDA's arm of a
    dispatch on another type (``_type_dispatch``), each module read only where it may answer."""
    if any(isinstance(a, ast.ClassDef) for a in ctx.ancestors):
        from torchport.check.rules._instance_flags import flag_exit_says_cuda

        if flag_exit_says_cuda(node, ctx):
            return True
    if not any(ctx.mentions(f'"{t}') or ctx.mentions(f"'{t}") for t in OTHER_ACCELERATORS):
        return False
    from torchport.check.rules._type_dispatch import cuda_arm_of_a_dispatch

    return cuda_arm_of_a_dispatch(node, ctx)


def _tests_a_kernel(ctx: Context) -> bool:
    """:func:`._cuda_kernels.tests_a_kernel`, its module read on first use (test code alone)."""
    from torchport.check.rules._cuda_kernels import tests_a_kernel

    return tests_a_kernel(ctx)


def default_never_runs(node: ast.AST, param: str, ctx: Context) -> bool:
    """``param``'s default, ``node`` being the ``ast.arguments`` checked, is of a function
    that every call passes (TP101's; across the repository for a public one):
    ``rules/_passed_defaults.py``, read on first use."""
    if not isinstance(node, ast.arguments):
        return False
    from torchport.check.rules._passed_defaults import default_never_runs as never_runs

    return never_runs(param, ctx)


def _default_never_runs(node: ast.AST, ctx: Context) -> bool:
    """``node`` is the default of a parameter every call passes (``def _f(device=torch.device(
    "cuda"))``, every ``_f(...)`` given ``device``)."""
    if not isinstance(ctx.parent, ast.arguments):
        return False
    from torchport.check.rules._passed_defaults import default_never_runs, parameter_defaulted

    param = parameter_defaulted(node, ctx.parent)
    return param is not None and default_never_runs(param, ctx)


def _own_cuda_method(ctx: Context) -> bool:
    """Inside a class's own ``def cuda(self, device=None):`` (an override of ``Module.cuda``).

    There ``t.cuda(device)`` is what the method means: it runs only when a caller
    asks for CUDA by name (``prior.cuda()``), and the caller's line is the finding.
    """
    chain = ctx.ancestors
    for i in range(len(chain) - 1, 0, -1):
        function = chain[i]
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return function.name == "cuda" and isinstance(chain[i - 1], ast.ClassDef)
    return False


_EXPECTS_WARNING = frozenset(
    {"warns", "assertWarns", "assertWarnsRegex", "assertLogs", "deprecated_call"}
)


def expects_a_warning(ctx: Context) -> bool:
    """Whether the walk is inside ``with pytest.warns(...)`` or its kin, in this function."""
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(outer, (ast.With, ast.AsyncWith)) and enters_call_named(
            outer, _EXPECTS_WARNING
        ):
            return True
    return False


def _fakes_tensors(ctx: Context) -> bool:
    """Inside ``with FakeTensorMode():`` in this function: fake tensors hold no memory, so
    ``torch.empty(..., device="cuda")`` there tests the CUDA path (flash-attention forwards
    a CUDA architecture to its kernel compile, sample Q) on any machine, no GPU needed;
    another device would test another path."""
    for outer in reversed(ctx.ancestors):
        if isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(outer, (ast.With, ast.AsyncWith)) and enters_call_named(outer, _FAKE_MODES):
            return True
    return False


_FAKE_MODES = frozenset({"FakeTensorMode"})


def not_implemented_elsewhere(branch: ast.AST, ctx: Context) -> bool:
    """``if not x.is_cuda: raise NotImplementedError`` before a compiled extension's call
    (``_C.deform_conv_forward(...)``, in the ``else`` or after): the code says the kernel
    exists only for CUDA, so the test is its precondition, right as written
    (``device.type != "cpu"`` would hand it MPS tensors). Before portable code it is not.
    So is any such test in a module written around a GPU-only kernel that is not Triton's
    (``_cuda_kernels``)."""
    from torchport.check.rules._cuda_kernels import kernel_module  # on first use

    if kernel_module(ctx, triton=False):
        return True
    if not isinstance(branch, ast.If) or len(branch.body) != 1:
        return False
    raised = branch.body[0]
    if not isinstance(raised, ast.Raise) or raised.exc is None:
        return False
    exc = raised.exc.func if isinstance(raised.exc, ast.Call) else raised.exc
    if not (isinstance(exc, ast.Name) and exc.id == "NotImplementedError"):
        return False
    guarded: list[ast.AST] = list(branch.orelse)
    holder = ctx.scopes.parent(branch)
    block = getattr(holder, "body", None)
    if isinstance(block, list) and any(s is branch for s in block):
        guarded += block[next(i for i, s in enumerate(block) if s is branch) + 1 :]
    return any(
        isinstance(sub, ast.Call)
        and isinstance(sub.func, ast.Attribute)
        and isinstance(sub.func.value, ast.Name)
        and sub.func.value.id.startswith("_")  # `_C`, `_ext`, `_backend`: a compiled module
        for stmt in guarded
        for sub in ast.walk(stmt)
    )


def _moves_nothing(node: ast.Call, ctx: Context) -> bool:
    """``_empty_losses.moves_nothing``, asked (and imported) only of a move of a module built
    right there: torch's (``nn.MSELoss().cuda()``) or a class of the file's."""
    built = node.func.value if isinstance(node.func, ast.Attribute) else None
    if not isinstance(built, ast.Call) or method_name(node) not in ("cuda", "to"):
        return False
    func = built.func
    if not (ctx.qualname(func) or "").startswith("torch.nn.") and not (
        isinstance(func, ast.Name)
        and any(b.kind is BindingKind.CLASS for b in ctx.scopes.bindings(func.id, func))
    ):
        return False
    from torchport.check.rules._empty_losses import moves_nothing  # on first use

    return moves_nothing(node, ctx)


def serves_horovod(ctx: Context) -> bool:
    """A module that imports Horovod (``import horovod.torch as hvd``, even under ``try``).

    Horovod's collectives (``hvd.allreduce``, ``broadcast_parameters``) take CPU or
    CUDA tensors only (ROCm through CUDA's API); a CUDA-or-CPU choice in code written
    for it picks between the only devices it can use, and MPS or XPU would break it.
    """
    return any((target or "").partition(".")[0] == "horovod" for _local, target in ctx.imported)


# A ``device=`` keyword of another library's call: its own device string, not torch's.
#
# Invariant: a ``device=`` given to a call whose callee resolves to an import of a library
# listed here is that library's device, never a torch device, so TP101/TP109 (choose the torch
# accelerator) say nothing of it. The list holds only libraries whose documentation gives their
# ``device`` parameter its own meaning, with no torch device and no MPS/XPU to choose:
#
# * ``xgboost``: ``device`` is ``"cpu"``, ``"cuda"``, ``"cuda:<ordinal>"`` (or ``"gpu"``);
#   XGBoost's GPU support is CUDA's (xgboost.readthedocs.io, "XGBoost GPU Support").
# * ``lightgbm``: ``device`` is an alias of ``device_type`` (``cpu``, ``gpu``: OpenCL,
#   ``cuda``); LightGBM's Parameters page.
# * ``ctranslate2``: ``device`` is ``"cpu"``, ``"cuda"`` or ``"auto"`` (its ``str_to_device``
#   accepts nothing else); ``faster_whisper`` (``WhisperModel(..., device=...)``) hands it to
#   CTranslate2 as is.
#
# Libraries that take torch's devices (transformers' ``pipeline``, sentence-transformers,
# timm, ultralytics, whisper, ...) are not listed: their ``device=`` stays reported. CatBoost
# (``task_type="GPU"``, ``devices="0:1"``) has no ``device`` keyword, so nothing to list.
OWN_DEVICE_LIBRARIES = frozenset({"xgboost", "lightgbm", "ctranslate2", "faster_whisper"})
# where a device value's every use may go, for ``rules/_foreign_devices.py`` (its docstring)
NOT_TORCH = OWN_DEVICE_LIBRARIES | {"onnxruntime", "tensorflow", "jax", "jaxlib", "cupy", "numba"}


def foreign_device(value: ast.AST, ctx: Context, call: ast.Call | None = None) -> bool:
    """``value`` is the ``device=`` keyword of ``call`` (None: the call ``value`` sits in, read
    from ``ctx.ancestors``), a call whose callee is a listed library's import."""
    if call is None:
        outer = ctx.ancestors[-2:]
        if len(outer) < 2 or not isinstance(outer[1], ast.keyword):
            return False
        call = outer[0] if isinstance(outer[0], ast.Call) else None
    if call is None or not any(k.arg == "device" and k.value is value for k in call.keywords):
        return False
    name = ctx.qualname(call.func)
    return name is not None and name.partition(".")[0] in OWN_DEVICE_LIBRARIES
