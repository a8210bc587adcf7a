"""TP302 on generated load-or-build caches: a file the program saves itself is its own.

Oracle: ``weights_only=False`` is left alone exactly when the program saves to the
same path, either in the ``else`` of the ``if exists(path)`` that guards the load or
earlier in the same function; a save to another path, or none, keeps the finding.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

ELSE = {
    "same": "    torch.save(obj, path)",
    "other": "    torch.save(obj, other_path)",
    "none": "    obj = None",
}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(ELSE)), st.booleans(), st.booleans())
def test_the_programs_own_cache_is_left_alone(
    in_else: str, saved_before: bool, guarded: bool
) -> None:
    lines = ["def run(path, other_path, obj):"]
    if saved_before:
        lines.append("    torch.save(obj, path)")
    if guarded:
        lines += [
            "    if os.path.exists(path):",
            "        obj = torch.load(path, weights_only=False)",
            "    else:",
            "    " + ELSE[in_else],
        ]
    else:
        lines.append("    obj = torch.load(path, weights_only=False)")
    source = "import os\nimport torch\n" + "".join(f"{line}\n" for line in lines)
    reported = any(f.code == "TP302" for f in check_source(source, select=["TP302"]))
    own = saved_before or (guarded and in_else == "same")
    assert reported == (not own), source
