"""``_cuda_projects``' two cheap looks at a file's text find what their ``^`` forms found.

``_blocks`` looks for indented imports (``_INDENTED_IMPORT``) and for import lines naming a
CUDA-only package (``_CALLED_IMPORT``) before it walks a file. Both were written with ``^``
and ``re.MULTILINE``, a pattern tried at every character of the text; they now start with a
line break and run on ``"\\n" + source``, so they jump from one line break to the next
(issue 34, branch c34s: 2.4x less over detectron2's files). The oracle is the ``^`` forms as
they were, on generated texts: lines of spaces, tabs, ``import``/``from``, names of CUDA
packages and others, words around them, ``\\r``, other line breaks (``^`` follows ``\\n``
alone), and a text that starts or ends in the middle of a line.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check.rules import _cuda_projects

_INDENTED_AS_IT_WAS = re.compile(r"^[ \t]+(?:import|from)[ \t]+([\w.]+)", re.MULTILINE)
_CALLED_AS_IT_WAS = re.compile(
    r"^[ \t]*(?:import|from)[ \t][^\n]*\b(?:" + "|".join(_cuda_projects._CALLED_PACKAGES) + r")\b",
    re.MULTILINE,
)
_PIECES = st.sampled_from(
    [
        " ", "\t", "  ", "\n", "\r\n", "\r", "\x0c", "\u2028", "#", ".", ",", "(", "\\\n",
        "import", "from", "imports", "xfrom", "mamba_ssm", "amp_C", "apex", "apex.amp",
        "cutlass", "smdistributed", "os", "torch", "fused_cuda", "x_mamba_ssm", "apexx",
        "selective_scan_cuda", "as", "def f():", "if x:", "try:", "pass",
    ]
)  # fmt: skip


@settings(max_examples=600, deadline=None)
@given(st.lists(_PIECES, max_size=40))
def test_the_looks_find_what_their_caret_forms_found(pieces: list[str]) -> None:
    source = "".join(pieces)
    text = "\n" + source
    assert _cuda_projects._INDENTED_IMPORT.findall(text) == _INDENTED_AS_IT_WAS.findall(source)
    found = _cuda_projects._CALLED_IMPORT.search(text) is not None
    assert found == (_CALLED_AS_IT_WAS.search(source) is not None)


def test_a_first_line_counts_as_a_line() -> None:
    """The text's first line has no line break before it: ``"\\n" + source`` gives one."""
    assert _cuda_projects._INDENTED_IMPORT.findall("\n" + "  import amp_C\n") == ["amp_C"]
    assert _cuda_projects._CALLED_IMPORT.search("\n" + "from apex import amp") is not None
    assert _cuda_projects._CALLED_IMPORT.search("\n" + "x = 1  # from apex import amp") is None
