"""Which of its checks a move of an own-``.to`` object runs: all, or those a layout leaves open.

``place/_whole.py`` moves an object with its own ``.to`` by that method on a shallow
copy, and checks the call: what the input holds laid again and compared (the ``.to``
wrote into the input), the input's tensors' version counters (it changed one in
place), the result walked (a tensor it made left off the target; the result holds
the input's nodes only where they were), and "moved none" (it ignored its device).
Those checks ask how the class's ``.to`` treats objects of one *layout* (the class
and the types of everything its read lays: ``place/_whole_plans.py``'s plan, the
code ``place/_whole_code.py`` writes for it) and how it is called (the target and
``non_blocking``: a ``.to`` may treat each device, or a non-blocking call, its own
way), so per plan and per (target, ``non_blocking``) they are run in full on the
first :data:`FIRST` calls; once that many have passed and the layout is still the
same, a call with the same target and ``non_blocking`` runs only what can differ
between calls of one layout:

- the read itself (it finds the plan's layout, or the object goes back to full checks),
- "every tensor already on the target": then no copy and no call,
- the guard against another thread moving the same object, and an input put back meanwhile,
- an error the ``.to`` raises (the input put back, the error named as the walker names it),
- the type of the result: another type than the full checks saw, and the call is
  checked in full after all (the input's record and its tensors' version counters are
  taken before every call; on a quick call only that of another type compares them).

Every :data:`EVERY`-th call of a plan with one target and ``non_blocking`` runs the
full checks again (a sentinel). A full check that fails marks the class
(:data:`FAILED`): it is checked in full on every call from then on, whatever its
layout; a layout that changes makes a new
plan, whose first :data:`FIRST` calls are checked in full again, and so are a plan's
first :data:`FIRST` calls to another target or with another ``non_blocking``. Only
classes that last have plans (``place/_lasting.py``), so nothing here keeps a class alive.

The trade: a ``.to`` that behaves well on :data:`FIRST` calls of a layout and then
misbehaves (writes into the input, changes one of its tensors in place, leaves a
tensor it made on the host, ignores its device) only for some VALUES (a tensor's
size, a key's name, a call count) is caught only on a call that runs the full checks:
one that turns bad for good on call ``FIRST + j`` is refused at the next sentinel at
the latest (``EVERY - 1`` calls later); one bad only between sentinels passes. A
``.to`` whose behaviour follows the layout, the target or ``non_blocking`` is refused on
the first call of that layout, target and ``non_blocking``.
``TORCHPORT_FULL_CHECKS=1`` in the environment (read at import; :data:`FULL_CHECKS`)
runs every check on every call.
"""

from __future__ import annotations

import os
from typing import Any

from torchport.place._lasting import forget_with, lasting

__all__ = ["EVERY", "FAILED", "FIRST", "FULL_CHECKS", "failed", "passed"]

ENV_VAR = "TORCHPORT_FULL_CHECKS"
# [0]: run every check on every call (the environment's say, read once; tests set it).
FULL_CHECKS = [os.environ.get(ENV_VAR, "").strip().lower() not in ("", "0", "false", "no")]
FIRST = 8  # calls of a plan checked in full before any is not
# Then every EVERY-th call of the plan is checked in full. A prime: a batch holding k
# objects of one layout moves them in turn, and an even EVERY (64) left every sentinel
# to the same ones of them (k = 2: the first), so a .to bad for good on the second only
# was never checked again; with a prime, every one of k < EVERY objects meets one.
EVERY = 61
# Classes (those that last) whose full check failed once: checked in full for good.
FAILED: set[type] = set()
forget_with(FAILED)
# The type no result has: a plan's result type that no quick call's result matches
# (results of more than one type, or a refused full check): checked in full for good.
_MIXED = object()


def passed(plan: Any, result: Any, call: tuple[Any, Any]) -> None:
    """Count a call of ``plan`` whose full checks passed, giving ``result``.

    ``call``: its ``(target, non_blocking)``; calls and passes are counted per such
    pair, so each has its own first :data:`FIRST` calls and its own sentinels (calls
    of two pairs taken in turn would otherwise leave every sentinel to one of them).
    """
    kind = type(result)
    if plan.result is None and lasting(kind):
        plan.result = kind
    if plan.result is kind:
        counts = plan.calls.get(call) or plan.calls.setdefault(call, [0, 0])
        counts[1] += 1
    else:  # results of more than one type, or of a class made at run time: in full for good
        plan.result = _MIXED


def failed(plan: Any, cls: type) -> None:
    """A full check of a move of ``cls`` (read by ``plan``, or None) failed: check it in full."""
    if plan is not None:
        plan.result = _MIXED
    if lasting(cls):
        FAILED.add(cls)
