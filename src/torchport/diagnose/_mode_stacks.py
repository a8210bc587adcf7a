"""The calling thread's function and dispatch mode stacks, read and changed through torch's C calls.

An audit puts its function mode at the bottom of the function-mode stack (the program's
own modes rewrite a call first), lifts its modes off for a block and puts them back in
their place, and takes them out in a forked child; the modes above stay in their order.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

__all__ = [
    "DISPATCH_STACK",
    "FUNCTION_STACK",
    "insert_bottom",
    "lifted",
    "pop_stack",
    "push_stack",
    "remove",
    "stack_at",
    "stack_depth",
]

# The dispatch-mode stack, read and changed directly: lift() runs per watched call
stack_depth = torch._C._len_torch_dispatch_stack
stack_at = torch._C._get_dispatch_stack_at
pop_stack = torch._C._pop_torch_dispatch_stack
push_stack = torch._C._push_on_torch_dispatch_stack


class _Stack:
    """One of the calling thread's mode stacks, read and changed through torch's C calls."""

    def __init__(self, size: Any, at: Any, pop: Any, push: Any) -> None:
        self.size, self.at, self.pop, self.push = size, at, pop, push

    def modes(self) -> list[Any]:
        return [self.at(i) for i in range(self.size())]


DISPATCH_STACK = _Stack(
    stack_depth, stack_at, lambda: pop_stack(None), push_stack
)  # None: the user-mode stack, where audit's mode lives
FUNCTION_STACK = _Stack(
    torch._C._len_torch_function_stack,
    torch._C._get_function_stack_at,
    torch._C._pop_torch_function_stack,
    torch._C._push_on_torch_function_stack,
)


def remove(mode: Any, stack: _Stack) -> list[Any]:
    """Take ``mode`` out of ``stack``, leaving the modes above it in order; returns them
    (outermost first), or ``[]`` when ``mode`` is not there."""
    if not any(m is mode for m in stack.modes()):
        return []
    above: list[Any] = []
    while (top := stack.pop()) is not mode:
        above.append(top)
    above.reverse()
    for other in above:
        stack.push(other)
    return above


def insert_bottom(mode: Any, stack: _Stack) -> None:
    """Put ``mode`` under every mode on ``stack``, the others kept in their order."""
    above: list[Any] = []
    while stack.size():
        above.append(stack.pop())
    stack.push(mode)
    for other in reversed(above):
        stack.push(other)


@contextlib.contextmanager
def lifted(mode: Any, stack: _Stack) -> Iterator[None]:
    """``mode`` off ``stack`` for the block, back in its place after."""
    if mode is None or not any(m is mode for m in stack.modes()):
        yield
        return
    above = remove(mode, stack)
    try:
        yield
    finally:
        for _ in above:
            stack.pop()
        stack.push(mode)
        for other in above:
            stack.push(other)
