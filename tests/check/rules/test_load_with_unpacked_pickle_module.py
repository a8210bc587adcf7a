"""An unpacked ``torch.load`` that names its own ``pickle_module`` is TP304's, not TP305's.

Generated loads unpack arguments the file cannot see (``**kwargs``, ``*args``, a
parameter's dict), maybe pass ``weights_only=True``, and maybe pass ``pickle_module=``
themselves (``dill``, ``pickle``). The oracle is written apart: a ``pickle_module``
named at the call makes the load unsafe whatever is unpacked, and ``weights_only=True``
would then raise, so TP305 (which asks for ``weights_only=True``) stays quiet and TP304
reports the call; without one, TP305 reports exactly the loads lacking
``weights_only=True``. Either way an unsafe load is never left unreported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

UNPACKED = ("**kwargs", "*args", "**opts", "*args, **kwargs")
PICKLERS = {"": False, "pickle_module=dill": True, "pickle_module=pickle": True}


@given(
    unpacked=st.sampled_from(UNPACKED),
    pickler=st.sampled_from(sorted(PICKLERS)),
    weights_only=st.booleans(),
)
def test_a_named_pickle_module_is_tp304_s(unpacked: str, pickler: str, weights_only: bool) -> None:
    arguments = ["path", *([pickler] if pickler else []), unpacked]
    if weights_only and not PICKLERS[pickler]:
        arguments.insert(1, "weights_only=True")
    source = (
        "import pickle\n\nimport dill\nimport torch\n\n\n"
        "def load(path, *args, opts=None, **kwargs):\n"
        f"    return torch.load({', '.join(arguments)})\n"
    )
    found = {
        f.code for f in check_text(source, "m.py", ruleset_for(["TP304", "TP305"], None)).findings
    }
    named = PICKLERS[pickler]
    assert ("TP305" in found) == (not named and not weights_only), source
    assert ("TP304" in found) == named, source
