"""TP101 leaves CUDA past ``if not self.<flag>: return`` where ``<flag>`` is bound once, in
``__init__``, to a test saying the device is CUDA, and nothing else in the repository writes
it (``rules/_instance_flags.py``; sample Y's N2, judged noise: nnue-pytorch's
``_resolve_prefetch_device``).

Repositories are made from three tables marked by hand: what the flag is bound to (whether
it holding means the device is CUDA), the exit before the line (whether the line runs only
where the flag holds), and what else the repository holds (whether nothing else may set the
flag). The oracle: TP101 leaves the line alone exactly when all three say so.
"""

from __future__ import annotations

import tempfile
from itertools import product
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# what `self.prefetch` is bound to in `__init__` -> does it holding mean CUDA?
VALUES = {
    'self.device is not None and self.device.type == "cuda"': True,
    'self.device.type == "cuda"': True,
    'device.type == "cuda"': True,
    "torch.cuda.is_available()": False,  # CUDA there, not the caller's device
    'self.device.type != "cpu"': False,  # MPS and XPU too
    "eager": False,  # the caller's flag
    'self.device.type == "cuda" or eager': False,
}
# the statements before the CUDA line -> does the line run only where the flag holds?
EXITS = {
    "if not self.prefetch:\n            return None": True,
    "if not self.prefetch:\n            return": True,
    "if self.prefetch:\n            return None": False,
    "if not self.prefetch:\n            print(1)": False,
    "if not self.other:\n            return None": False,
    "pass": False,
    "the line first": False,  # the exit after it
    "the line in a block": True,  # past the exit, inside `with torch.no_grad():`
}
# what else the repository holds -> does nothing else set the flag?
ELSEWHERE = {
    "nothing": True,
    "a caller setting it": False,
    "setattr by name": False,
    "a subclass's class attribute": False,
    "a config naming it": False,
    "a method re-binding it": False,
    "a method deleting it": False,
    "a packaging file (an installed library)": False,
}
CUDA_LINE = 'dev = torch.device("cuda", torch.cuda.current_device())'


def _write(root: Path, value: str, exit_: str, elsewhere: str) -> tuple[Path, int]:
    (root / ".git").mkdir()
    extra = ""
    if elsewhere == "a method re-binding it":
        extra = "\n    def disable(self):\n        self.prefetch = False\n"
    elif elsewhere == "a method deleting it":
        extra = "\n    def drop(self):\n        del self.prefetch\n"
    module = root / "loader.py"
    module.write_text(
        "import torch\n\n\nclass Loader:\n"
        "    def __init__(self, device, eager=False):\n"
        "        self.device = device\n        self.other = True\n"
        f"        self.prefetch = {value}\n\n"
        f"    def prefetch_device(self):\n{_body(exit_)}{extra}"
    )
    other = {
        "a caller setting it": "from loader import Loader\n\nl = Loader(None)\nl.prefetch = True\n",
        "setattr by name": 'from loader import Loader\n\nsetattr(Loader(None), "prefetch", 1)\n',
        "a subclass's class attribute": "from loader import Loader\n\n\n"
        "class Eager(Loader):\n    prefetch = True\n\n    def __init__(self):\n        pass\n",
    }
    if elsewhere in other:
        (root / "main.py").write_text(other[elsewhere])
    elif elsewhere == "a config naming it":
        (root / "config.yaml").write_text("loader:\n  prefetch: true\n")
    elif elsewhere.startswith("a packaging file"):
        (root / "pyproject.toml").write_text('[project]\nname = "loader"\n')
    lines = [text.strip() for text in module.read_text().splitlines()]
    line = lines.index(CUDA_LINE) + 1
    return module, line


def _body(exit_: str) -> str:
    guard = "if not self.prefetch:\n            return None"
    if exit_ == "the line first":
        lines = [CUDA_LINE, guard, "return dev"]
    elif exit_ == "the line in a block":
        lines = [guard, "with torch.no_grad():", f"    {CUDA_LINE}", "return dev"]
    else:
        lines = [exit_, CUDA_LINE, "return dev"]
    return "".join(f"        {line}\n" for line in lines)


def _left_alone(value: str, exit_: str, elsewhere: str, tmp_path: Path) -> bool:
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    module, line = _write(root, value, exit_, elsewhere)
    found = {(f.code, f.line) for f in check_paths([module], select=["TP101"], jobs=1).findings}
    return ("TP101", line) not in found


@pytest.mark.parametrize(("value", "exit_"), list(product(sorted(VALUES), sorted(EXITS))))
def test_value_and_exit(value: str, exit_: str, tmp_path: Path) -> None:
    expected = VALUES[value] and EXITS[exit_]
    assert _left_alone(value, exit_, "nothing", tmp_path) == expected, (value, exit_)


@pytest.mark.parametrize("elsewhere", sorted(ELSEWHERE))
def test_what_else_the_repository_holds(elsewhere: str, tmp_path: Path) -> None:
    value = 'self.device is not None and self.device.type == "cuda"'
    exit_ = "if not self.prefetch:\n            return None"
    assert _left_alone(value, exit_, elsewhere, tmp_path) == ELSEWHERE[elsewhere], elsewhere


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(
    value=st.sampled_from(sorted(VALUES)),
    exit_=st.sampled_from(sorted(EXITS)),
    elsewhere=st.sampled_from(sorted(ELSEWHERE)),
)
def test_all_three(value: str, exit_: str, elsewhere: str, tmp_path: Path) -> None:
    expected = VALUES[value] and EXITS[exit_] and ELSEWHERE[elsewhere]
    assert _left_alone(value, exit_, elsewhere, tmp_path) == expected, (value, exit_, elsewhere)
