"""Every checker rule, one per module, named after the rule."""

from __future__ import annotations

from torchport.check._rule import Rule
from torchport.check.rules.batch_not_on_device import BatchNotOnDevice
from torchport.check.rules.blocking_batch_copy import BlockingBatchCopy
from torchport.check.rules.cpu_only_device import CpuOnlyDevice
from torchport.check.rules.create_then_move import CreateThenMove
from torchport.check.rules.cuda_flag_parameter import CudaFlagParameter
from torchport.check.rules.cuda_manual_seed import CudaManualSeed
from torchport.check.rules.cuda_matmul_precision import CudaMatmulPrecision
from torchport.check.rules.cuda_only_api import CudaOnlyApi
from torchport.check.rules.cuda_or_cpu_device_choice import CudaOrCpuDeviceChoice
from torchport.check.rules.cuda_set_device import CudaSetDevice
from torchport.check.rules.cuda_stream_or_event import CudaStreamOrEvent
from torchport.check.rules.cuda_tensor_type import CudaTensorType
from torchport.check.rules.cuda_type_compare import CudaTypeCompare
from torchport.check.rules.data_parallel import DataParallel
from torchport.check.rules.dataloader_without_pin_memory import DataloaderWithoutPinMemory
from torchport.check.rules.deprecated_cuda_amp import DeprecatedCudaAmp
from torchport.check.rules.device_compared_with_string import DeviceComparedWithString
from torchport.check.rules.device_tensor_to_numpy import DeviceTensorToNumpy
from torchport.check.rules.discarded_move import DiscardedMove
from torchport.check.rules.float64_to_accelerator import Float64ToAccelerator
from torchport.check.rules.force_no_weights_only_env import ForceNoWeightsOnlyEnv
from torchport.check.rules.hard_coded_cuda import HardCodedCuda
from torchport.check.rules.hard_coded_cuda_device_type import HardCodedCudaDeviceType
from torchport.check.rules.hard_coded_mps_or_xpu import HardCodedMpsOrXpu
from torchport.check.rules.hard_coded_nccl import HardCodedNccl
from torchport.check.rules.hub_load_without_weights_only import HubLoadWithoutWeightsOnly
from torchport.check.rules.integer_device_index import IntegerDeviceIndex
from torchport.check.rules.is_cuda_check import IsCudaCheck
from torchport.check.rules.item_count_per_batch import ItemCountPerBatch
from torchport.check.rules.legacy_cpu_tensor_constructor import LegacyCpuTensorConstructor
from torchport.check.rules.legacy_tensor_constructor import LegacyTensorConstructor
from torchport.check.rules.load_weights_only_false import LoadWeightsOnlyFalse
from torchport.check.rules.load_with_pickle_module import LoadWithPickleModule
from torchport.check.rules.load_with_unpacked_arguments import LoadWithUnpackedArguments
from torchport.check.rules.load_without_map_location import LoadWithoutMapLocation
from torchport.check.rules.loader_not_pinned import LoaderNotPinned
from torchport.check.rules.model_not_on_device import ModelNotOnDevice
from torchport.check.rules.module_built_in_forward import ModuleBuiltInForward
from torchport.check.rules.non_blocking_to_cpu import NonBlockingToCpu
from torchport.check.rules.numpy_of_device_tensor import NumpyOfDeviceTensor
from torchport.check.rules.numpy_without_cpu import NumpyWithoutCpu
from torchport.check.rules.plain_variable_wrapper import PlainVariableWrapper
from torchport.check.rules.runtime_cuda_device_string import RuntimeCudaDeviceString
from torchport.check.rules.sync_in_loop import SyncInLoop
from torchport.check.rules.tensor_from_library import TensorFromLibrary
from torchport.check.rules.tensor_not_on_device import TensorNotOnDevice
from torchport.check.rules.tensor_on_cpu_in_module import TensorOnCpuInModule
from torchport.check.rules.to_in_loop import ToInLoop
from torchport.check.rules.type_to_cpu_tensor_type import TypeToCpuTensorType
from torchport.check.rules.unportable_batch import UnportableBatch
from torchport.check.rules.untracked_value import UntrackedValue
from torchport.check.rules.variable_wrapper import VariableWrapper
from torchport.check.rules.whole_model_load import WholeModelLoad
from torchport.check.rules.whole_model_save import WholeModelSave

__all__ = ["RULES"]

RULES: tuple[type[Rule], ...] = (
    HardCodedCuda,  # TP101
    CudaSetDevice,  # TP102
    IsCudaCheck,  # TP103
    LegacyTensorConstructor,  # TP104
    VariableWrapper,  # TP105
    CreateThenMove,  # TP106
    DiscardedMove,  # TP107
    Float64ToAccelerator,  # TP108
    CudaOrCpuDeviceChoice,  # TP109
    IntegerDeviceIndex,  # TP110
    CudaTensorType,  # TP111
    HardCodedMpsOrXpu,  # TP112
    HardCodedCudaDeviceType,  # TP113
    DeviceComparedWithString,  # TP114
    RuntimeCudaDeviceString,  # TP115
    CudaFlagParameter,  # TP116
    NumpyWithoutCpu,  # TP201
    SyncInLoop,  # TP202
    BlockingBatchCopy,  # TP203
    NonBlockingToCpu,  # TP204
    LoadWithoutMapLocation,  # TP301
    LoadWeightsOnlyFalse,  # TP302
    DataloaderWithoutPinMemory,  # TP303
    LoadWithPickleModule,  # TP304
    LoadWithUnpackedArguments,  # TP305
    ForceNoWeightsOnlyEnv,  # TP306
    HubLoadWithoutWeightsOnly,  # TP307
    WholeModelLoad,  # TP308
    WholeModelSave,  # TP309
    CudaOnlyApi,  # TP401
    CudaManualSeed,  # TP402
    DeprecatedCudaAmp,  # TP403
    HardCodedNccl,  # TP404
    DataParallel,  # TP405
    CudaStreamOrEvent,  # TP406
    CudaMatmulPrecision,  # TP407
    ModelNotOnDevice,  # TP501
    BatchNotOnDevice,  # TP502
    TensorNotOnDevice,  # TP503
    TensorOnCpuInModule,  # TP504
    LoaderNotPinned,  # TP505
    NumpyOfDeviceTensor,  # TP506
    CpuOnlyDevice,  # TP507
    ItemCountPerBatch,  # TP508
    TypeToCpuTensorType,  # TP509
    ModuleBuiltInForward,  # TP510
    UnportableBatch,  # TP520
    TensorFromLibrary,  # TP521
    DeviceTensorToNumpy,  # TP522
    UntrackedValue,  # TP523
    ToInLoop,  # TP901
    CudaTypeCompare,  # TP902
    LegacyCpuTensorConstructor,  # TP903
    PlainVariableWrapper,  # TP904
)
