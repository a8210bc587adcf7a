"""Standard-library calls that hand back what they were given are not taken for non-tensors.

Every call into the standard library was of kind OTHER (nothing to move), so a parameter
given ``pickle.loads(...)`` or ``copy.deepcopy(t)`` was left alone without a word: given a CPU
tensor, the run then stops on the device. A copy is now of its argument's kind, and a call
that hands back what it was given or had stored is "not sure": the port says what it cannot
tell; a call whose result is never a tensor (``json.loads``, ``math.sqrt``, ``os.getcwd``) is
still a plain value.
Left: a method of a standard-library object (``queue.Queue().get()``, ``deque.popleft()``) is
still taken for a plain value, as a string's or a number's method is.
"""

from __future__ import annotations

import pytest

from torchport.check.port import port_text

_PROGRAM = """import copy
import functools
import json
import math
import os
import pickle
import random

import torch

w = torch.tensor(0.5, dtype=torch.float32, requires_grad=True)


def forward(x):
    return w * x


print(forward({value}))
"""

# (the value handed to `forward`, whether it may be a tensor the port cannot see)
CASES = [
    ("copy.deepcopy(w)", False),  # a copy of what the port places on the device: there too
    ("copy.copy(pickle.loads(pickle.dumps(w)))", True),  # a copy is of its argument's kind
    ("pickle.loads(pickle.dumps(w))", True),
    ("random.choice([w, w])", True),
    ("functools.reduce(lambda a, b: a, [w])", True),
    ("functools.partial(max, 1)", False),
    ("copy.deepcopy(5.0)", False),
    ("json.loads('2.0')", False),
    ("math.sqrt(2.0)", False),
    ("len(os.getcwd())", False),
    ("random.random()", False),
]


@pytest.mark.parametrize(("value", "unsure"), CASES, ids=[c[0] for c in CASES])
def test_a_pass_through_result_is_not_taken_for_a_plain_value(value: str, unsure: bool) -> None:
    outcome = port_text(_PROGRAM.format(value=value), "prog.py")
    assert not outcome.failures, outcome.failures
    left = sorted({f.code for f in outcome.remaining})
    assert bool(left) == unsure, (value, left, outcome.source)
