"""TP302 follows the spellings of a load and of its flag, and says what it cannot settle.

Each program loads through one spelling of ``torch.load`` with one spelling of
``weights_only``; the oracle is a table written here: whether the flag is false
(a finding), true or absent (none).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (setup lines, the call with {flag} where the keyword goes)
LOADS = {
    "direct": ("", "torch.load('m.pt'{flag})"),
    "alias name": ("ld = torch.load\n", "ld('m.pt'{flag})"),
    "alias of alias": ("ld = torch.load\nload2 = ld\n", "load2('m.pt'{flag})"),
    "serialization": ("", "torch.serialization.load('m.pt'{flag})"),
    "getattr": ("", "getattr(torch, 'load')('m.pt'{flag})"),
    "partial at once": ("", "functools.partial(torch.load{flag})('m.pt')"),
    "partial bound": ("p = functools.partial(torch.load{flag})\n", "p('m.pt')"),
    "from import": ("from torch import load as tl\n", "tl('m.pt'{flag})"),
}
# (flag text, setup, False / True / None for the default)
FLAGS = {
    "absent": ("", "", None),
    "False": (", weights_only=False", "", False),
    "0": (", weights_only=0", "", False),
    "not True": (", weights_only=not True", "", False),
    "bool(0)": (", weights_only=bool(0)", "", False),
    "name False": (", weights_only=trust", "trust = False\n", False),
    "True": (", weights_only=True", "", True),
    "not False": (", weights_only=not False", "", True),
    "name True": (", weights_only=safe", "safe = True\n", True),
    "None": (", weights_only=None", "", None),
}


@settings(max_examples=60, deadline=None)
@given(load=st.sampled_from(sorted(LOADS)), flag=st.sampled_from(sorted(FLAGS)))
def test_a_false_flag_is_found_through_every_spelling(load: str, flag: str) -> None:
    setup, call = LOADS[load]
    text, flag_setup, value = FLAGS[flag]
    source = (
        "import functools\nimport torch\n"
        + flag_setup
        + setup.format(flag=text)
        + "obj = "
        + call.format(flag="" if "{flag}" in setup else text)
        + "\n"
    )
    codes = [f.code for f in check_source(source, select=["TP302"])]
    assert codes == (["TP302"] if value is False else []), source


def test_what_cannot_be_settled_is_reported_as_such() -> None:
    source = (
        "import os\nimport torch\n"
        "name = 'lo' + 'ad'\n"
        "a = getattr(torch, name)('m.pt', weights_only=True)\n"
        "b = torch.load('m.pt', weights_only=os.environ.get('SAFE') == '1')\n"
        "c = getattr(os.path, name)('m.pt')\n"  # not torch: nothing to say
        "def make(kind):\n"
        "    cls = getattr(torch, kind)\n"
        "    return cls(2, 3)\n"  # a tensor type, nothing a load takes: nothing to say
        "key = 'load'\n"
        "d = getattr(torch, key)('m.pt', weights_only=False)\n"  # settled: a false flag
    )
    found = check_source(source, select=["TP302"])
    assert [f.line for f in found] == [4, 5, 11]
    assert ["cannot tell" in f.message for f in found] == [True, True, False]
