"""TP403 and TP408 report the line importing from ``torch.cuda.amp``, once, used or not.

Recall round 5d (MIC-DKFZ/nnUNet PR #2684): the maintainers changed
``from torch.cuda.amp import GradScaler``; TP403 reported only the call. Now TP408 (off by
default) reports the used import's line, TP403 the unused one's. The oracle,
written apart from the rule: an import line that binds ``GradScaler`` or ``autocast``
from ``torch.cuda.amp`` (or ``torch.cuda.amp`` under an alias) is reported exactly once
(whether its names are used or not), unless it is used as the fallback of a torch
without ``torch.amp`` (an ``except`` arm, the ``else`` of a version test); any other import
(``torch.amp``, ``torch.cuda``) is not reported; the calls are reported on their lines.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

# (the import, the name it binds for GradScaler (None: none), whether it is the old amp)
IMPORTS = (
    ("from torch.cuda.amp import GradScaler", "GradScaler", True),
    ("from torch.cuda.amp import GradScaler as GS", "GS", True),
    ("from torch.cuda.amp import autocast, GradScaler", "GradScaler", True),
    ("import torch.cuda.amp as amp", "amp.GradScaler", True),
    ("from torch.amp import GradScaler", "GradScaler", False),
    ("from torch.cuda import amp", "amp.GradScaler", False),  # the package: its calls are TP403's
)
# (how the import is placed: a format with {imp}, whether it is a fallback arm)
PLACES = (
    ("{imp}\n", False),
    ("try:\n    import torch.amp\nexcept ImportError:\n    {imp}\n", True),
    ("if torch.__version__ >= '2.3':\n    import torch.amp\nelse:\n    {imp}\n", True),
)


@given(st.sampled_from(IMPORTS), st.sampled_from(PLACES), st.booleans())
def test_the_import_line_is_reported_once(
    imp: tuple[str, str, bool], place: tuple[str, bool], used: bool
) -> None:
    head = "import torch\n" + place[0].format(imp=imp[0])
    line = head.splitlines().index(next(s for s in head.splitlines() if imp[0] in s)) + 1
    source = head + ("\nscaler = " + imp[1] + "()\n" if used else "")
    found = [f.line for f in check_source(source, "a.py", select=["TP403", "TP408"])]
    # a name unused (`autocast` below is never read), it is reported as such wherever it
    # is; all used, the fallback arm is left alone
    unused = not used or "autocast," in imp[0]
    expected = 1 if imp[2] and (unused or not place[1]) else 0
    assert found.count(line) == expected, (source, found)
