"""TP101 leaves the CUDA default of a parameter no code reads: it places nothing.

Held-out sample Z, pos 15 (pytorch_timeseries ``Informer.py:120``):
``InformerStack.__init__(..., device=torch.device('cuda:0'))``, the parameter never read in
the class, judged low (e). ``rules/_unread_parameters.py`` states the invariant.

The oracle is the tables below, each entry marked by hand with whether it lets the
parameter's value reach code: a statement of the body (a read, a nested function or lambda
reading it, a frame reader such as ``locals()``; not another name with ``device`` in it, an
attribute ``x.device``, or ``kwargs``, which never holds a named parameter), and a decorator
(one that wraps nothing or calls the function with its caller's arguments, or an unknown
one, which may read the argument). Where the function stands, its default and the body are
drawn; TP101 reports the default exactly when something lets the value reach code.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

STATEMENTS = {
    "y = x * 2": False,
    "print(x, kwargs)": False,
    "n = torch.cuda.device_count()": False,
    "where = x.device": False,
    "other = kwargs.get('device')": False,
    "devices = ['cpu']": False,
    "torch.cuda.synchronize()": False,
    "x = x.to(device)": True,
    "y = torch.zeros(3, device=device)": True,
    "print(device)": True,
    "saved = dict(locals())": True,
    "seen = vars()": True,
    "later = lambda: device": True,
    "names = [str(device) for _ in range(2)]": True,
    "exec('print(device)')": True,
    "builtins.exec('print(device)')": True,
    "import inspect; seen = inspect.currentframe().f_locals": True,
    "self.save_hyperparameters()": True,  # Lightning's: reads its caller's frame
}
DECORATORS = {
    "": False,
    "@torch.no_grad()\n": False,
    "@functools.lru_cache(maxsize=8)\n": False,
    "@wrapped\n": True,  # a user's wrapper may read the argument
}
DEFAULTS = ('"cuda"', '"cuda:0"', 'torch.device("cuda")', 'torch.device("cuda:0")')
PLACES = {
    "module": ("", "def run(x, device={}, **kwargs):\n"),
    "method": ("class Net(nn.Module):\n", "def __init__(self, x, device={}, **kwargs):\n"),
    "forward": ("class Net(nn.Module):\n", "def forward(self, x, device={}, **kwargs):\n"),
    "nested": ("def outer():\n", "def run(x, device={}, **kwargs):\n"),
}
HEAD = "import builtins\nimport functools\n\nimport torch\nimport torch.nn as nn\n\n\n"


def _source(place: str, default: str, decorator: str, body: list[str]) -> tuple[str, int]:
    """The program, and the line of the ``def`` (where the default is)."""
    outer, signature = PLACES[place]
    inner = "    " if outer else ""
    source = HEAD + outer + "".join(f"{inner}{line}\n" for line in decorator.splitlines())
    line = source.count("\n") + 1
    source += inner + signature.format(default)
    return source + "".join(f"{inner}    {s}\n" for s in body) + f"{inner}    return x\n", line


def _reported(source: str, line: int) -> int:
    return len([f for f in check_source(source, select=["TP101"]) if f.line == line])


@given(
    place=st.sampled_from(sorted(PLACES)),
    default=st.sampled_from(DEFAULTS),
    decorator=st.sampled_from(sorted(DECORATORS)),
    body=st.lists(st.sampled_from(sorted(STATEMENTS)), min_size=1, max_size=4),
)
def test_a_default_no_code_reads_places_nothing(
    place: str, default: str, decorator: str, body: list[str]
) -> None:
    source, line = _source(place, default, decorator, body)
    reaches = DECORATORS[decorator] or any(STATEMENTS[s] for s in body)
    assert _reported(source, line) == (1 if reaches else 0), source


@given(
    place=st.sampled_from(sorted(PLACES)),
    default=st.sampled_from(DEFAULTS),
    decorator=st.sampled_from(sorted(DECORATORS)),
    body=st.lists(st.sampled_from(sorted(s for s, read in STATEMENTS.items() if not read))),
)
def test_a_decorator_may_read_what_the_body_does_not(
    place: str, default: str, decorator: str, body: list[str]
) -> None:
    source, line = _source(place, default, decorator, body)
    assert _reported(source, line) == (1 if DECORATORS[decorator] else 0), source


READERS = sorted(s for s, read in STATEMENTS.items() if read)
FILLERS = sorted(s for s, read in STATEMENTS.items() if not read)


@pytest.mark.parametrize("reader", READERS)
@given(
    place=st.sampled_from(sorted(PLACES)),
    default=st.sampled_from(DEFAULTS),
    decorator=st.sampled_from(sorted(d for d, read in DECORATORS.items() if not read)),
    fillers=st.lists(st.sampled_from(FILLERS), max_size=3),
    at=st.integers(min_value=0, max_value=3),
)
def test_each_reader_keeps_the_finding(
    reader: str, place: str, default: str, decorator: str, fillers: list[str], at: int
) -> None:
    body = [*fillers[:at], reader, *fillers[at:]]
    source, line = _source(place, default, decorator, body)
    assert _reported(source, line) == 1, source
