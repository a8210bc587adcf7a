"""TP402 leaves a CUDA seed after every device was seeded by any spelling of
``torch.manual_seed`` (held-out sample AF).

VAE-TEB's data scripts seed with ``torch.random.manual_seed(42)`` and then
``torch.cuda.manual_seed(42)``; ``torch.manual_seed`` *is* ``torch.random.manual_seed``
(torch imports it from there), so every device was already seeded (judged noise twice).
Programs are generated: a module seeds Python and NumPy, then with one of the spellings
below or none, then seeds CUDA, in either order. The oracle, written by hand per spelling:
the spelling seeds every device (``torch.manual_seed``, ``torch.random.manual_seed``, by
any import of either), or it does not (CUDA's own generators, NumPy, Python's ``random``).
The CUDA seed is reported exactly when no spelling that seeds every device is there.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

EVERY_DEVICE = (
    ("", "torch.manual_seed(s)"),
    ("", "torch.random.manual_seed(s)"),
    ("from torch.random import manual_seed\n", "manual_seed(s)"),
    ("import torch.random as trandom\n", "trandom.manual_seed(s)"),
    ("from torch import random as trandom\n", "trandom.manual_seed(s)"),
)
NOT_EVERY_DEVICE = (
    ("", "torch.cuda.random.manual_seed_all(s)"),
    ("", "np.random.seed(s)"),
    ("import random\n", "random.seed(s)"),
    ("", "torch.random.seed()"),
    ("", ""),
)
CUDA_SEEDS = ("torch.cuda.manual_seed(s)", "torch.cuda.manual_seed_all(s)")


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(EVERY_DEVICE + NOT_EVERY_DEVICE),
    st.sampled_from(CUDA_SEEDS),
    st.booleans(),
)
def test_a_cuda_seed_is_reported_unless_every_device_is_seeded(
    spelling: tuple[str, str], cuda_seed: str, first: bool
) -> None:
    imports, seeding = spelling
    lines = [seeding, cuda_seed] if first else [cuda_seed, seeding]
    source = "import numpy as np\nimport torch\n" + imports + "s = 42\n" + "\n".join(lines) + "\n"
    line = source.splitlines().index(cuda_seed) + 1
    reported = line in {f.line for f in check_source(source, select=["TP402"])}
    assert reported == (spelling not in EVERY_DEVICE), source
