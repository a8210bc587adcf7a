"""TP203 leaves a batch copy whose name the very next statement reads back to the host
(sample AE's F9, judged low: EEG-conditioned-Visual-Captioning's
``labels = batch["label"].to(device)`` then ``labels.tolist()`` builds the targets): the
host waits for that copy at once, so ``non_blocking=True`` overlaps nothing.

Programs are loader loops: the copy (a plain assignment or one element of a tuple
assignment), then a next statement from a table marked by hand (whether it reads the copied
name, and only back to the host), then maybe more. The oracle: the copy is left alone exactly
when the next statement reads the name and every read is ``.tolist()``, ``.item()``,
``.numpy()`` or ``.cpu()`` (through ``.detach()``); a model's use first, a read back one
statement later, a read back of another name stay reported.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# the next statement ({y}: the copied name) -> whether it reads {y} only back to the host
NEXT = {
    "targets = torch.tensor([index[int(v)] for v in {y}.tolist()], device=device)": True,
    "total += {y}.item()": True,
    "seen.extend({y}.cpu().numpy())": True,
    "kept = {y}.detach().cpu()": True,
    "a, b = {y}.tolist(), {y}.cpu()": True,
    # near misses: stay reported
    "out = model(x, {y})": False,
    "out = model(x, {y}); ids = {y}.tolist()": False,
    "loss = criterion(model(x), {y}.long())": False,
    "optimizer.zero_grad()": False,
    "seen.extend(other.tolist())": False,
    "n = {y}.numel()": False,
}
# what comes after the next statement (a read back there changes nothing)
AFTER = ("", "ids = {y}.tolist()", "loss = criterion(model(x), {y})")
COPIES = ("plain", "tuple", "subscript")


def program(copy: str, following: str, after: str) -> tuple[str, int]:
    """The program and the line of the copy of ``y``."""
    if copy == "tuple":
        lines = ["    x, y = x.to(device), y.to(device)"]
    elif copy == "subscript":
        lines = ['    y = batch["label"].to(device)']
    else:
        lines = ["    y = y.to(device)"]
    lines += [f"    {s.format(y='y')}" for s in (following, after) if s]
    loop = "for batch in loader:\n    x, y = batch\n" if copy == "subscript" else ""
    head = "import torch\n\nseen, total, index = [], 0, {}\n"
    if not loop:
        loop = "for x, y in train_loader:\n"
    return head + loop + "\n".join(lines) + "\n", 6 if copy == "subscript" else 5


def copy_of_y_reported(copy: str, following: str, after: str) -> bool:
    source, line = program(copy, following, after)
    findings = check_text(source, "train.py", ruleset_for(["TP203"], None)).findings
    marker = 'batch["label"]' if copy == "subscript" else "y.to("
    col = source.splitlines()[line - 1].index(marker)
    return any(f.code == "TP203" and f.line == line and f.col in (col, col + 1) for f in findings)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(COPIES), st.sampled_from(sorted(NEXT)), st.sampled_from(AFTER))
def test_a_copy_read_back_at_once_is_left_alone(copy: str, following: str, after: str) -> None:
    assert copy_of_y_reported(copy, following, after) is not NEXT[following]


def test_the_sampled_lines() -> None:
    source = (
        "import torch\n\n\ndef evaluate(model, loader, device, index):\n"
        "    for batch in loader:\n"
        '        image_emb = batch["image_emb"].to(device)\n'
        '        labels = batch["label"].to(device)\n'
        "        targets = torch.tensor([index[int(v)] for v in labels.tolist()], device=device)\n"
        "        logits = model(image_emb)\n"
    )
    lines = [f.line for f in check_text(source, "t.py", ruleset_for(["TP203"], None)).findings]
    assert lines == [6]  # image_emb's copy stays; labels' is read back at once
