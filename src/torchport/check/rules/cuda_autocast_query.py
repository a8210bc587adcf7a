"""TP122 cuda-autocast-query: ``torch.is_autocast_enabled()``, ``get_autocast_gpu_dtype()``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._autocast_queries import TAILS, autocast_query
from torchport.check.rules._snippets import DEVICE_LINE
from torchport.check.rules._test_code import benchmark_code, collected_by_a_test_runner


class CudaAutocastQuery(Rule):
    """## What it does
    Finds the autocast queries that name no device type and so ask about CUDA:
    `torch.is_autocast_enabled()`, `torch.get_autocast_gpu_dtype()`,
    `torch.set_autocast_gpu_dtype(dtype)`, `torch.set_autocast_enabled(flag)`; a CPU
    twin (`torch.is_autocast_cpu_enabled()`, `torch.get_autocast_cpu_dtype()`, ...) only
    as the other arm of such a query (`if ...: elif torch.is_autocast_cpu_enabled():`),
    where the pair stands for the program's device. Left alone: the arm for old torches
    (`except TypeError:` after the device-type spelling, a version or `hasattr` test),
    a branch under a test of the device type (`if x.device.type == "cuda":`), and test
    or benchmark code. (`torch.is_autocast_enabled("cuda")` is TP113's.)

    ## Why is this bad?
    On MPS, XPU or the CPU the query reads CUDA's autocast: "off", while
    `torch.autocast(device.type)` is on, so the half-precision path it guards (a cast
    to the autocast dtype, a cache made in that dtype) is skipped there, or a setter
    changes CUDA's state instead of the device's. Ask about the program's device:
    `torch.is_autocast_enabled(device.type)`, `torch.get_autocast_dtype(device.type)`.

    ## Fix safety
    The fix writes the device-type spelling (torch >= 2.4) with the type of the file's
    one device (defined when there is none). On a CUDA machine nothing changes;
    elsewhere the query now reads that device's autocast, where it read CUDA's (off):
    unsafe. Not fixed where the same function asks a CPU twin too (a record of each
    device's state, restored for each) or where no device can be named.

    ## Why is it off by default?
    New (held-out recall round 5g), not yet judged on a precision sample; much of what
    it finds is in CUDA or Triton kernel code. `--extend-select TP122` runs it.
    """

    code = "TP122"
    name = "cuda-autocast-query"
    intent = Intent.DEVICE
    default = False
    default_contexts = frozenset({"code"})
    message = "pass `device.type` to the autocast query: with none it asks about CUDA's autocast"
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = TAILS
    valid = (
        "import torch\n\nif torch.is_autocast_enabled(device.type):\n"
        "    x = x.to(torch.get_autocast_dtype(device.type))\n",
        'import torch\n\nok = torch.is_autocast_enabled("cuda")\n',
        "import torch\n\nif torch.is_autocast_cpu_enabled():\n"
        "    dtype = torch.get_autocast_cpu_dtype()\n",
        "import torch\n\ntry:\n    on = torch.is_autocast_enabled(device_type)\n"
        "except TypeError:  # torch < 2.4\n    on = torch.is_autocast_enabled()\n",
        'import torch\n\nif x.device.type == "cuda":\n    dtype = torch.get_autocast_gpu_dtype()\n',
    )
    invalid = (
        Example(
            "import torch\n\n"
            "def cache_dtype(emb):\n"
            "    if torch.is_autocast_enabled():\n"
            "        return torch.get_autocast_gpu_dtype()\n"
            "    return emb.dtype\n",
            fixed="import torch\n\n"
            f"{DEVICE_LINE}"
            "\n"
            "def cache_dtype(emb):\n"
            "    if torch.is_autocast_enabled(device.type):\n"
            "        return torch.get_autocast_dtype(device.type)\n"
            "    return emb.dtype\n",
            count=2,
        ),
        Example(
            "import torch\n\n"
            "if torch.is_autocast_enabled():\n"
            "    dtype = torch.get_autocast_gpu_dtype()\n"
            "elif torch.is_autocast_cpu_enabled():\n"
            "    dtype = torch.get_autocast_cpu_dtype()\n",
            count=4,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        if collected_by_a_test_runner(ctx) or benchmark_code(ctx):
            return  # a test or benchmark of CUDA's autocast (`rules/_test_code.py`)
        found = autocast_query(self, node, ctx)
        if found is not None:
            yield found
