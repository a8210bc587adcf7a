"""What the whole-object loops do with a value of each type (``place/_whole.py``).

Each type gets a code, read from the walker's own tables and remembered once they
have decided it: a value that holds nothing, a tensor, a builtin dict, list or
tuple, an object the walker walks, or one with its own ``.to``.
"""

from __future__ import annotations

import collections
from typing import Any

from torchport.place._copying import read_state, slot_names
from torchport.place._lasting import forget_with
from torchport.place._leaf_kinds import KIND, OBJECT_NODES, PLAIN, TENSOR
from torchport.place._objects import contents

__all__ = [
    "CODES",
    "DICT_CODE",
    "LIST_CODE",
    "MOVES_CODE",
    "MOVES_STATE_CODE",
    "TENSOR_CODE",
    "TUPLE_CODE",
    "VALUE_CODE",
    "WALKED_CODE",
    "WALKED_STATE_CODE",
    "code_of",
    "node_values",
]

_dict_of = object.__getattribute__
_BUILTINS = (dict, list, tuple, set, frozenset, collections.deque)
# Per type, what the loops do with a value of it (see code_of).
VALUE_CODE = 0  # a value that holds nothing (KIND's PLAIN): skipped
TENSOR_CODE = 1  # a tensor
DICT_CODE = 2  # a builtin dict, list or tuple: its items are read
LIST_CODE = 3
TUPLE_CODE = 4
WALKED_CODE = 5  # a registered object walked through its state (all of it in its __dict__)
MOVES_CODE = 6  # a registered object with its own .to (all of its state in its __dict__)
WALKED_STATE_CODE = 7  # the same two, with slots or a builtin base: read as the walker reads them
MOVES_STATE_CODE = 8
# Per type (each lasts: KIND and OBJECT_NODES hold only classes that do, and their
# entries are final): its code above. A type without an entry is decided by code_of.
CODES: dict[type, int] = {dict: DICT_CODE, list: LIST_CODE, tuple: TUPLE_CODE}
forget_with(CODES)


def code_of(cls: type) -> int | None:
    """What the loops do with a value of type ``cls``; None: the walker decides.

    Read from the walker's own tables, and remembered once they have decided ``cls``.
    """
    kind = KIND.get(cls)
    if kind is not None:
        if kind == TENSOR:
            code = TENSOR_CODE
        elif kind == PLAIN:
            code = VALUE_CODE
        else:
            return None  # a value to look into, a leaf .to, or something refused
    else:
        moves = OBJECT_NODES.get(cls)
        if moves is None:
            return None  # not decided yet, or not an object node
        plain = not slot_names(cls) and not issubclass(cls, _BUILTINS)
        moving = MOVES_CODE if plain else MOVES_STATE_CODE
        code = moving if moves else WALKED_CODE if plain else WALKED_STATE_CODE
    CODES[cls] = code
    return code


def node_values(obj: Any, code: int) -> Any:
    """What the walker finds ``obj``'s children in: its ``__dict__``'s values when that is all.

    Otherwise (slots, or a builtin container's subclass) the walker's own reading: an
    object with its own ``.to`` by ``contents``, any other by its state.
    """
    if code is MOVES_CODE or code is WALKED_CODE:
        return _dict_of(obj, "__dict__").values()
    return contents(obj) if code is MOVES_STATE_CODE else read_state(obj).values
