"""TP202 leaves reads of a function's own dict entries that it stores only on the CPU.

Generated functions bind a dict (a display, a comprehension, or not their own: a
parameter, a call's result), store one to three values under ``[split]["y"]`` (CPU
tensors, device tensors, a model's output), maybe move an entry elsewhere, and read
``(data["train"]["y"] == i).sum().item()`` in a loop that runs a model. The oracle is
what was generated: the read waits for nothing only when the dict is the function's
own, every value stored under ``"y"`` is made on the CPU and no entry is moved; every
other read is reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

DICTS = {  # how `data` is bound, and whether it is the function's own dict
    "data = {}": True,
    'data = {s: {} for s in ("train", "test")}': True,
    "data = load(path)": False,
    "": False,  # the parameter
}
STORES = {  # a value stored under "y", and whether it is on the CPU
    "torch.LongTensor(labels)": True,
    "torch.tensor(labels)": True,
    "torch.zeros(n, dtype=torch.long)": True,
    "torch.tensor(labels).cuda()": False,
    "torch.tensor(labels, device=device)": False,
    "model(x)": False,
}
MOVES = ("", 'data["train"]["y"].pin_memory()', 'send(data["test"]["y"].to(device))')


def reported(dict_: str, stores: list[str], move: str) -> bool:
    body = [dict_] if dict_ else []
    body += ["for split in splits:", *(f'    data[split]["y"] = {s}' for s in stores)]
    body += [move] if move else []
    body += [
        "for i in range(k):",
        "    out = model(x)",
        '    counts.append((data["train"]["y"] == i).sum().item())',
    ]
    params = "splits" if dict_ else "data, splits"
    source = f"import torch\n\n\ndef load_data({params}):\n"
    source += "".join(f"    {line}\n" for line in body)
    return bool(check_text(source, "m.py", ruleset_for(["TP202"], None)).findings)


CPU = sorted(s for s in STORES if STORES[s])


@given(dict_=st.sampled_from(sorted(DICTS)), stores=st.lists(st.sampled_from(CPU), min_size=1))
def test_only_the_function_s_own_dict_is_known(dict_: str, stores: list[str]) -> None:
    assert reported(dict_, stores, "") != DICTS[dict_], (dict_, stores)


@given(
    dict_=st.sampled_from(sorted(d for d in DICTS if DICTS[d])),
    stores=st.lists(st.sampled_from(sorted(STORES)), min_size=1, max_size=3),
    move=st.sampled_from(MOVES),
)
def test_entries_stored_on_the_cpu_only_are_left(dict_: str, stores: list[str], move: str) -> None:
    host = all(STORES[s] for s in stores) and not move
    assert reported(dict_, stores, move) != host, (dict_, stores, move)
