"""TP203 on generated copies of an indexed batch tensor (held-out sample AF's F12).

VAE-TEB's ``batch.fhr[idx_keep].to(device)``, ``idx_keep`` a comprehension over ``range`` or
``list(range(take))``, was judged low: indexing with a list of ints (advanced indexing) makes
a new pageable tensor each batch, so pinning and ``non_blocking`` overlap nothing. Oracle (by
hand, per index): the index is surely a list of ints (a display of int literals,
``list(range(n))``, ``[i for i in range(n) if ...]``, or a local name every binding of which is
one of these, bound on every path, never changed in place). Anything else (an int, a slice, a
list holding a slice, a parameter, a name bound to something else on one path, a list
appended to, a shadowed ``range``) stays reported.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (statements binding `idx` before the copy, the index expression, surely a list of ints)
INDICES = [
    ("", "[0, 2, 3]", True),
    ("", "list(range(take))", True),
    ("", "[i for i in range(take) if keep(i)]", True),
    ("idx = list(range(take))\n", "idx", True),
    ("idx = [0, 1]\n", "idx", True),
    (
        "if sel:\n    idx = [i for i in range(take) if keep(i)]\n"
        "else:\n    idx = list(range(take))\n",
        "idx",
        True,
    ),
    ("", "0", False),
    ("", "slice(0, take)", False),
    ("", "[0, slice(None)]", False),  # a tuple to torch: basic indexing, a view
    ("", "[i for i in order]", False),
    ("", "sel_idx", False),  # a parameter: anything
    ("idx = list(range(take))\nidx.append(slice(None))\n", "idx", False),
    ("idx = list(range(take))\nidx[0] = slice(None)\n", "idx", False),
    ("if sel:\n    idx = [0, 1]\nelse:\n    idx = sel_idx\n", "idx", False),
    ("if sel:\n    idx = [0, 1]\n", "idx", False),  # maybe unbound: not surely a list
    ("range = my_range\nidx = list(range(take))\n", "idx", False),
    ("", "list(order)", False),
]
COPIES = ["batch.x[{i}].to(device)", "batch[{i}].to(device)", "batch['x'][{i}].to(device)"]


def _indented(lines: str, depth: int) -> str:
    return "".join(f"{'    ' * depth}{line}\n" for line in lines.splitlines())


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(INDICES), st.sampled_from(COPIES))
def test_a_list_indexed_copy_is_left(index: tuple[str, str, bool], copy: str) -> None:
    before, expr, a_list = index
    source = (
        "import torch\n\ndef my_range(n):\n    return [slice(None)] * n\n\n"
        "def run(model, loader, device, take, sel, sel_idx, order, keep):\n"
        "    for batch in loader:\n"
        + _indented(before, 2)
        + f"        y = {copy.format(i=expr)}\n"
        + "        model(y)\n"
    )
    line = source[: source.index("        y = ")].count("\n") + 1
    reported = line in {f.line for f in check_source(source, select=["TP203"])}
    assert reported == (not a_list), source


def test_the_samples_loop_is_left_and_a_plain_copy_beside_it_is_not() -> None:
    source = (
        "import torch\n\ndef run(model, test_loader, device, take, selected):\n"
        "    for batch in test_loader:\n"
        "        if selected:\n"
        "            idx_keep = [i for i in range(take) if batch.guid[i] in selected]\n"
        "        else:\n"
        "            idx_keep = list(range(take))\n"
        "        y_raw = batch.fhr[idx_keep].to(device)\n"
        "        x = batch.x.to(device)\n"
        "        model(x, y_raw)\n"
    )
    assert {f.line for f in check_source(source, select=["TP203"])} == {10}
