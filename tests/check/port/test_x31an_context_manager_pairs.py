"""A (host, device) pair a context manager hands its ``with`` target (x31an).

Class 4 of issue 31 (x31an): a pair of a host tensor and a device value handed back. The
near forms that held on a7c33bbe and now: a helper of another project module returning
``(torch.ones(2, 2), t)`` for a device ``t`` (``c, d = make(y)``, ``utils.make(y)``,
``p = make(y)`` then ``p[1] @ p[0]``), and a ``@contextmanager`` of another module yielding
one: placed or said. Silent on a7c33bbe: a context manager of the file itself
(``@contextlib.contextmanager`` yielding ``(torch.ones(2, 2), t)``, or a class whose
``__enter__`` returns one) whose ``with`` target is a tuple (``as (c, d)``, ``as [c, d]``) or a
name unpacked after (``as p``: ``c, d = p``, ``p[0]``): "0 left", and the port stopped on
``sim`` (``mat2 is on cpu``). A ``with`` target's kind is its context expression's
(``_kinds``), and what the manager yields is not followed. Now TP523 says each ``with`` target
of a context manager of the file handed a device value (``port/_entered_values.py``).

The invariant, generated over the manager (a generator, a class), the target (a tuple, a
list, a name indexed or unpacked after), where the device value sits in the pair and how it
is handed (by position, by keyword): placed or said (``no_cuda_sim.placed_or_said``: the
original on the CPU, the port on the simulated accelerator).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

from torchport.check.port import port_text

_HEAD = (
    "import contextlib\n\nimport torch\nimport torch.nn as nn\n\n"
    "@contextlib.contextmanager\ndef pair(t):\n    yield torch.ones(2, 2), t\n\n\n"
    "class Pair:\n    def __init__(self, t):\n        self.t = t\n\n    def __enter__(self):\n"
    "        return torch.ones(2, 2), self.t\n\n    def __exit__(self, *a):\n"
    "        return False\n\n\n"
    "model = nn.Linear(3, 2)\ny = model(torch.randn(2, 3))\n"
)
HOLDING = {
    "a single target": "@contextlib.contextmanager\ndef one(t):\n    yield torch.ones(2, 2)\n\n\n"
    "with one(y) as c:\n    OUT.append(y @ c)\n",
}
LEFT = {
    "a generator's tuple target": "with pair(y) as (c, d):\n    OUT.append(d @ c)\n",
    "a generator's list target": "with pair(y) as [c, d]:\n    OUT.append(d @ c)\n",
    "a generator's pair indexed": "with pair(y) as p:\n    OUT.append(p[1] @ p[0])\n",
    "a generator's pair unpacked": "with pair(y) as p:\n    c, d = p\n    OUT.append(d @ c)\n",
    "a class's tuple target": "with Pair(y) as (c, d):\n    OUT.append(d @ c)\n",
}


@pytest.mark.slow  # one child
def test_a_single_with_target_is_said() -> None:
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said([_HEAD + body for body in HOLDING.values()])


@pytest.mark.slow  # one child
def test_the_silent_pairs_are_placed_or_said() -> None:
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said([_HEAD + body for body in LEFT.values()])


_H = "import torch\nimport torch.nn as nn\n"
_MAIN = "model = nn.Linear(3, 2)\ny = model(torch.randn(2, 3))\n"
_UTILS = _H + "def make(t):\n    return torch.ones(2, 2), t\n"
_CM = _H + "import contextlib\n\n@contextlib.contextmanager\ndef pair(t):\n"
_CM += "    yield torch.ones(2, 2), t\n"
PROJECTS = {  # a helper of another module (the near forms: placed or said on a7c33bbe too)
    "a pair unpacked": {"utils.py": _UTILS, "train.py": _H + "from utils import make\n" + _MAIN
                        + "c, d = make(y)\nOUT.append(d @ c)\n"},
    "through the module": {"utils.py": _UTILS, "train.py": _H + "import utils\n" + _MAIN
                           + "c, d = utils.make(y)\nOUT.append(d @ c)\n"},
    "a pair indexed": {"utils.py": _UTILS, "train.py": _H + "from utils import make\n" + _MAIN
                       + "p = make(y)\nOUT.append(p[1] @ p[0])\n"},
    "a context manager": {"utils.py": _CM, "train.py": _H + "from utils import pair\n" + _MAIN
                          + "with pair(y) as (c, d):\n    OUT.append(d @ c)\n"},
}  # fmt: skip


@pytest.mark.slow  # one child
def test_a_pair_a_helper_of_another_module_gives_is_placed_or_said() -> None:
    from tests.check.port.no_cuda_sim import projects_placed_or_said

    projects_placed_or_said(list(PROJECTS.values()))


_MANAGERS = {
    "a generator": "@contextlib.contextmanager\ndef pair(t):\n    yield PAIR\n\n\n",
    "a class": "class pair:\n    def __init__(self, t):\n        self.t = t\n\n"
    "    def __enter__(self):\n        t = self.t\n        return PAIR\n\n"
    "    def __exit__(self, *a):\n        return False\n\n\n",
}
_TARGETS = {
    "a tuple": "with pair(ARG) as (c, d):\n    OUT.append(USE)\n",
    "a list": "with pair(ARG) as [c, d]:\n    OUT.append(USE)\n",
    "unpacked after": "with pair(ARG) as p:\n    c, d = p\n    OUT.append(USE)\n",
    "indexed": "with pair(ARG) as p:\n    c, d = p[0], p[1]\n    OUT.append(USE)\n",
}


def _entered(manager: str, target: str, device_first: bool, keyword: bool) -> str:
    pair = "t, torch.ones(2, 2)" if device_first else "torch.ones(2, 2), t"
    use = "c @ d" if device_first else "d @ c"
    head = "import contextlib\n\nimport torch\nimport torch.nn as nn\n\n"
    body = _MANAGERS[manager] + "model = nn.Linear(3, 2)\ny = model(torch.randn(2, 3))\n"
    body += _TARGETS[target]
    arg = "t=y" if keyword else "y"
    return head + body.replace("PAIR", pair).replace("ARG", arg).replace("USE", use)


_ENTERED = st.builds(
    _entered,
    st.sampled_from(sorted(_MANAGERS)),
    st.sampled_from(sorted(_TARGETS)),
    st.booleans(),
    st.booleans(),
)


def test_every_entered_pair_is_said() -> None:
    """No child: TP523 at the ``with`` target of every generated form (the run is below)."""
    for manager in _MANAGERS:
        for target in _TARGETS:
            source = _entered(manager, target, manager == "a class", target == "a list")
            ported = port_text(source)
            assert "TP523" in {f.code for f in ported.remaining}, (manager, target)


@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_ENTERED, min_size=2, max_size=3))
def test_entered_pairs_are_placed_or_said(programs: list[str]) -> None:
    """One child (one example of a few programs); every form in one child is slow, below."""
    from tests.check.port.no_cuda_sim import placed_or_said

    placed_or_said(programs)


@pytest.mark.slow  # one child of every form
def test_every_entered_pair_is_placed_or_said() -> None:
    from tests.check.port.no_cuda_sim import placed_or_said

    forms = [
        _entered(m, t, first, keyword)
        for m in sorted(_MANAGERS)
        for t in sorted(_TARGETS)
        for first in (False, True)
        for keyword in (False, True)
    ]
    placed_or_said(forms)
