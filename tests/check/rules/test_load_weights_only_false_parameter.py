"""TP302 leaves a load whose ``weights_only`` is its function's parameter defaulting to True.

Sample L (open_clip): ``def load_checkpoint(path, weights_only=True): torch.load(path,
weights_only=weights_only)``. Called as written, the load is safe; a caller that passes
``False`` does so at its own call. The oracle, written here: reported exactly when the
parameter's default is not the constant ``True``, or the function rebinds the name, or
the name is not the enclosing function's parameter at all.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

DEFAULTS = {"True": True, "False": False, "None": False, "cfg.safe": False, "1": False}


REBINDINGS = (
    "",
    "    weights_only = cfg.trust\n",
    "    for weights_only in flags:\n        pass\n",
)


@given(keyword_only=st.booleans(), name=st.sampled_from(["weights_only", "safe", "trusted_only"]))
def test_a_parameter_defaulting_to_true_is_left(keyword_only: bool, name: str) -> None:
    # Every default, rebinding and scope in each example (few enough: 30 programs).
    star = "*, " if keyword_only else ""
    for default, rebinding, own_parameter in itertools.product(
        sorted(DEFAULTS), REBINDINGS, (True, False)
    ):
        rebound = rebinding.replace("weights_only", name).replace("    ", "        ")
        params = f"path, {star}{name}={default}" if own_parameter else "path"
        source = (
            "import torch\n\n"
            f"def load(path, {star}{name}={default}):\n"
            f"    def inner({params}):\n"
            + rebound
            + f"        return torch.load(path, weights_only={name})\n"
            "    return inner(path)\n"
        )
        safe = own_parameter and DEFAULTS[default] and not rebinding
        found = check_source(source, select=["TP302"])
        assert [f.code for f in found] == ([] if safe else ["TP302"]), source
