"""TP101 leaves the CUDA default of a parameter rebound before any read: it is never used.

Held-out sample AD, pos 62 (neural-compressor's HQQ ``optimize_weights_proximal_legacy(...,
device="cuda")``, whose body sets ``device = auto_detect_accelerator().current_device()``
before naming it), judged low (e). ``rules/_unread_parameters.py`` states the invariant.

The oracle walks the drawn body statement by statement, each marked by hand: a filler names
nothing of the parameter; a reader lets its value reach code (a read, a frame reader); a
clean rebinding at the body's top replaces it unread (from then on nothing can see the
default); a doubtful rebinding (under a test, reading the parameter, ``+=``, starred, from
``locals()``) is a reader. TP101 reports the default exactly when a reader comes before
the first clean rebinding, or a decorator may read the argument.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

FILLERS = ("y = x * 2", "print(x)", "n = torch.cuda.device_count()", "where = x.device")
READERS = (
    "x = x.to(device)",
    "print(device)",
    "later = lambda: device",
    "seen = vars()",
    "device = device or pick()",  # reads the caller's value
    "device += ''",
    "first, *device = pick()",
    "device = locals()",
    "if x is None:\n    device = pick()",  # rebound on one path only
    "with quiet():\n    device = pick()",  # a context manager may swallow what is raised
    "try:\n    device = pick()\nexcept Exception:\n    pass",
    "for device in pick():\n    pass",  # an empty loop binds nothing
    "del device",
)
REBINDS = (
    "device = pick()",
    "device: str = pick()",
    "x, device = x, pick()",
    "[device, other] = pick(), 0",
    "device = torch.device('cpu')",
)
DECORATORS = {"": False, "@torch.inference_mode()\n": False, "@wrapped\n": True}
DEFAULTS = ('"cuda"', '"cuda:0"', 'torch.device("cuda")')
PLACES = {
    "module": ("", "def run(x, device={}, **kwargs):\n"),
    "method": ("class Net(nn.Module):\n", "def __init__(self, x, device={}, **kwargs):\n"),
    "nested": ("def outer():\n", "def run(x, device={}, **kwargs):\n"),
}
HEAD = "import torch\nimport torch.nn as nn\n\n\n"


def _source(place: str, default: str, decorator: str, body: list[str]) -> tuple[str, int]:
    """The program, and the line of the ``def`` (where the default is)."""
    outer, signature = PLACES[place]
    inner = "    " if outer else ""
    source = HEAD + outer + "".join(f"{inner}{line}\n" for line in decorator.splitlines())
    line = source.count("\n") + 1
    source += inner + signature.format(default) + f'{inner}    """Work."""\n'
    for statement in body:
        source += "".join(f"{inner}    {part}\n" for part in statement.splitlines())
    return source + f"{inner}    return x\n", line


def _reported(source: str, line: int) -> int:
    return len([f for f in check_source(source, select=["TP101"]) if f.line == line])


def _reaches(decorator: str, body: list[str]) -> bool:
    """The oracle: a reader before the first clean rebinding, or a reading decorator."""
    if DECORATORS[decorator]:
        return True
    for statement in body:
        if statement in REBINDS:
            return False
        if statement in READERS:
            return True
    return False


STATEMENTS = st.sampled_from((*FILLERS, *READERS, *REBINDS))


@given(
    place=st.sampled_from(sorted(PLACES)),
    default=st.sampled_from(DEFAULTS),
    decorator=st.sampled_from(sorted(DECORATORS)),
    body=st.lists(STATEMENTS, min_size=1, max_size=5),
)
def test_a_default_rebound_before_any_read_is_never_used(
    place: str, default: str, decorator: str, body: list[str]
) -> None:
    source, line = _source(place, default, decorator, body)
    assert _reported(source, line) == (1 if _reaches(decorator, body) else 0), source


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("rebind", REBINDS)
def test_a_read_before_the_rebinding_keeps_the_finding(reader: str, rebind: str) -> None:
    source, line = _source("module", '"cuda"', "", ["y = x * 2", reader, rebind])
    assert _reported(source, line) == 1, source


@pytest.mark.parametrize("rebind", REBINDS)
def test_the_hqq_shape(rebind: str) -> None:
    """A grad-mode decorator, a docstring, a tuple unpacking, then the rebinding."""
    body = ["a, b = kwargs['a'], kwargs['b']", rebind, "x = x.to(device)"]
    source, line = _source("module", '"cuda"', "@torch.inference_mode()\n", body)
    assert _reported(source, line) == 0, source
