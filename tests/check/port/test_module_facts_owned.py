"""``ModuleFacts.owned``: the module's ``owners`` as a mapping, made once and kept.

Kept on the (frozen) facts as a cache, it must not change what the facts are: equality,
hash, pickling (facts travel to worker processes) and the mapping itself are as if it
were made again at each question, as before.
"""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from torchport.check.port._project import ModuleFacts

owned = st.tuples(
    st.booleans(), st.frozensets(st.sampled_from(("to", "cuda", "cpu"))), st.text(max_size=5)
)
owners = st.lists(st.tuples(st.sampled_from(("Net", "net", "Batch", "f")), owned), max_size=6)


@given(owners=owners, asked_first=st.booleans())
def test_owned_is_the_owners_mapping_and_leaves_the_facts_as_they_are(
    owners: list[tuple[str, tuple[bool, frozenset[str], str]]], asked_first: bool
) -> None:
    facts = ModuleFacts(path="m.py", owners=tuple(owners))
    twin = ModuleFacts(path="m.py", owners=tuple(owners))
    if asked_first:
        _ = facts.owned  # made and kept here; the twin's is not
    expected: dict[str, object] = {}
    for name, found in owners:
        expected[name] = found  # the last binding of a name wins, as dict() of the pairs
    assert dict(facts.owned) == expected
    assert facts.owned is facts.owned  # made once
    assert facts == twin and hash(facts) == hash(twin)
    back = pickle.loads(pickle.dumps(facts))
    assert back == facts and dict(back.owned) == expected
