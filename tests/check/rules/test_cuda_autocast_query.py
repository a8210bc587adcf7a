"""TP122: the autocast queries that name no device type (held-out recall round 5g).

eole-nlp/eole 0443987 (PR #365): ``if torch.is_autocast_enabled(): dtype =
torch.get_autocast_gpu_dtype()`` beside ``device = emb.device`` asked CUDA's autocast on
every device; the port asks ``is_autocast_enabled(device.type)``.

The oracles, apart from the rule: a query is reported when it is one of CUDA's device-less
spellings (with the argument count that makes it so) and no test of the device type, no
``try``/``except TypeError`` around the device-type spelling and no ``hasattr`` test decides
for it; a CPU twin only as the other arm of such a query. Torch itself is the second
oracle: inside ``torch.autocast("cpu")`` on this machine the fixed query reads the CPU's
autocast (on, bfloat16) where the original read CUDA's (off, float16).
"""

from __future__ import annotations

import warnings

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source
from torchport.check.rules._snippets import DEVICE_LINE

# (the query's text with {t} for torch's name, its function, True when it is CUDA's)
QUERIES = (
    ("{t}.is_autocast_enabled()", "is_autocast_enabled", True),
    ("{t}.get_autocast_gpu_dtype()", "get_autocast_gpu_dtype", True),
    ("{t}.set_autocast_gpu_dtype({t}.float16)", "set_autocast_gpu_dtype", True),
    ("{t}.set_autocast_enabled(False)", "set_autocast_enabled", True),
    ("{t}.is_autocast_enabled('cpu')", "is_autocast_enabled", False),
    ("{t}.get_autocast_dtype(device.type)", "get_autocast_dtype", False),
    ("{t}.set_autocast_enabled(device.type, False)", "set_autocast_enabled", False),
    ("{t}.is_autocast_cpu_enabled()", "is_autocast_cpu_enabled", False),
    ("{t}.get_autocast_cpu_dtype()", "get_autocast_cpu_dtype", False),
)
# How torch (or the function) is named: "import torch", an alias, a from-import, an alias of it.
SPELLINGS = ("torch", "th", "from", "from-as")
# (the statement's shape with {q} for the query, and whether the query is in an `if` test)
SHAPES = (
    "v = {q}",
    "if {q}:\n    v = 1",
    "v = x.to({q})",
    "v = {{'on': {q}}}",
    "v = ({q}, 2)[0]",
)
# (what encloses the statement; True when it decides for the query)
ENCLOSING = (
    ("", False),
    ("if device.type == 'cuda':\n", True),
    ("if x.is_cuda:\n", True),
    ("try:\n    v = {t}.is_autocast_enabled(device.type)\nexcept TypeError:\n", True),
    ("if hasattr({t}, 'get_autocast_dtype'):\n    pass\nelse:\n", True),
    ("if flag:\n", False),
    ("for _ in range(2):\n", False),
)


def _spell(query: str, function: str, spelling: str) -> tuple[str, str]:
    """(the import line, the query as that import names it)."""
    if spelling in ("torch", "th"):
        imp = "import torch" if spelling == "torch" else "import torch as th"
        return imp, query.format(t=spelling)
    alias = function if spelling == "from" else "q_"
    named = function if spelling == "from" else f"{function} as q_"
    imp = f"import torch\nfrom torch import {named}"
    return imp, query.format(t="torch").replace(f"torch.{function}(", f"{alias}(", 1)


def _program(query: str, function: str, spelling: str, shape: str, enclosing: str) -> str:
    imp, q = _spell(query, function, spelling)
    t = "th" if spelling == "th" else "torch"
    stmt = shape.format(q=q)
    if enclosing:
        head = enclosing.format(t=t)
        stmt = head + "\n".join("    " + s for s in stmt.split("\n"))
    body = "\n".join("    " + s for s in stmt.split("\n"))
    return f"{imp}\n\n\ndef step(x, device, flag):\n{body}\n    return x\n"


def _lines(source: str) -> list[int]:
    return [f.line for f in check_source(source, "model.py", select=["TP122"])]


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(QUERIES),
    st.sampled_from(SPELLINGS),
    st.sampled_from(SHAPES),
    st.sampled_from(ENCLOSING),
)
def test_a_device_less_autocast_query_is_reported_unless_something_decides_for_it(
    query: tuple[str, str, bool], spelling: str, shape: str, enclosing: tuple[str, bool]
) -> None:
    source = _program(query[0], query[1], spelling, shape, enclosing[0])
    expected = query[2] and not enclosing[1]
    assert bool(_lines(source)) is expected, source


def test_a_cpu_twin_is_reported_only_as_the_other_arm_of_a_cuda_query() -> None:
    chain = (
        "import torch\n\n\ndef dtype_of(x):\n"
        "    if torch.is_autocast_enabled():\n"
        "        return torch.get_autocast_gpu_dtype()\n"
        "    elif torch.is_autocast_cpu_enabled():\n"
        "        return torch.get_autocast_cpu_dtype()\n"
        "    return x.dtype\n"
    )
    assert _lines(chain) == [5, 6, 7, 8]
    either = "import torch\n\non = torch.is_autocast_enabled() or torch.is_autocast_cpu_enabled()\n"
    assert _lines(either) == [3, 3]
    alone = (
        "import torch\n\nif torch.is_autocast_cpu_enabled():\n"
        "    d = torch.get_autocast_cpu_dtype()\n"
    )
    assert _lines(alone) == []


def test_a_record_of_both_devices_is_reported_without_a_fix() -> None:
    # torch.utils.checkpoint's old form, copied into projects: CUDA's state kept apart on purpose
    source = (
        "import torch\n\n\ndef save(ctx):\n"
        "    ctx.gpu = {'enabled': torch.is_autocast_enabled(),"
        " 'dtype': torch.get_autocast_gpu_dtype()}\n"
        "    ctx.cpu = {'enabled': torch.is_autocast_cpu_enabled(),"
        " 'dtype': torch.get_autocast_cpu_dtype()}\n"
    )
    assert _lines(source) == [5, 5]
    assert fix_source(source, unsafe=True, select=["TP122"]) == source


def _run(source: str) -> object:
    space: dict[str, object] = {}
    exec(compile(source, "model.py", "exec"), space)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # get_autocast_gpu_dtype's own
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return space["cache_dtype"](torch.ones(2))  # type: ignore[operator]


@given(st.sampled_from(("torch", "th")), st.booleans())
@settings(max_examples=8, deadline=None)
def test_the_fixed_query_reads_the_programs_device(t: str, chained: bool) -> None:
    # eole's decoder (eole/decoders/transformer.py:1022 at 2173cec), as a function
    query = f"{t}.get_autocast_gpu_dtype()"
    use = f"emb.to({query}).dtype" if chained else query
    source = (
        f"import torch{' as th' if t == 'th' else ''}\n\n\ndef cache_dtype(emb):\n"
        f"    dtype = emb.dtype\n    if {t}.is_autocast_enabled():\n"
        f"        dtype = {use}\n    return dtype\n"
    )
    assert _lines(source) == [6, 7]
    fixed = fix_source(source, unsafe=True, select=["TP122"])
    assert fixed != source and "gpu" not in fixed and not _lines(fixed), fixed
    assert fix_source(fixed, unsafe=True, select=["TP122"]) == fixed
    before, after = _run(source), _run(fixed)
    assert before == torch.float32  # CUDA's autocast is off on a machine without CUDA
    if not torch.accelerator.is_available():  # the picked device is the CPU: its autocast
        assert after == torch.bfloat16


def test_a_target_torch_without_the_device_type_argument_gets_no_fix() -> None:
    # the device is defined already (torch.accelerator, 2.6): only the queries' own API is judged
    source = (
        "import torch\n\n"
        f"{DEVICE_LINE}\n\n"
        "def f(x):\n    if torch.is_autocast_enabled():\n"
        "        torch.set_autocast_enabled(False)\n"
        "        return x.to(torch.get_autocast_gpu_dtype())\n"
    )
    assert fix_source(source, unsafe=True, select=["TP122"], target_torch="2.3") == source
    fixed = fix_source(source, unsafe=True, select=["TP122"], target_torch="2.4")
    assert "is_autocast_enabled(device.type)" in fixed, fixed
    assert "set_autocast_enabled(device.type, False)" in fixed, fixed
