"""Which modules are torch code: every way of binding torch counts, look-alikes do not.

The oracle is the list below, written apart from the code: each import form names
torch (or one of its parts) or not, and the form may sit at the top, under ``try``,
or inside a function; the rest of the module is arbitrary statements.
"""

from __future__ import annotations

import ast
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.rules._torch_code import binds_torch

TORCH_FORMS = (
    "import torch",
    "import torch.nn as nn",
    "from torch import nn",
    "from torch.utils.data import DataLoader",
    "import torch as th",
    "from .compat import torch",
)
OTHER_FORMS = (
    "import numpy as np",
    "from paddle import fluid",
    "import tensorflow as tf",
    "from .compat import nn_utils",
    "import torchvision_like",
)
FILLER = ("x = 1", "def f(use_cuda=False):\n    return use_cuda", "for o in obs:\n    o.tolist()")


def module(form: str, where: str, filler: list[str]) -> str:
    if where == "try":
        form = f"try:\n    {form}\nexcept ImportError:\n    pass"
    elif where == "function":
        form = f"def load():\n    {form}\n    return None"
    return "\n\n".join([form, *filler]) + "\n"


@settings(max_examples=80, deadline=None)
@given(
    form=st.sampled_from(TORCH_FORMS + OTHER_FORMS),
    where=st.sampled_from(["top", "try", "function"]),
    filler=st.lists(st.sampled_from(FILLER), max_size=3),
)
def test_binds_torch_as_the_table_says(form: str, where: str, filler: list[str]) -> None:
    source = module(form, where, filler)
    ctx = Context(source, "m.py", ast.parse(source))
    assert binds_torch(ctx) is (form in TORCH_FORMS), textwrap.indent(source, "  ")
