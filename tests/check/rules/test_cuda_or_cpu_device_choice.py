"""TP109 leaves tests: a test run on the CPU where MPS or XPU is available passes all the same.

Generated files, named at random (``test_*.py``, ``*_test.py`` or not), hold a
CUDA-or-CPU choice (an argument parser's default, a conditional, an ``if`` moving a
model) at the top level or in a function named at random (``test_*`` or not). The
oracle is written apart: the choice is a test's when the file's name starts with
``test_`` or ends with ``_test.py``, or the function's name starts with ``test``; only
then is it left, and every other choice is reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

FILES = ("test_npg.py", "ppo_test.py", "train.py", "tests.py", "gather_data.py", "contest.py")
FUNCTIONS = ("test_trpo", "testing", "get_args", "run", None)
CHOICES = (
    'parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")',
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    "if torch.cuda.is_available():\n    model.cuda()",
)


@given(
    file=st.sampled_from(FILES),
    function=st.sampled_from(FUNCTIONS),
    choice=st.sampled_from(CHOICES),
)
def test_a_test_s_device_choice_is_left(file: str, function: str | None, choice: str) -> None:
    if function is None:
        body = choice
    else:
        body = f"def {function}(parser, model):\n" + "".join(
            f"    {line}\n" for line in choice.splitlines()
        )
    source = f"import torch\n\n\n{body}\n"
    found = check_text(source, file, ruleset_for(["TP109"], None)).findings
    test = file.startswith("test_") or file.endswith("_test.py")
    test = test or (function is not None and function.startswith("test"))
    assert bool(found) != test, (file, source)
