"""TP109 leaves the CUDA-or-CPU device choices of code a test runner collects.

The standard (one, for every sample): a file in a folder named ``test`` or ``tests``, a
``conftest.py``, a file in a ``testing`` folder that imports ``pytest`` or ``unittest``
(a project's test helpers; ``torch.testing``, importing neither, is an API), a module
pytest collects (``test_*.py``, ``*_test.py``) importing one of them, or a
``test*`` function or ``Test*`` class in a file that imports ``pytest`` or ``unittest``
is test code; there the choice is low value and not reported.
A program named like a test (``attack_defense_test.py`` whose ``test_*`` functions no
test framework's import marks) is a program and stays reported, as does every
choice outside test code. Paths, imports, the enclosing definition and the idiom are
drawn at random; the oracle below is the standard written out on the drawn parts.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

FOLDERS = ("src", "experiments", "test", "tests", "testing", "my_tests", "unit_test", "pkg")
FILES = ("run.py", "conftest.py", "test_agent.py", "agent_test.py", "tests.py", "model.py")
IMPORTS = {  # an import line, and whether it is a test framework's
    "": False,
    "import pytest": True,
    "import unittest": True,
    "from unittest import mock": True,
    "from pytest import approx": True,
    "import pytest_benchmark": False,
    "import numpy as np": False,
}
CHOICES = (
    'device = torch.device("cuda" if torch.cuda.is_available() else "cpu"); model.to(device)',
    'parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")',
    "if torch.cuda.is_available():\n    model.cuda()",
)
# Where the choice sits: (header lines, whether it is a test definition)
PLACES = {
    "module": ((), False),
    "def get_args():": (("def get_args():",), False),
    "def test_train():": (("def test_train():",), True),
    "class TestAgent: def setup(self):": (("class TestAgent:", "    def setup(self):"), True),
    "class Agent: def test_x(self):": (("class Agent:", "    def test_x(self):"), True),
    # pytest collects classes by the prefix `Test`: `Tester`'s helpers are test code too
    "class Tester: def run(self):": (("class Tester:", "    def run(self):"), True),
    "class Runner: def run(self):": (("class Runner:", "    def run(self):"), False),
    "def tester():": (("def tester():",), True),  # `test*`, as pytest's default
    # a fixture makes a test's inputs: test code in a file importing a test framework
    "@pytest.fixture def dev():": (("@pytest.fixture", "def dev():"), True),
    "@pytest.fixture(params=[0, 1]) def inputs(request):": (
        ("@pytest.fixture(params=[0, 1])", "def inputs(request):"),
        True,
    ),
    "@fixture(scope='module') def dev():": (("@fixture(scope='module')", "def dev():"), True),
    "@functools.cache def dev():": (("@functools.cache", "def dev():"), False),
}


def program(imports: str, place: str, choice: str) -> str:
    headers, _ = PLACES[place]
    indent = "    " * len(headers)
    body = "\n".join(indent + line for line in choice.splitlines())
    return "\n".join(("import torch", imports, "", *headers, body, ""))


@given(
    folders=st.lists(st.sampled_from(FOLDERS), max_size=3),
    file=st.sampled_from(FILES),
    imports=st.sampled_from(sorted(IMPORTS)),
    place=st.sampled_from(sorted(PLACES)),
    choice=st.sampled_from(CHOICES),
)
@example([], "run.py", "import pytest", "@functools.cache def dev():", CHOICES[0])
@example([], "run.py", "import pytest", "@pytest.fixture def dev():", CHOICES[0])
@example(["pkg", "testing"], "model.py", "import unittest", "module", CHOICES[0])
@example(["pkg", "testing"], "model.py", "import numpy as np", "module", CHOICES[0])
# sample L: botorch's test_community/models/test_np_regression.py, a module-level device
@example(["test_community"], "test_agent.py", "import unittest", "module", CHOICES[0])
@example(["test_community"], "agent_test.py", "", "module", CHOICES[0])
def test_a_device_choice_is_reported_outside_test_code_only(
    folders: list[str], file: str, imports: str, place: str, choice: str
) -> None:
    path = "/".join((*folders, file))
    source = program(imports, place, choice)
    test_code = (
        file == "conftest.py"
        or "test" in folders
        or "tests" in folders
        or ("testing" in folders and IMPORTS[imports])  # a project's test helpers
        or (file in ("test_agent.py", "agent_test.py") and IMPORTS[imports])  # pytest's modules
        or (PLACES[place][1] and IMPORTS[imports])
    )
    found = check_text(source, path, ruleset_for(["TP109"], None)).findings
    assert bool(found) != test_code, (path, source)
