"""Which module-level functions return host data only, read from their own code.

The oracle is written by hand per function (what each returns when it runs), apart from
:mod:`torchport.check.port._host_functions`; a call through an item or a call's result
(``fns[0](x)``) is no name and no method, and once stopped the port on timm (branch q31t).
"""

from __future__ import annotations

import ast

from torchport.check._context import Context
from torchport.check.port._host_functions import host_functions

_MODULE = """
import numpy as np
import torch

FNS = [np.ones]


def arrays(n):
    a = np.zeros(n)
    a /= 2.0
    a = a[:n]
    return a, np.ones(n).astype(float), 3


def one_hot(x, n):
    out = np.zeros((len(x), n))
    out[0] = 1
    return out


def calls_another(n):
    return one_hot([1], n), arrays(n)[0]


def tensor(n):
    return torch.zeros(n)


def moved(n):
    return np.ones(n), torch.from_numpy(np.ones(n)).to("cuda")


def given(t):
    return t, np.ones(3)


def through_item(n):
    return FNS[0](n)


def through_call(n):
    return np.vectorize(abs)(np.ones(n)), make()(n)


def looped(xs):
    for x in xs:
        y = x
    return y


def generator(n):
    yield np.ones(n)


def twice(n):
    return np.ones(n)


def twice(n):
    return torch.ones(n)


def empty_list():
    return []
"""


def test_host_functions_of_a_module() -> None:
    ctx = Context(_MODULE, "m.py", ast.parse(_MODULE))
    whole, items = host_functions(ctx, ctx.tree)
    assert whole == {"arrays", "one_hot", "calls_another"}
    # (`np.vectorize(abs)(...)` gives an array, but a call's result called is not followed)
    assert dict(items) == {"moved": (0,), "given": (1,)}
