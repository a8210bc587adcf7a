"""What every shipped rule is, without importing its module: the rule catalog.

A check needs each rule's metadata (code, name, default, intent, fix safety, the
node types and names it is handed) before it runs anything; the rule's module
(its ``check``, its documentation and examples) is needed only when the walk first
hands the rule a node. :func:`shipped_rules` gives, for every entry here, a
:class:`LazyRule` subclass that carries the metadata and imports the real rule
class on its first ``check`` (then calls it directly). Anything else read from such
a class (``__doc__``, ``message``, ``valid``, ``invalid``) comes from the real class.

The entries are kept true by ``tests/check/test_catalog.py``, which imports every
rule and compares; it prints the entries to paste here when a rule changes.
Importing this module imports no rule.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator

from torchport.check._records import record
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from torchport.check._context import Context

__all__ = [
    "ENTRIES",
    "LazyRule",
    "RuleEntry",
    "real_rule",
    "shipped_rule",
    "shipped_rules",
    "stand_in",
]

_PACKAGE = "torchport.check.rules"


@record(frozen=True)
class RuleEntry:
    """One shipped rule's metadata; ``module`` is the file under ``check/rules/``."""

    code: str
    class_name: str
    module: str
    name: str
    default: bool
    intent: str  # an Intent value
    fix_safety: str  # a FixSafety value
    node_types: tuple[str, ...]  # names of ast classes
    call_attrs: frozenset[str] | None
    attr_names: frozenset[str] | None
    constants: frozenset[object] | None
    call_keywords: frozenset[str | None] = frozenset()
    default_contexts: frozenset[str] = frozenset({"bench", "code", "test"})  # _default_scope.py


class _LazyRuleMeta(type):
    """The metaclass of the catalog's rules: what the catalog lacks comes from the real class."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") or "_entry" not in cls.__dict__:
            raise AttributeError(name)
        return getattr(real_rule(cls), name)  # type: ignore[arg-type]

    @property
    def __doc__(cls) -> str | None:  # type: ignore[override]
        if "_entry" not in cls.__dict__:
            return None
        return real_rule(cls).__doc__  # type: ignore[arg-type]

    # `Rule` itself defines these (empty): data descriptors here come first.
    @property
    def valid(cls) -> tuple[str, ...]:
        return real_rule(cls).valid if "_entry" in cls.__dict__ else ()  # type: ignore[arg-type]

    @property
    def invalid(cls) -> tuple[Example, ...]:
        return real_rule(cls).invalid if "_entry" in cls.__dict__ else ()  # type: ignore[arg-type]


class LazyRule(Rule, metaclass=_LazyRuleMeta):
    """A shipped rule known from the catalog; its module is imported on the first ``check``."""

    _entry: ClassVar[RuleEntry]
    _real: ClassVar[type[Rule] | None] = None

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        real = real_rule(type(self))()
        # later calls go straight to the real rule's method (an instance attribute)
        self.check = real.check  # type: ignore[method-assign]
        return real.check(node, ctx)


def real_rule(cls: type[LazyRule]) -> type[Rule]:
    """The rule class ``cls`` stands for, its module imported now (once)."""
    found = cls.__dict__.get("_real")
    if found is None:
        entry = cls._entry
        module = importlib.import_module(f"{_PACKAGE}.{entry.module}")
        found = getattr(module, entry.class_name)
        if found.code != entry.code:
            raise TypeError(
                f"the rule catalog says {entry.class_name} in {entry.module} is {entry.code}, "
                f"but the class says {found.code}; update check/_catalog.py "
                "(tests/check/test_catalog.py prints the entries)"
            )
        cls._real = found
    return found  # type: ignore[no-any-return]


def _stand_in(entry: RuleEntry) -> type[LazyRule]:
    namespace: dict[str, object] = {
        "_entry": entry,
        "code": entry.code,
        "name": entry.name,
        "default": entry.default,
        "intent": Intent(entry.intent),
        "fix_safety": FixSafety(entry.fix_safety),
        "node_types": tuple(getattr(ast, t) for t in entry.node_types),
        "call_attrs": entry.call_attrs,
        "attr_names": entry.attr_names,
        "constants": entry.constants,
        "call_keywords": entry.call_keywords,
        "default_contexts": entry.default_contexts,
        "__qualname__": entry.class_name,
        "__module__": __name__,
    }
    return _LazyRuleMeta(entry.class_name, (LazyRule,), namespace)  # type: ignore[return-value]


_SHIPPED: dict[str, type[LazyRule]] = {}  # the stand-ins made so far, by class name


def stand_in(entry: RuleEntry) -> type[LazyRule]:
    """The stand-in of the shipped rule ``entry`` describes, made on first use (then kept).

    A class costs ~10 us to make: a run makes those of the rules it selects (14 of 64
    by default), not all of them (:func:`torchport.check._select.select_rules`).
    """
    found = _SHIPPED.get(entry.class_name)
    if found is None:
        found = _SHIPPED[entry.class_name] = _stand_in(entry)
    return found


def shipped_rules() -> tuple[type[LazyRule], ...]:
    """A stand-in for every shipped rule, by code; no rule module is imported."""
    return tuple(stand_in(entry) for entry in ENTRIES)


def shipped_rule(code: str) -> type[LazyRule] | None:
    """The stand-in of the shipped rule ``code`` (None: no such rule)."""
    entry = next((entry for entry in ENTRIES if entry.code == code), None)
    return None if entry is None else stand_in(entry)


def __getattr__(name: str) -> type[LazyRule]:
    # The stand-ins are attributes of this module by class name, so that pickle (the
    # worker pool) finds them again: `torchport.check._catalog.HardCodedCuda`.
    entry = next((entry for entry in ENTRIES if entry.class_name == name), None)
    if entry is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return stand_in(entry)


# Sorted by code. Generated: see the module docstring.
ENTRIES: tuple[RuleEntry, ...] = (
    RuleEntry(
        "TP101",
        "HardCodedCuda",
        "hard_coded_cuda",
        "hard-coded-cuda",
        True,
        "device",
        "unsafe",
        (
            "Call",
            "Assign",
            "AnnAssign",
            "arguments",
            "Dict",
        ),
        frozenset({"add_argument", "cuda", "device", "to"}),
        None,
        None,
        frozenset({"accelerator", "device", "map_location"}),
        default_contexts=frozenset({"code"}),
    ),
    RuleEntry(
        "TP102",
        "CudaSetDevice",
        "cuda_set_device",
        "cuda-set-device",
        False,
        "device",
        "unsafe",
        ("Call",),
        frozenset({"set_device"}),
        None,
        None,
    ),
    RuleEntry(
        "TP103",
        "IsCudaCheck",
        "is_cuda_check",
        "is-cuda-check",
        False,
        "device",
        "unsafe",
        ("Attribute",),
        None,
        frozenset({"is_cuda"}),
        None,
    ),
    RuleEntry(
        "TP104",
        "LegacyTensorConstructor",
        "legacy_tensor_constructor",
        "legacy-tensor-constructor",
        False,
        "device",
        "safe",
        ("Call",),
        frozenset(
            {
                "BFloat16Tensor",
                "BoolTensor",
                "ByteTensor",
                "CharTensor",
                "DoubleTensor",
                "FloatTensor",
                "HalfTensor",
                "IntTensor",
                "LongTensor",
                "ShortTensor",
            }
        ),
        None,
        None,
    ),
    RuleEntry(
        "TP105",
        "VariableWrapper",
        "variable_wrapper",
        "variable-wrapper",
        True,
        "device",
        "none",
        ("Call",),
        frozenset({"Variable"}),
        None,
        None,
    ),
    RuleEntry(
        "TP106",
        "CreateThenMove",
        "create_then_move",
        "create-then-move",
        False,
        "speed",
        "unsafe",
        ("Call",),
        frozenset({"cuda", "to"}),
        None,
        None,
    ),
    RuleEntry(
        "TP107",
        "DiscardedMove",
        "discarded_move",
        "discarded-move",
        True,
        "device",
        "unsafe",
        ("Expr",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP108",
        "Float64ToAccelerator",
        "float64_to_accelerator",
        "float64-to-accelerator",
        False,
        "device",
        "none",
        ("Call",),
        frozenset({"cuda", "double", "to"}),
        None,
        None,
        frozenset({"device", "dtype"}),
    ),
    RuleEntry(
        "TP109",
        "CudaOrCpuDeviceChoice",
        "cuda_or_cpu_device_choice",
        "cuda-or-cpu-device-choice",
        True,
        "device",
        "unsafe",
        (
            "If",
            "IfExp",
        ),
        None,
        None,
        None,
        default_contexts=frozenset({"code"}),
    ),
    RuleEntry(
        "TP110",
        "IntegerDeviceIndex",
        "integer_device_index",
        "integer-device-index",
        True,
        "device",
        "none",
        ("Call",),
        frozenset({"DDP", "DistributedDataParallel"}),
        None,
        None,
        default_contexts=frozenset({"bench", "code"}),
    ),
    RuleEntry(
        "TP111",
        "CudaTensorType",
        "cuda_tensor_type",
        "cuda-tensor-type",
        False,
        "device",
        "safe",
        (
            "Attribute",
            "Constant",
            "Call",
        ),
        frozenset({"type"}),
        frozenset(
            {
                "BFloat16Tensor",
                "BoolTensor",
                "ByteTensor",
                "CharTensor",
                "DoubleTensor",
                "FloatTensor",
                "HalfTensor",
                "IntTensor",
                "LongTensor",
                "ShortTensor",
            }
        ),
        frozenset(
            {
                "torch.cuda.BFloat16Tensor",
                "torch.cuda.BoolTensor",
                "torch.cuda.ByteTensor",
                "torch.cuda.CharTensor",
                "torch.cuda.DoubleTensor",
                "torch.cuda.FloatTensor",
                "torch.cuda.HalfTensor",
                "torch.cuda.IntTensor",
                "torch.cuda.LongTensor",
                "torch.cuda.ShortTensor",
            }
        ),
    ),
    RuleEntry(
        "TP112",
        "HardCodedMpsOrXpu",
        "hard_coded_mps_or_xpu",
        "hard-coded-mps-or-xpu",
        False,
        "device",
        "none",
        (
            "Call",
            "Assign",
        ),
        frozenset({"device", "ipu", "mlu", "mtia", "musa", "npu", "to", "xpu"}),
        None,
        None,
        frozenset({"device", "map_location"}),
    ),
    RuleEntry(
        "TP113",
        "HardCodedCudaDeviceType",
        "hard_coded_cuda_device_type",
        "hard-coded-cuda-device-type",
        False,
        "device",
        "none",
        ("Call",),
        frozenset(
            {
                "Generator",
                "GradScaler",
                "autocast",
                "get_autocast_dtype",
                "init_device_mesh",
                "is_autocast_enabled",
                "set_autocast_dtype",
                "set_autocast_enabled",
            }
        ),
        None,
        None,
        frozenset({"device_type"}),
    ),
    RuleEntry(
        "TP114",
        "DeviceComparedWithString",
        "device_compared_with_string",
        "device-compared-with-string",
        True,
        "device",
        "none",
        ("Compare",),
        None,
        None,
        None,
        default_contexts=frozenset({"bench", "code"}),
    ),
    RuleEntry(
        "TP115",
        "RuntimeCudaDeviceString",
        "runtime_cuda_device_string",
        "runtime-cuda-device-string",
        False,
        "device",
        "none",
        (
            "JoinedStr",
            "BinOp",
            "Call",
        ),
        frozenset({"format"}),
        None,
        None,
    ),
    RuleEntry(
        "TP116",
        "CudaFlagParameter",
        "cuda_flag_parameter",
        "cuda-flag-parameter",
        False,
        "device",
        "none",
        ("arguments",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP117",
        "FactoryBesideTensorArguments",
        "factory_beside_tensor_arguments",
        "factory-beside-tensor-arguments",
        False,
        "device",
        "none",
        (
            "FunctionDef",
            "AsyncFunctionDef",
        ),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP118",
        "FactoryBesidePlacedSiblings",
        "factory_beside_placed_siblings",
        "factory-beside-placed-siblings",
        False,
        "device",
        "none",
        ("ClassDef",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP119",
        "CudaHelperCall",
        "cuda_helper_call",
        "cuda-helper-call",
        False,
        "device",
        "none",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP120",
        "CpuFallbackWithoutCuda",
        "cpu_fallback_without_cuda",
        "cpu-fallback-without-cuda",
        False,
        "device",
        "none",
        (
            "If",
            "IfExp",
        ),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP121",
        "CpuDeviceArgument",
        "cpu_device_argument",
        "cpu-device-argument",
        False,
        "device",
        "none",
        (
            "Call",
            "FunctionDef",
            "AsyncFunctionDef",
        ),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP122",
        "CudaAutocastQuery",
        "cuda_autocast_query",
        "cuda-autocast-query",
        False,
        "device",
        "unsafe",
        ("Call",),
        frozenset(
            {
                "get_autocast_cpu_dtype",
                "get_autocast_gpu_dtype",
                "is_autocast_cpu_enabled",
                "is_autocast_enabled",
                "set_autocast_cpu_dtype",
                "set_autocast_cpu_enabled",
                "set_autocast_enabled",
                "set_autocast_gpu_dtype",
            }
        ),
        None,
        None,
        default_contexts=frozenset({"code"}),
    ),
    RuleEntry(
        "TP123",
        "LightningGpuAccelerator",
        "lightning_gpu_accelerator",
        "lightning-gpu-accelerator",
        False,
        "device",
        "none",
        ("Call",),
        frozenset({"Fabric", "Trainer", "from_argparse_args"}),
        None,
        None,
        frozenset({"accelerator"}),
    ),
    RuleEntry(
        "TP124",
        "IntegerDeviceArgument",
        "integer_device_argument",
        "integer-device-argument",
        False,
        "device",
        "none",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP201",
        "NumpyWithoutCpu",
        "numpy_without_cpu",
        "numpy-without-cpu",
        False,
        "device",
        "safe",
        ("Call",),
        frozenset({"numpy"}),
        None,
        None,
    ),
    RuleEntry(
        "TP202",
        "SyncInLoop",
        "sync_in_loop",
        "sync-in-loop",
        False,
        "speed",
        "none",
        ("Call",),
        frozenset({"cpu", "item", "print", "tolist"}),
        None,
        None,
    ),
    RuleEntry(
        "TP203",
        "BlockingBatchCopy",
        "blocking_batch_copy",
        "blocking-batch-copy",
        True,
        "speed",
        "unsafe",
        ("Call",),
        frozenset({"to"}),
        None,
        None,
        default_contexts=frozenset({"bench", "code"}),
    ),
    RuleEntry(
        "TP204",
        "NonBlockingToCpu",
        "non_blocking_to_cpu",
        "non-blocking-to-cpu",
        True,
        "device",
        "safe",
        ("Call",),
        frozenset({"to"}),
        None,
        None,
    ),
    RuleEntry(
        "TP205",
        "UnguardedPinMemory",
        "unguarded_pin_memory",
        "unguarded-pin-memory",
        False,
        "device",
        "safe",
        ("Call",),
        frozenset({"pin_memory"}),
        None,
        None,
        default_contexts=frozenset({"code"}),
    ),
    RuleEntry(
        "TP301",
        "LoadWithoutMapLocation",
        "load_without_map_location",
        "load-without-map-location",
        True,
        "device",
        "unsafe",
        ("Call",),
        frozenset({"load"}),
        None,
        None,
        default_contexts=frozenset({"code"}),
    ),
    RuleEntry(
        "TP302",
        "LoadWeightsOnlyFalse",
        "load_weights_only_false",
        "load-weights-only-false",
        False,
        "safety",
        "none",
        ("Call",),
        frozenset(),
        None,
        None,
        frozenset({"weights_only", None}),
    ),
    RuleEntry(
        "TP303",
        "DataloaderWithoutPinMemory",
        "dataloader_without_pin_memory",
        "dataloader-without-pin-memory",
        False,
        "speed",
        "unsafe",
        ("Call",),
        frozenset({"DataLoader"}),
        None,
        None,
    ),
    RuleEntry(
        "TP304",
        "LoadWithPickleModule",
        "load_with_pickle_module",
        "load-with-pickle-module",
        False,
        "safety",
        "none",
        ("Call",),
        frozenset({"load", "load_state_dict_from_url", "load_url"}),
        None,
        None,
    ),
    RuleEntry(
        "TP305",
        "LoadWithUnpackedArguments",
        "load_with_unpacked_arguments",
        "load-with-unpacked-arguments",
        False,
        "safety",
        "none",
        ("Call",),
        frozenset({"load", "load_state_dict_from_url", "load_url"}),
        None,
        None,
    ),
    RuleEntry(
        "TP306",
        "ForceNoWeightsOnlyEnv",
        "force_no_weights_only_env",
        "force-no-weights-only-env",
        True,
        "safety",
        "none",
        (
            "Assign",
            "Call",
        ),
        frozenset({"putenv", "setdefault", "update"}),
        None,
        None,
    ),
    RuleEntry(
        "TP307",
        "HubLoadWithoutWeightsOnly",
        "hub_load_without_weights_only",
        "hub-load-without-weights-only",
        False,
        "safety",
        "unsafe",
        ("Call",),
        frozenset({"load", "load_state_dict_from_url", "load_url"}),
        None,
        None,
    ),
    RuleEntry(
        "TP308",
        "WholeModelLoad",
        "whole_model_load",
        "whole-model-load",
        False,
        "safety",
        "none",
        ("Call",),
        frozenset({"load", "load_state_dict_from_url", "load_url"}),
        None,
        None,
    ),
    RuleEntry(
        "TP309",
        "WholeModelSave",
        "whole_model_save",
        "whole-model-save",
        False,
        "safety",
        "none",
        ("Call",),
        frozenset({"save"}),
        None,
        None,
    ),
    RuleEntry(
        "TP310",
        "ProjectLoaderWithoutMapLocation",
        "project_loader_without_map_location",
        "project-loader-without-map-location",
        True,
        "device",
        "none",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP401",
        "CudaOnlyApi",
        "cuda_only_api",
        "cuda-only-api",
        False,
        "device",
        "unsafe",
        ("Call",),
        frozenset(
            {
                "current_device",
                "device",
                "device_count",
                "empty_cache",
                "get_device_capability",
                "get_device_name",
                "get_device_properties",
                "is_available",
                "max_memory_allocated",
                "max_memory_reserved",
                "mem_get_info",
                "memory_allocated",
                "memory_reserved",
                "memory_stats",
                "reset_accumulated_memory_stats",
                "reset_peak_memory_stats",
                "synchronize",
            }
        ),
        None,
        None,
    ),
    RuleEntry(
        "TP402",
        "CudaManualSeed",
        "cuda_manual_seed",
        "cuda-manual-seed",
        True,
        "device",
        "unsafe",
        ("Call",),
        frozenset({"manual_seed", "manual_seed_all"}),
        None,
        None,
        default_contexts=frozenset({"bench", "code"}),
    ),
    RuleEntry(
        "TP403",
        "DeprecatedCudaAmp",
        "deprecated_cuda_amp",
        "deprecated-cuda-amp",
        False,
        "device",
        "unsafe",
        (
            "Call",
            "Import",
            "ImportFrom",
            "Attribute",
        ),
        frozenset({"GradScaler", "autocast"}),
        frozenset({"GradScaler", "autocast"}),
        None,
    ),
    RuleEntry(
        "TP404",
        "HardCodedNccl",
        "hard_coded_nccl",
        "hard-coded-nccl",
        False,
        "device",
        "unsafe",
        ("Call",),
        frozenset({"init_process_group"}),
        None,
        None,
    ),
    RuleEntry(
        "TP405",
        "DataParallel",
        "data_parallel",
        "data-parallel",
        False,
        "device",
        "none",
        ("Call",),
        frozenset({"DataParallel"}),
        None,
        None,
    ),
    RuleEntry(
        "TP406",
        "CudaStreamOrEvent",
        "cuda_stream_or_event",
        "cuda-stream-or-event",
        False,
        "device",
        "none",
        ("Call",),
        frozenset(
            {
                "Event",
                "Stream",
                "StreamContext",
                "current_stream",
                "default_stream",
                "set_stream",
                "stream",
            }
        ),
        None,
        None,
    ),
    RuleEntry(
        "TP407",
        "CudaMatmulPrecision",
        "cuda_matmul_precision",
        "cuda-matmul-precision",
        False,
        "device",
        "unsafe",
        ("Assign",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP408",
        "CudaAmpImport",
        "cuda_amp_import",
        "cuda-amp-import",
        False,
        "device",
        "none",
        (
            "Import",
            "ImportFrom",
        ),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP501",
        "ModelNotOnDevice",
        "model_not_on_device",
        "model-not-on-device",
        False,
        "port",
        "safe",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP502",
        "BatchNotOnDevice",
        "batch_not_on_device",
        "batch-not-on-device",
        False,
        "port",
        "safe",
        ("Module",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP503",
        "TensorNotOnDevice",
        "tensor_not_on_device",
        "tensor-not-on-device",
        False,
        "port",
        "safe",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP504",
        "TensorOnCpuInModule",
        "tensor_on_cpu_in_module",
        "tensor-on-cpu-in-module",
        False,
        "port",
        "safe",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP505",
        "LoaderNotPinned",
        "loader_not_pinned",
        "loader-not-pinned",
        False,
        "port",
        "safe",
        ("Call",),
        frozenset({"DataLoader"}),
        None,
        None,
    ),
    RuleEntry(
        "TP506",
        "NumpyOfDeviceTensor",
        "numpy_of_device_tensor",
        "numpy-of-device-tensor",
        False,
        "port",
        "safe",
        ("Call",),
        frozenset({"numpy"}),
        None,
        None,
    ),
    RuleEntry(
        "TP507",
        "CpuOnlyDevice",
        "cpu_only_device",
        "cpu-only-device",
        False,
        "port",
        "safe",
        ("Assign",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP508",
        "ItemCountPerBatch",
        "item_count_per_batch",
        "item-count-per-batch",
        False,
        "port",
        "safe",
        (
            "For",
            "AsyncFor",
        ),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP509",
        "TypeToCpuTensorType",
        "type_to_cpu_tensor_type",
        "type-to-cpu-tensor-type",
        False,
        "port",
        "safe",
        ("Call",),
        frozenset({"type"}),
        None,
        None,
    ),
    RuleEntry(
        "TP510",
        "ModuleBuiltInForward",
        "module_built_in_forward",
        "module-built-in-forward",
        False,
        "port",
        "safe",
        ("Call",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP511",
        "HostArgumentOnDevice",
        "host_argument_on_device",
        "host-argument-on-device",
        False,
        "port",
        "safe",
        ("Call",),
        frozenset({"pack_padded_sequence"}),
        None,
        None,
    ),
    RuleEntry(
        "TP520",
        "UnportableBatch",
        "unportable_batch",
        "unportable-batch",
        False,
        "port",
        "none",
        ("Module",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP521",
        "TensorFromLibrary",
        "tensor_from_library",
        "tensor-from-library",
        False,
        "port",
        "none",
        ("Module",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP522",
        "DeviceTensorToNumpy",
        "device_tensor_to_numpy",
        "device-tensor-to-numpy",
        False,
        "port",
        "none",
        (
            "Call",
            "Compare",
            "BinOp",
            "AugAssign",
        ),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP523",
        "UntrackedValue",
        "untracked_value",
        "untracked-value",
        False,
        "port",
        "none",
        ("Module",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP901",
        "ToInLoop",
        "to_in_loop",
        "to-in-loop",
        False,
        "speed",
        "none",
        ("Call",),
        frozenset({"cuda", "to"}),
        None,
        None,
    ),
    RuleEntry(
        "TP902",
        "CudaTypeCompare",
        "cuda_type_compare",
        "cuda-type-compare",
        False,
        "device",
        "none",
        ("Compare",),
        None,
        None,
        None,
    ),
    RuleEntry(
        "TP903",
        "LegacyCpuTensorConstructor",
        "legacy_cpu_tensor_constructor",
        "legacy-cpu-tensor-constructor",
        False,
        "device",
        "safe",
        ("Call",),
        frozenset(
            {
                "BFloat16Tensor",
                "BoolTensor",
                "ByteTensor",
                "CharTensor",
                "DoubleTensor",
                "FloatTensor",
                "HalfTensor",
                "IntTensor",
                "LongTensor",
                "ShortTensor",
            }
        ),
        None,
        None,
    ),
    RuleEntry(
        "TP904",
        "PlainVariableWrapper",
        "plain_variable_wrapper",
        "plain-variable-wrapper",
        False,
        "device",
        "safe",
        ("Call",),
        frozenset({"Variable"}),
        None,
        None,
    ),
    RuleEntry(
        "TP905",
        "CreateThenMoveOnce",
        "create_then_move_once",
        "create-then-move-once",
        False,
        "speed",
        "unsafe",
        ("Call",),
        frozenset({"cuda", "to"}),
        None,
        None,
    ),
)
