"""The input untouched on every error path: an own ``.to`` that writes through its shallow copy.

An object with its own ``.to`` (and no ``__copy__`` of its own) is moved by that
``.to`` on a shallow copy, which shares every container the input holds. The
invariant: after ``to_device`` or ``DeviceLoader`` raises, every container and
object reachable from the input holds exactly the objects it held before (by
identity, in order); a ``.to`` that changed the input is refused, never let
through. The oracle (:func:`_held`) records what each node reachable from the
input holds by its own walk, apart from ``place/_untouched.py``. States are
generated (dicts, lists, deques, sets, plain objects, objects with slots, at any
depth, tensors and values as leaves), and so is what the ``.to`` does: which
shared container it writes into, how (replace a tensor by its moved copy, add an
item, remove one, set an attribute), and whether it then returns or raises.
"""

from __future__ import annotations

import collections
import operator
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport as tp
from torchport.place._lasting import lasting

META = torch.device("meta")


class Plain:
    """A node walked through its ``__dict__``."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)


class Slotted:
    """A node walked through its slots."""

    __slots__ = ("a", "b")

    def __init__(self, a: Any, b: Any) -> None:
        self.a = a
        self.b = b


def _mutable(root: Any) -> list[Any]:
    """The mutable nodes reachable from ``root``'s attributes, in a fixed order."""
    found: list[Any] = []
    seen: set[int] = set()

    def walk(node: Any) -> None:
        if isinstance(node, torch.Tensor) or id(node) in seen:
            return
        if isinstance(node, dict | list | collections.deque | set | Plain | Slotted | _Keyed):
            seen.add(id(node))
            found.append(node)
        if isinstance(node, dict):
            children = [*node.values(), *getattr(node, "__dict__", {}).values()]
        elif isinstance(node, list | tuple | collections.deque | set | frozenset):
            children = list(node)
        elif isinstance(node, Plain):
            children = list(vars(node).values())
        elif isinstance(node, Slotted):
            children = [getattr(node, name) for name in Slotted.__slots__ if hasattr(node, name)]
        else:
            return
        for child in children:
            walk(child)

    for value in list(vars(root).values()):
        walk(value)
    return found


def _contents(node: Any) -> list[Any]:
    """What ``node`` holds, in order: keys and values of dict items and attributes."""
    if isinstance(node, dict):
        state = [x for item in getattr(node, "__dict__", {}).items() for x in item]
        return [x for item in node.items() for x in item] + state
    if isinstance(node, set):
        return sorted(node, key=id)
    if isinstance(node, Slotted):
        return [getattr(node, n, None) for n in Slotted.__slots__]
    if isinstance(node, list | collections.deque):
        return list(node)
    return [x for item in vars(node).items() for x in item]


def _held(root: Any) -> list[tuple[Any, list[Any]]]:
    """What ``root`` and each node reachable from it hold (the nodes kept alive)."""
    return [(node, _contents(node)) for node in [root, *_mutable(root)]]


def _assert_untouched(before: list[tuple[Any, list[Any]]]) -> None:
    for node, held in before:
        now = _contents(node)
        assert len(now) == len(held), f"a {type(node).__name__} changed size"
        assert all(map(operator.is_, now, held)), f"a {type(node).__name__} holds other objects"


class Broken(Exception):
    """What a generated ``.to`` raises after writing through."""


class WritesThrough:
    """An own ``.to`` (no ``__copy__``) that writes into a node the shallow copy shares.

    ``plan`` (a tuple: values only) says which shared node (index into the oracle's
    order), what to do there, and whether to raise afterwards; ``None`` for a ``.to``
    that rebuilds what it changes and leaves the input alone.
    """

    def __init__(self, plan: tuple[int, str, bool] | None, **state: Any) -> None:
        self.plan = plan
        self.__dict__.update(state)

    def to(self, device: Any) -> WritesThrough:
        if self.plan is None:
            out = WritesThrough.__new__(WritesThrough)
            out.__dict__.update({k: _moved(v, device) for k, v in vars(self).items()})
            return out
        nodes = _mutable(self)
        index, how, fails = self.plan
        _write(nodes[index % len(nodes)], how, device)
        if fails:
            raise Broken("after writing through")
        return self


def _moved(value: Any, device: Any) -> Any:
    """A rebuilt copy of ``value`` with every tensor moved (never writes into it)."""
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, dict):
        return {k: _moved(v, device) for k, v in value.items()}
    if isinstance(value, list | tuple | collections.deque | set | frozenset):
        return type(value)(_moved(v, device) for v in value)
    if isinstance(value, Plain):
        return Plain(**{k: _moved(v, device) for k, v in vars(value).items()})
    if isinstance(value, Slotted):
        return Slotted(_moved(value.a, device), _moved(value.b, device))
    return value


def _write(node: Any, how: str, device: Any) -> None:
    """Change ``node`` in place (the generated write-through)."""
    if isinstance(node, dict):
        keys = [k for k, v in node.items() if isinstance(v, torch.Tensor)]
        if how == "replace" and keys:
            node[keys[0]] = node[keys[0]].to(device)
        elif how == "remove" and node:
            node.pop(next(iter(node)))
        else:
            node["added"] = torch.zeros(1, device=device)
    elif isinstance(node, list | collections.deque):
        spots = [i for i, v in enumerate(node) if isinstance(v, torch.Tensor)]
        if how == "replace" and spots:
            node[spots[0]] = node[spots[0]].to(device)
        elif how == "remove" and node:
            node.pop()
        else:
            node.append(torch.zeros(1, device=device))
    elif isinstance(node, set):
        spots = [v for v in node if isinstance(v, torch.Tensor)]
        if how == "replace" and spots:
            node.discard(spots[0])
            node.add(spots[0].to(device))
        elif how == "remove" and node:
            node.pop()
        else:
            node.add(torch.zeros(1, device=device))
    elif isinstance(node, Slotted):
        node.a = torch.zeros(1, device=device) if how != "remove" else None
    else:
        vars(node)["written"] = torch.zeros(1, device=device)


_leaves = st.one_of(
    st.integers(1, 3).map(lambda n: torch.ones(n)),
    st.integers(0, 9),
)


def _nodes(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.dictionaries(st.sampled_from("abcd"), children, max_size=3),
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(collections.deque),
        st.lists(children, max_size=3).map(tuple),
        st.lists(_leaves, max_size=3).map(set),
        st.fixed_dictionaries({"p": children, "q": children}).map(lambda d: Plain(**d)),
        st.tuples(children, children).map(lambda ab: Slotted(*ab)),
    )


_states = st.dictionaries(
    st.sampled_from(["x", "y", "z"]),
    st.recursive(_leaves, _nodes, max_leaves=8),
    min_size=1,
    max_size=3,
)
_plans = st.one_of(
    st.none(),
    st.tuples(
        st.integers(0, 20), st.sampled_from(["replace", "add", "remove", "set"]), st.booleans()
    ),
)


def _reachable_tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _reachable_tensors(v)]
    if isinstance(value, list | tuple | collections.deque | set | frozenset):
        return [t for v in value for t in _reachable_tensors(v)]
    if isinstance(value, Plain | WritesThrough):
        return [t for v in vars(value).values() for t in _reachable_tensors(v)]
    if isinstance(value, Slotted):
        return _reachable_tensors([value.a, value.b])
    return []


def _case(state: dict[str, Any], plan: tuple[int, str, bool] | None) -> WritesThrough:
    obj = WritesThrough(plan, **state)
    if plan is not None and not _mutable(obj):
        obj.plan = None  # nothing shared to write into
    return obj


class TestAnOwnToThatWritesThroughItsCopy:
    """Refused with the input exactly as it was, or, when it writes nothing, moved."""

    def _check(self, move: Any, obj: WritesThrough) -> None:
        before = _held(obj)
        if obj.plan is None:
            out = move(obj)
            assert all(t.is_meta for t in _reachable_tensors(out))
        else:
            # A .to that raises is wrapped with the path, on the first move of its class
            # (the walker) as on later ones (the whole-object path): the same error type.
            with pytest.raises(tp.UnsupportedBatchError) as caught:
                move(obj)
            if obj.plan[2]:
                assert "Broken" in str(caught.value) or "changed the input" in str(caught.value)
        _assert_untouched(before)

    @given(_states, _plans)
    def test_as_the_batch(self, state: dict[str, Any], plan: Any) -> None:
        obj = _case(state, plan)
        if not _reachable_tensors(obj):
            return
        self._check(lambda o: tp.to_device(o, META), obj)
        # The second time the class is known: the direct path (place/_whole.py).
        self._check(lambda o: tp.to_device(o, META), obj)

    @given(_states, _plans)
    def test_inside_a_batch(self, state: dict[str, Any], plan: Any) -> None:
        obj = _case(state, plan)
        if not _reachable_tensors(obj):
            return
        self._check(lambda o: tp.to_device({"obj": o, "n": 1}, META)["obj"], obj)

    @given(_states, _plans)
    def test_through_the_loader(self, state: dict[str, Any], plan: Any) -> None:
        obj = _case(state, plan)
        if not _reachable_tensors(obj):
            return
        self._check(lambda o: next(iter(tp.DeviceLoader([o], device="meta"))), obj)

    def test_the_quoted_case(self) -> None:
        obj = WritesThrough((0, "replace", False), table={"w": torch.ones(2)})
        before = obj.table["w"]
        with pytest.raises(tp.UnsupportedBatchError, match="changed the input"):
            tp.to_device(obj, META)
        assert obj.table["w"] is before


class TestAfterAMoveWithNothingToMove:
    """A class whose last move found every tensor there is recorded apart, checked the same.

    (``place/_whole.py`` lays the record while it reads the input only when the
    class's last move called its ``.to``; otherwise it records before the call.)
    """

    @given(_states, _plans)
    def test_a_write_through_is_refused_with_the_input_put_back(
        self, state: dict[str, Any], plan: Any
    ) -> None:
        obj = _case(state, plan)
        if not _reachable_tensors(obj):
            return
        there = WritesThrough(None, t=torch.ones(1, device=META))
        for _ in range(3):  # its class known, then moved whole with nothing to move
            assert tp.to_device(there, META) is there
        TestAnOwnToThatWritesThroughItsCopy()._check(lambda o: tp.to_device(o, META), obj)


class TestAMoveThatComesLater:
    """Read now, moved later (a prefetching loader's hand-over): the record is taken then.

    A change made to the input between the read and the move (by the program, not by
    the ``.to``) is kept: the move takes it as the input, never puts it back.
    """

    @given(_states)
    def test_a_change_made_meanwhile_is_kept(self, added: dict[str, Any]) -> None:
        from torchport.place._whole import move_whole, whole_tensors

        table = {"w": torch.ones(2)}
        obj = WritesThrough(None, table=table)
        tp.to_device(obj, META)
        tp.to_device(obj, META)  # moved whole from now on
        inside = whole_tensors(obj, lay=False)
        assert inside is not None
        table.update(added)  # the program changes the input before the hand-over
        held = dict(table)
        out = move_whole(obj, inside, META, None)
        assert obj.table is table and table.keys() == held.keys()
        assert all(table[k] is v for k, v in held.items())
        assert all(t.is_meta for t in _reachable_tensors(out))

    @given(_states, _plans)
    def test_what_was_added_meanwhile_is_checked_and_moved(
        self, added: dict[str, Any], plan: Any
    ) -> None:
        # A node added between the read and the move is recorded (a .to writing into it
        # is refused, the input put back), and a tensor added to an input whose tensors
        # were all there at the read is moved (the object is not handed back as it is).
        from torchport.place._whole import move_whole, whole_tensors

        # (on the target already, unless the .to writes through: then what it replaces
        # is the input's own CPU tensor)
        obj = WritesThrough(None, table={"w": torch.ones(2, device="cpu" if plan else META)})
        tp.to_device(obj, META)
        tp.to_device(obj, META)  # moved whole from now on
        inside = whole_tensors(obj, lay=False)
        assert inside is not None
        obj.__dict__.update(added)  # the program adds to the input before the hand-over
        obj.plan = plan if _mutable(obj) else None
        check = TestAnOwnToThatWritesThroughItsCopy()._check
        check(lambda o: move_whole(o, inside, META, None), obj)


class SharesOnCopy(WritesThrough):
    """The same ``.to``, on a class with a ``__copy__`` of its own that shares what it holds.

    As PyTorch Geometric's ``Data.__copy__`` shares every ``__dict__`` entry but its
    storage: a subclass whose ``.to`` writes into one (a cache dict) changes the input.
    """

    def __copy__(self) -> SharesOnCopy:
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out


class _Made:
    """Holds the classes made per example, so that they last (``place/_lasting.py``)."""


def _lasting_class_with_copy() -> type[SharesOnCopy]:
    """A new class with its own ``__copy__`` that its module holds: movers may remember it."""
    name = f"SharesOnCopy{len(vars(_Made))}"
    cls = type(name, (SharesOnCopy,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    setattr(_Made, name, cls)
    assert lasting(cls)
    return cls


class TestAClassWithItsOwnCopy:
    """A ``__copy__`` of its own is trusted only after a checked move left the input alone.

    Each example is a new class (one that lasts, so that the movers may remember it):
    its first move, and every later one while it keeps writing through, is refused
    with the input as it was; one that writes nothing is moved.
    """

    @given(_states, _plans, st.sampled_from(["batch", "inside", "loader"]))
    def test_a_write_through_is_caught_on_the_first_move(
        self, state: dict[str, Any], plan: Any, how: str
    ) -> None:
        obj = _case(state, plan)
        if not _reachable_tensors(obj):
            return
        obj.__class__ = _lasting_class_with_copy()
        moves = {
            "batch": lambda o: tp.to_device(o, META),
            "inside": lambda o: tp.to_device({"obj": o, "n": 1}, META)["obj"],
            "loader": lambda o: next(iter(tp.DeviceLoader([o], device="meta"))),
        }
        check = TestAnOwnToThatWritesThroughItsCopy()._check
        check(moves[how], obj)
        check(moves[how], obj)  # the class known now: refused again, or trusted and moved

    @given(_states, _plans)
    def test_one_with_other_attributes_is_checked_again(
        self, state: dict[str, Any], plan: Any
    ) -> None:
        # A class trusted after a clean move of an object without the attribute its .to
        # writes into (a PyG Data given a cache dict) is checked again for one with it.
        cls = _lasting_class_with_copy()
        clean = cls(None, w=torch.ones(1))  # other names than the generated states
        tp.to_device(clean, META)
        tp.to_device(clean, META)
        obj = _case(state, plan)
        if not _reachable_tensors(obj):
            return
        obj.__class__ = cls
        check = TestAnOwnToThatWritesThroughItsCopy()._check
        check(lambda o: tp.to_device(o, META), obj)


class SomeValues:
    """An own ``.to`` that writes through its shallow copy only for some values.

    ``when`` (values only) says when it writes into the ``table`` dict the copy shares
    with the input: ``("bigger", n)``, for a tensor of more than ``n`` elements;
    ``("call", k)``, on the ``k``-th call of the class's ``.to`` and later;
    ``("key", name)``, when the table holds that key. Otherwise it rebuilds the table.
    """

    calls = 0

    def __init__(self, when: tuple[str, Any], table: dict[str, Any]) -> None:
        self.when = when
        self.table = table

    def writes(self) -> bool:
        how, arg = self.when
        if how == "bigger":
            return any(v.numel() > arg for v in self.table.values())
        if how == "call":
            return type(self).calls >= arg
        return arg in self.table

    def to(self, device: Any) -> SomeValues:
        type(self).calls += 1
        if self.writes():
            for k in list(self.table):
                self.table[k] = self.table[k].to(device)  # into the input's dict
            return self
        out = type(self).__new__(type(self))
        out.when = self.when
        out.table = {k: v.to(device) for k, v in self.table.items()}
        return out


class SomeValuesCopied(SomeValues):
    """The same, with a ``__copy__`` of its own that shares the table (as PyG's ``Data``)."""

    def __copy__(self) -> SomeValuesCopied:
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out


def _lasting_some_values(base: type[SomeValues]) -> type[SomeValues]:
    """A new class that lasts (so that movers may remember it), its call count at zero."""
    name = f"{base.__name__}{len(vars(_Made))}"
    cls = type(name, (base,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    setattr(_Made, name, cls)
    return cls


_whens = st.one_of(
    st.tuples(st.just("bigger"), st.integers(1, 4)),
    st.tuples(st.just("call"), st.integers(2, 4)),
    st.tuples(st.just("key"), st.sampled_from("pq")),
)


class TestAWriteThroughForSomeValuesOnly:
    """Every move is checked: clean moves first trust nothing, each writing move is refused.

    The oracle is the test's own deep record of the input (``_held``): after each
    refused move every node holds exactly what it held; each clean move gives a
    moved table and leaves the input alone.
    """

    @given(
        _whens,
        st.sampled_from([SomeValues, SomeValuesCopied]),
        st.sampled_from(["batch", "inside", "loader"]),
    )
    def test_each_writing_move_is_refused_with_the_input_put_back(
        self, when: tuple[str, Any], base: type[SomeValues], how: str
    ) -> None:
        cls = _lasting_some_values(base)
        moves = {
            "batch": lambda o: tp.to_device(o, META),
            "inside": lambda o: tp.to_device({"obj": o, "n": 1}, META)["obj"],
            "loader": lambda o: next(iter(tp.DeviceLoader([o], device="meta"))),
        }
        path = "batch['obj']" if how == "inside" else "batch"
        # Small tables without the keys first, then bigger ones and the keys: for each
        # kind of `when`, clean moves come first and writing ones later.
        tables = [{"a": torch.ones(1)}, {"a": torch.ones(1), "b": torch.ones(1)}]
        tables += [{"a": torch.ones(5)}, {"p": torch.ones(1)}, {"q": torch.ones(2)}] * 2
        clean = 0
        for table in tables:
            obj = cls(when, table)
            will_write = obj.writes() if when[0] != "call" else cls.calls + 1 >= when[1]
            before = _held(obj)
            if will_write:
                with pytest.raises(tp.UnsupportedBatchError) as caught:
                    moves[how](obj)
                assert path in str(caught.value)
                assert "changed the input" in str(caught.value)
            else:
                out = moves[how](obj)
                assert all(t.is_meta for t in out.table.values())
                clean += 1
            _assert_untouched(before)
            assert all(not t.is_meta for t in obj.table.values())
        assert clean >= 1  # trusted first by clean moves, as the hole needed


class _Keyed(dict):  # type: ignore[type-arg]
    """A dict subclass with attributes of its own: recorded node by node (items and state)."""


def _record_nodes(root: Any) -> list[Any]:
    """The nodes of ``root`` (the oracle's order), with the ``_Keyed`` ones, for ``record``."""
    return [n for n in _mutable(root) if not isinstance(n, frozenset)]


_edits = st.lists(
    st.tuples(
        st.integers(0, 30),
        st.integers(0, 30),
        st.sampled_from(["same", "replace", "add", "remove", "move", "swap", "state", "rekey"]),
    ),
    max_size=3,
)


def _edit(nodes: list[Any], first: int, second: int, how: str) -> None:
    """Change ``nodes[first]`` in place (or write back what it holds: ``same``)."""
    node = nodes[first % len(nodes)]
    other = nodes[second % len(nodes)]
    fresh = torch.zeros(1)
    if how == "same":  # writes that leave it holding the very same objects
        if isinstance(node, dict):
            for k in list(node):
                node[k] = node[k]
        elif isinstance(node, list):
            node[:] = list(node)
        elif isinstance(node, Plain):
            vars(node).update(dict(vars(node)))
        return
    if how == "move" and node is not other and type(node) is type(other):
        # One item from the end of one node to the front of another: the items laid end
        # to end are the same, only where one node stops and the next starts moved.
        if isinstance(node, list) and node:
            other.insert(0, node.pop())
        elif isinstance(node, collections.deque) and node:
            other.appendleft(node.pop())
        elif isinstance(node, dict) and node:
            key = next(reversed(node))
            value = node.pop(key)
            rest = dict(other)
            other.clear()
            other[key] = value
            other.update(rest)
        else:
            _write(node, "add", "cpu")
        return
    if how == "swap" and isinstance(node, list | collections.deque) and len(node) > 1:
        node[0], node[1] = node[1], node[0]
    elif how == "swap" and isinstance(node, dict) and len(node) > 1:
        items = list(node.items())
        node.clear()
        node.update(reversed(items))
    elif how == "state" and isinstance(node, _Keyed):
        node.extra = fresh
    elif how == "rekey" and isinstance(node, dict) and node:
        key = next(iter(node))
        node[f"{key}'"] = node.pop(key)
    else:
        _write(node, how if how in ("replace", "add", "remove") else "set", "cpu")


def _with_keyed(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    def keyed(items: dict[str, Any]) -> _Keyed:
        out = _Keyed(items)
        out.tag = torch.ones(1)
        return out

    return st.one_of(
        _nodes(children), st.dictionaries(st.sampled_from("ab"), children, max_size=2).map(keyed)
    )


_record_states = st.dictionaries(
    st.sampled_from(["x", "y", "z"]),
    st.recursive(_leaves, _with_keyed, max_leaves=8),
    min_size=1,
    max_size=3,
)


class TestTheRecord:
    """``record``'s own check, against the test's oracle (``_held``) on generated edits.

    The invariant under every mover's check: ``changed()`` is true exactly when some
    recorded node holds other objects, or the same in another order or split
    differently between nodes (an item moved from the end of one node to the front
    of the next); and ``restore()`` makes each node hold exactly what it held.
    """

    @given(_record_states, _edits)
    def test_changed_exactly_when_a_node_holds_other_objects(
        self, state: dict[str, Any], edits: list[tuple[int, int, str]]
    ) -> None:
        from torchport.place._untouched import record

        root = Plain(**state)
        nodes = [root, *_record_nodes(root)]
        before = _held(root)
        snap = record(nodes)
        for first, second, how in edits:
            _edit(nodes, first, second, how)
        now = _held(root)
        moved = len(now) != len(before) or any(
            node is not was or len(a) != len(b) or not all(map(operator.is_, a, b))
            for (node, a), (was, b) in zip(now, before, strict=False)
        )
        assert snap.changed() == moved
        snap.restore()
        _assert_untouched(before)
        if not any(isinstance(n, set) for n in nodes):  # (a set rebuilt may iterate otherwise)
            assert not snap.changed()

    @given(_states, _edits)
    def test_the_record_laid_while_reading_is_the_record(
        self, state: dict[str, Any], edits: list[tuple[int, int, str]]
    ) -> None:
        # The whole-object mover lays its record while it reads the input
        # (place/_whole.py's _read): that record, checked after generated edits, says
        # what the oracle says, exactly as one laid apart would.
        from torchport.place._untouched import Snapshot
        from torchport.place._whole import whole_tensors

        obj = WritesThrough(None, **state)
        if not _reachable_tensors(obj):
            return
        tp.to_device(obj, META)  # the walker registers the types it meets
        tp.to_device(obj, META)  # (moved whole now, if it can be: its .to called)
        inside = whole_tensors(obj)
        if inside is None:
            return  # the walker moves it (a deque, a set, a tensor held twice, ...)
        assert inside.laid is not None  # its class's last move called its .to
        nodes = list(inside.nodes)
        snap = Snapshot(nodes, inside.laid)
        before = _held(obj)
        assert not snap.changed()
        for first, second, how in edits:
            _edit(nodes, first, second, how)
        now = _held(obj)
        moved = len(now) != len(before) or any(
            node is not was or len(a) != len(b) or not all(map(operator.is_, a, b))
            for (node, a), (was, b) in zip(now, before, strict=False)
        )
        assert snap.changed() == moved


_IN_PLACE = {
    "copy_": lambda t: t.copy_(t + 1),
    "add_": lambda t: t.add_(1),
    "resize_": lambda t: t.resize_(t.numel() + 1),
    "unsqueeze_": lambda t: t.unsqueeze_(0),
    "set_": lambda t: t.set_(torch.zeros(3)),
    "view_add_": lambda t: t.view(-1)[:1].add_(1),  # through a view of it
}


class ChangesATensor:
    """An own ``.to`` that changes one of the input's tensors in place from its ``k``-th call on.

    ``how`` names the in-place operation (``_IN_PLACE``) and ``at`` the attribute
    (``t0``..``t2``) it runs on; the shallow copy shares those tensors with the input.
    Otherwise, and besides, it returns a moved copy.
    """

    calls = 0

    def __init__(self, how: str, at: int, k: int) -> None:
        self.how, self.at, self.k = how, at, k
        self.t0, self.t1, self.t2 = torch.ones(2), torch.arange(3.0), torch.zeros(2, 2)

    def to(self, device: Any) -> ChangesATensor:
        cls = type(self)
        cls.calls += 1
        if cls.calls >= self.k:
            _IN_PLACE[self.how](getattr(self, f"t{self.at}"))
        out = cls.__new__(cls)
        out.__dict__.update(
            {n: v.to(device) if isinstance(v, torch.Tensor) else v for n, v in vars(self).items()}
        )
        return out


def _tensor_state(obj: Any) -> list[tuple[int, tuple[int, ...], list[float]]]:
    """The oracle's record of the input's tensors: identity, shape and values."""
    return [(id(t), tuple(t.shape), t.flatten().tolist()) for t in (obj.t0, obj.t1, obj.t2)]


class TestAnOwnToThatChangesAnInputTensorInPlace:
    """No move lets through a ``.to`` that changed one of the input's tensors in place.

    The oracle is the test's own record of the input's tensors (shape and values)
    and containers (``_held``): after each move either nothing changed and the
    result is on the target, or the move raised ``UnsupportedBatchError`` naming the
    path (the tensor change itself cannot be undone; the containers are as they were).
    """

    @given(
        st.sampled_from(sorted(_IN_PLACE)),
        st.integers(0, 2),
        st.integers(1, 3),
        st.sampled_from(["batch", "inside", "loader"]),
    )
    def test_each_changing_move_is_refused(self, how: str, at: int, k: int, where: str) -> None:
        cls = _lasting_changes_a_tensor()
        moves = {
            "batch": lambda o: tp.to_device(o, META),
            "inside": lambda o: tp.to_device({"obj": o, "n": 1}, META)["obj"],
            "loader": lambda o: next(iter(tp.DeviceLoader([o], device="meta"))),
        }
        path = "batch['obj']" if where == "inside" else "batch"
        for _ in range(3):  # clean moves before the k-th call, changing ones from it
            obj = cls(how, at, k)
            tensors, held = _tensor_state(obj), _held(obj)
            try:
                out = moves[where](obj)
            except tp.UnsupportedBatchError as exc:
                assert f"{path} of type" in str(exc)
                assert "changed one of the input's tensors in place" in str(exc)
                assert _tensor_state(obj) != tensors  # refused for a change that happened
            else:
                assert _tensor_state(obj) == tensors, "the input's tensor changed silently"
                assert all(t.is_meta for t in (out.t0, out.t1, out.t2))
            _assert_untouched(held)


def _lasting_changes_a_tensor() -> type[ChangesATensor]:
    """A new class that lasts (movers may remember it), its call count at zero."""
    name = f"ChangesATensor{len(vars(_Made))}"
    cls = type(name, (ChangesATensor,), {"__module__": __name__, "__qualname__": f"_Made.{name}"})
    setattr(_Made, name, cls)
    return cls


class FailsOnce:
    """An own ``.to`` that raises on its first call only, counting its calls."""

    calls = 0

    def __init__(self) -> None:
        self.t = torch.ones(2)

    def to(self, device: Any) -> FailsOnce:
        type(self).calls += 1
        if type(self).calls == 1:
            raise Broken("first call")
        out = type(self).__new__(type(self))
        out.t = self.t.to(device)
        return out


@given(st.integers(0, 3), st.sampled_from(["dict", "list", "tuple"]))
def test_a_failing_move_calls_each_objects_to_once_and_names_its_path(
    depth: int, container: str
) -> None:
    # The walker rebuilds a failed batch again to find the path; the object's .to is
    # not called a second time (it could succeed then, or repeat a side effect).
    cls = type("FailsOnceMade", (FailsOnce,), {"calls": 0})
    obj = cls()
    batch: Any = obj
    path = ""
    for _ in range(depth):
        batch = {"k": batch} if container == "dict" else [batch]
        batch = tuple(batch) if container == "tuple" else batch
        path = ("['k']" if container == "dict" else "[0]") + path
    with pytest.raises(tp.UnsupportedBatchError, match="first call") as caught:
        tp.to_device({"n": 1, "b": batch}, META)
    assert f"batch['b']{path} of type" in str(caught.value)
    assert cls.calls == 1


class _PeekKey:
    """A table key whose hash runs ``hook`` once the input is being put back (see below)."""

    hook: Any = None

    def __init__(self, name: str) -> None:
        self.name = name

    def __hash__(self) -> int:
        hook = type(self).hook
        if hook is not None:
            hook()
        return hash(self.name)


class _WritesThroughKeyed:
    """An own ``.to`` writing the moved tensors into the table its shallow copy shares."""

    def __init__(self, table: dict[Any, torch.Tensor]) -> None:
        self.table = table

    def __copy__(self) -> _WritesThroughKeyed:
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def to(self, device: Any) -> _WritesThroughKeyed:
        for k in list(self.table):
            self.table[k] = self.table[k].to(device)
        return self


def test_an_input_read_while_it_is_being_put_back_is_read_again() -> None:
    # Invariant: a move that read its input while another move was putting that input
    # back (a refused .to) reads it again before it decides anything; else it may take
    # the half-restored input (here: emptied) for "every tensor there" and hand back
    # the input, host tensors and all, as moved. Another thread's read is made here, at
    # the worst moment, by the hash of a key being put back.
    from torchport.place import move_whole, whole_tensors
    from torchport.place._untouched import RESTORED

    obj = _WritesThroughKeyed({_PeekKey("w"): torch.ones(2), _PeekKey("b"): torch.ones(3)})
    for _ in range(2):  # the class registered, then its plan made
        with pytest.raises(tp.UnsupportedBatchError, match="changed the input"):
            tp.to_device(obj, META)
    start = RESTORED[0]
    read: list[Any] = []

    def peek() -> None:
        if RESTORED[0] != start and not read:
            read.append(whole_tensors(obj))

    _PeekKey.hook = peek
    try:
        with pytest.raises(tp.UnsupportedBatchError, match="changed the input"):
            tp.to_device(obj, META)
    finally:
        _PeekKey.hook = None
    assert read and read[0] is not None
    assert all(not t.is_meta for t in obj.table.values())  # put back
    with pytest.raises(tp.UnsupportedBatchError, match="changed the input"):
        move_whole(obj, read[0], META, None)  # the late reader: refused too, not "there"
