"""What a leaf of a batch is, by its type: the walker's table, decided once per type.

``place/_tree.py`` classifies a type the first time a batch holds it as a leaf and
writes the answer here when the class lasts (``place/_lasting.py``); every later
batch pays one dict lookup per leaf type. :data:`OBJECT_NODES` lists the object
types the walker registered as nodes (walked through their state, or moved with
their own ``.to``), which ``place/_whole.py`` opens without optree.
"""

from __future__ import annotations

import torch

from torchport.place._lasting import forget_with

__all__ = [
    "INSPECT",
    "KIND",
    "LEAF_MOVER",
    "NEW_NODE",
    "OBJECT_NODES",
    "ONLY_TENSORS",
    "PLAIN",
    "PLAIN_TENSOR_TYPES",
    "REFUSED",
    "TENSOR",
]

# PLAIN must stay the only falsy kind: itertools.compress picks tensors by truth.
PLAIN = 0  # a value: returned as it is
TENSOR = 1  # a torch.Tensor (or subclass)
LEAF_MOVER = 2  # has a .to method but no state the walker can read; the mover calls it
NEW_NODE = 3  # a type just registered: flatten again
REFUSED = 4  # a module, optimizer, scheduler or scaler: never part of a batch
INSPECT = 5  # a value that may hold objects (numpy object arrays, dict views): looked into

ONLY_TENSORS = {TENSOR}
# Leaf types that are tensors without asking KIND: the common batch's fast check.
PLAIN_TENSOR_TYPES = frozenset({torch.Tensor, torch.nn.Parameter})
KIND: dict[type, int] = {
    torch.Tensor: TENSOR,
    torch.nn.Parameter: TENSOR,
    int: PLAIN,
    float: PLAIN,
    bool: PLAIN,
    str: PLAIN,
    bytes: PLAIN,
    type(None): PLAIN,
}
# Object node types that last, by whether they move with their own ``.to`` (True) or are
# walked through their state (False).
OBJECT_NODES: dict[type, bool] = {}
forget_with(KIND, OBJECT_NODES)
