"""TP501 on generated ``from_pretrained`` calls: never ``.to()`` a model its loader placed.

Oracle (by hand): an option that places or quantizes the model (``device_map``,
``load_in_8bit``/``load_in_4bit``, ``quantization_config``, in a keyword or a ``**``
dict literal), or a ``**`` of unknown contents, means a finding without a fix (the
model's inputs must go to ``model.device``: the port says so rather than call it
done); otherwise the fix appends ``.to(device)``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source

OPTIONS = {
    'device_map="auto"': "placed",
    'device_map={"": 0}': "placed",
    "load_in_8bit=True": "placed",
    "load_in_4bit=True": "placed",
    "quantization_config=bnb": "placed",
    '**{"device_map": "auto"}': "placed",
    "torch_dtype=torch.float16": "neutral",
    'revision="main"': "neutral",
    '**{"torch_dtype": torch.float16}': "neutral",
    "**options": "unknown",
    "**cfg.kwargs": "unknown",
}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=3, unique=True))
def test_a_placed_model_is_never_moved(options: list[str]) -> None:
    args = ", ".join(['"name"', *sorted(options, key=lambda o: o.startswith("**"))])
    source = (
        "import torch\nfrom transformers import AutoModel\n\n"
        f"def run(options, cfg, bnb, x):\n    model = AutoModel.from_pretrained({args})\n"
        "    return model(x)\n"
    )
    kinds = {OPTIONS[o] for o in options}
    found = [f for f in check_source(source, select=["TP501"]) if f.line == 5]
    fixed = fix_source(source, select=["TP501"])
    if "placed" in kinds or "unknown" in kinds:
        assert found and all(f.fix is None for f in found), source
        assert ".to(" not in fixed, fixed
    else:
        assert found and ").to(device)" in fixed, fixed
