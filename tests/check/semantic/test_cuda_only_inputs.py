"""What is made for a CUDA-only library (TensorRT, torch2trt, CuPy) is CUDA code by nature.

Generated functions make a tensor on CUDA (``x = torch.ones(...).cuda()``, or move a
model in place: ``model.cuda()``), then run a few statements drawn at random: a call of
a CUDA-only library's name that takes the tensor (``torch2trt(model, [x])``), one that
does not, portable code; the library is imported at the top of the module or in the
function's own block. The oracle is written apart: the CUDA is the library's input,
and left by TP101, only when the function's block imports the library itself or a
later statement of the block hands that very name to the library; a module-level
import says nothing about the rest of the module, which stays reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

MADE = {"x = torch.ones(1, 3, 8, 8).cuda()": "x", "model.cuda()": "model"}
LATER = {  # a later statement, the name it hands to the library (None: no library call)
    "trt = torch2trt(model, [x], fp16_mode=True)": ("model", "x"),
    "engine = TRTModule()": (),
    "y = model(x)": None,
    "print(x.shape)": None,
}
IMPORTS = ("from torch2trt import torch2trt, TRTModule", "import tensorrt as trt")


@given(
    made=st.sampled_from(sorted(MADE)),
    later=st.lists(st.sampled_from(sorted(LATER)), max_size=2),
    imported_in_block=st.booleans(),
    library=st.sampled_from(IMPORTS),
)
def test_an_input_of_a_cuda_only_library_is_left(
    made: str, later: list[str], imported_in_block: bool, library: str
) -> None:
    body = [library] if imported_in_block else []
    body += [made, *later, "return model"]
    top = "" if imported_in_block else library + "\n"
    source = f"import torch\n{top}\n\ndef convert(model):\n" + "".join(f"    {s}\n" for s in body)
    found = check_text(source, "m.py", ruleset_for(["TP101"], None)).findings
    name = MADE[made]
    fed = any(name in (LATER[s] or ()) for s in later) and "torch2trt" in library
    assert bool(found) != (imported_in_block or fed), source


@given(
    imported_in_block=st.booleans(),
    library=st.sampled_from([*IMPORTS, "from mylib import TRTModule"]),
)
def test_a_tensorrt_engine_s_state_needs_no_map_location(
    imported_in_block: bool, library: str
) -> None:
    block = [library] if imported_in_block else []
    block += ["model_trt = TRTModule()", "model_trt.load_state_dict(torch.load(trt_file))"]
    top = "" if imported_in_block else library + "\n"
    source = (
        f"import torch\n{top}\n\ndef evaluate(model, trt_file):\n    if trt_file is not None:\n"
        + "".join(f"        {s}\n" for s in block)
        + "    return model\n"
    )
    found = check_text(source, "m.py", ruleset_for(["TP301"], None)).findings
    # the oracle: only a block that imports a CUDA-only library itself is TensorRT's
    assert bool(found) != (imported_in_block and "mylib" not in library), source
