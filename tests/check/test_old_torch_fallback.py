"""The ``except`` arm that runs only on an older torch gets no advice about the newer one.

TP308 (a whole-model load) and TP403 (``torch.cuda.amp``) on generated handlers: the
oracle says the old spelling is left alone exactly when the handler catches only what
an older torch raises (TypeError, AttributeError, ImportError) and the ``try`` body
already uses the newer spelling.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

OLD_TORCH = {"TypeError", "AttributeError", "ImportError", "ModuleNotFoundError"}
CAUGHT = [
    ["TypeError"],
    ["AttributeError"],
    ["AttributeError", "TypeError"],
    ["ImportError"],
    ["Exception"],
    ["ValueError"],
    ["TypeError", "RuntimeError"],
]
CASES = {
    # rule: (newer spelling in the try body, something else there, the old spelling)
    "TP308": (
        "model = torch.load(path, weights_only=False)",
        "model = build()",
        "model = torch.load(path)",
    ),
    "TP403": (
        "scaler = torch.amp.GradScaler('cuda')",
        "scaler = make_scaler()",
        "scaler = torch.cuda.amp.GradScaler()",
    ),
}


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(sorted(CASES)),
    st.sampled_from(CAUGHT),
    st.booleans(),
    st.booleans(),
)
def test_old_spelling_left_alone_only_as_a_fallback(
    code: str, caught: list[str], newer_in_try: bool, in_function: bool
) -> None:
    newer, other, old = CASES[code]
    kinds = caught[0] if len(caught) == 1 else "(" + ", ".join(caught) + ")"
    body = newer if newer_in_try else other
    block = f"try:\n    {body}\nexcept {kinds}:\n    {old}\nmodel.eval()\n"
    if in_function:
        block = "def load(path):\n" + "".join(f"    {line}\n" for line in block.splitlines())
    source = "import torch\n" + block
    old_line = 6 if in_function else 5
    reported = old_line in {f.line for f in check_source(source, select=[code])}
    fallback = newer_in_try and set(caught) <= OLD_TORCH
    assert reported == (not fallback), source
