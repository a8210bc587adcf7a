"""A call is a host factory only if its qualified name is a torch factory's (``host_factory``).

``host_factory`` answers False without asking the call's qualified name where the name as
written cannot end as a factory's does (its attribute, the last part of what an import
binds it to, or the name itself under a star import). The oracle asks the qualified name
of every call, as the function did before: on generated modules that bind factories every
way (aliases, ``from torch import zeros as z``, star imports, a name imported as two
things, shadowing, calls of calls), every call gets the same answer.
"""

from __future__ import annotations

import ast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS
from torchport.check.port._module_functions import host_factory

IMPORTS = [
    "import torch",
    "import torch as t",
    "from torch import zeros",
    "from torch import zeros as z",
    "from torch import ones as zeros",
    "from torch import FloatTensor as F",
    "from torch import *",
    "from numpy import zeros",
    "from numpy import zeros as ones",
    "from .compat import torch",
    "from . import zeros",
    "import numpy as torch",
    "from numpy import ones as z",  # `z` imported as two things: its tail is unknown
    "from helpers import build as ones",  # a factory's name bound to something else
]
CALLS = [
    "torch.zeros(3)",
    "t.ones(2, device=d)",
    "t.tensor(x, **kw)",
    "zeros(3)",
    "z(3)",
    "ones(3)",
    "F(2)",
    "tensor(1)",
    "empty(4)",
    "torch.nn.Linear(2, 2)",
    "torch.FloatTensor(2)",
    "make()(3)",
    "xs[0](3)",
    "torch.cuda.FloatTensor(2)",
    "arange(5).float()",
    "print(3)",
]
BINDINGS = [
    "",
    "zeros = make",
    "def ones():\n    pass",
    "z = None",
    "torch = obj",
    "F = 1",
    "def g():\n    from helpers import build as ones",  # a tail for the file, not for here
]


@st.composite
def modules(draw: st.DrawFn) -> str:
    imports = draw(st.lists(st.sampled_from(IMPORTS), min_size=1, max_size=3))
    binding = draw(st.sampled_from(BINDINGS))
    calls = draw(st.lists(st.sampled_from(CALLS), min_size=1, max_size=5))
    body = "\n".join(f"    v{i} = {c}" for i, c in enumerate(calls))
    inner = draw(st.sampled_from(["", "    zeros = other\n", "    import numpy as t\n"]))
    top = "\n".join(f"w{i} = {c}" for i, c in enumerate(draw(st.lists(st.sampled_from(CALLS)))))
    function = f"def f(x, d, kw):\n{inner}{body}\n    return x"
    return "\n".join([*imports, binding, function, top, ""])


@given(modules())
def test_a_call_is_a_host_factory_as_its_qualified_name_says(source: str) -> None:
    tree = ast.parse(source)
    ctx = Context(source, "m.py", tree)
    for call in ast.walk(tree):
        if isinstance(call, ast.Call):
            name = ctx.qualname(call.func)
            want = (name in CREATORS or name in TYPED_CONSTRUCTORS) and not any(
                k.arg is None or k.arg == "device" for k in call.keywords
            )
            assert host_factory(ctx, call, set()) == want, (source, ast.dump(call))


@pytest.mark.parametrize(
    "source",
    [
        "from numpy import ones as z\nfrom torch import zeros as z\nz(3)\n",
        "from torch import *\n\n\ndef g():\n    from helpers import build as ones\n\n\nones(3)\n",
    ],
)
def test_a_name_whose_tail_cannot_tell_is_asked(source: str) -> None:
    tree = ast.parse(source)
    ctx = Context(source, "m.py", tree)
    (call,) = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert ctx.qualname(call.func) in CREATORS
    assert host_factory(ctx, call, set())


def test_factories_under_every_spelling_are_found() -> None:
    # the shortcut declines nothing it should answer (the test above holds trivially else)
    source = (
        "import torch as t\nfrom torch import zeros as z\nfrom torch import *\n\n"
        "a = t.zeros(1)\nb = z(2)\nc = ones(3)\nd = t.FloatTensor(2)\ne = print(1)\n"
    )
    tree = ast.parse(source)
    ctx = Context(source, "m.py", tree)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert [host_factory(ctx, c, set()) for c in calls] == [True, True, True, True, False]
