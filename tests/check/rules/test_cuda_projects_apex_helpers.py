"""A helper module that only apex scripts import needs CUDA anyway (``rules/_cuda_projects.py``,
``rules/_importers.py``; sample X's class X1, issue 34: fast_adversarial's ``CIFAR10/utils.py``,
imported by three training scripts whose ``main`` calls ``amp.initialize``).

The invariant: the helper surely imports apex at its top, is no script itself, may not be
installed with a project, and every file of its repository that imports it (one at least) is
a script that surely imports apex at its top and surely calls ``amp.initialize`` when it runs:
at its module level, or in the function its ``if __name__ == "__main__":`` block calls, with no
``return`` or ``raise`` before the call. Any other way the helper may be reached (an import the
project view cannot resolve, a string or a notebook naming it) keeps its findings.

Repositories are drawn: how the helper imports apex, whether it has a ``__main__`` block, a
``setup.py`` or none, what else the repository holds, and one or two scripts importing the
helper, each with its import form and where it calls ``amp.initialize``. The probe is the
helper's module-level ``torch.zeros(3).cuda()`` (TP101, on by default). The oracle is
:func:`_left`, written from the tables marked by hand.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# How the helper imports apex, and whether surely at its top
HELPER_IMPORTS = {
    "from": ("from apex import amp\n", True),
    "module": ("import apex.amp as amp\n", True),
    "try": ("try:\n    from apex import amp\nexcept ImportError:\n    amp = None\n", False),
    "if": ("import sys\n\nif sys.argv:\n    from apex import amp\n", False),
    "none": ("", False),
}
HELPER = "import torch\n\nMU = torch.zeros(3).cuda()\n\n\ndef scale(loss, opt):\n    return loss\n"
MAIN_BLOCK = '\n\nif __name__ == "__main__":\n    print(MU)\n'
# How a script imports the helper
FORMS = {
    "from": ("from helpers import scale\n", ""),
    "module": ("import helpers\n", ""),
    "in main": ("", "    from helpers import scale\n"),
}
CALL = "    model, opt = amp.initialize(model, opt)\n"
MAIN = '\n\nif __name__ == "__main__":\n    main(None, None, True, False)\n'
EXIT = '\n\nif __name__ == "__main__":\n    sys.exit(main(None, None, True, False))\n'
# Where a script calls amp.initialize: (its module-level lines, main's lines, its __main__
# block), and whether the call surely runs when the script runs
PLACES = {
    "module": ("model, opt = amp.initialize(None, None)\n", "", MAIN, True),
    "main": ("", CALL, MAIN, True),
    "main, sys.exit": ("import sys\n", CALL, EXIT, True),
    "main, if": ("", "    if fp16:\n    " + CALL, MAIN, False),
    "main, try": ("", "    try:\n    " + CALL + "    except RuntimeError:\n        pass\n",
                  MAIN, False),
    "main, after a return": ("", "    if evaluate:\n        return\n" + CALL, MAIN, False),
    "main, after a raise": ("", "    if evaluate:\n        raise SystemExit\n" + CALL, MAIN, False),
    "another function": ("", "    setup(model, opt)\n", MAIN, False),
    "main never called": ("", CALL, "", False),
    "scale_loss only": ("", "    amp.scale_loss(model, opt)\n", MAIN, False),
}  # fmt: skip
SETUP = "\n\ndef setup(model, opt):\n" + CALL
# What else the repository holds (True: the helper's findings may still go)
EXTRA = {
    "nothing": True,
    "a script without apex importing it": False,
    "a string naming it": False,
    "a notebook importing it": False,
    "an import the project view cannot resolve": False,
    "another helpers.py beside its own importer": True,
    "a test importing another module": True,
}


def script(form: str, place: str, *, apex: bool = True) -> str:
    top, body, block, _sure = PLACES[place]
    head, inner = FORMS[form]
    imports = ("from apex import amp\n" if apex else "") + head
    main = f"def main(model, opt, fp16, evaluate):\n{inner}{body}    scale(model, opt)\n"
    other = SETUP if place == "another function" else ""
    return f"{imports}{top}\n\n{main}{other}{block}"


def write(root: Path, helper: str, main_block: bool, setup: bool, extra: str,
          scripts: list[tuple[str, str]]) -> Path:  # fmt: skip
    (root / ".git").mkdir()
    if setup:
        (root / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
    path = root / "helpers.py"
    path.write_text(HELPER_IMPORTS[helper][0] + HELPER + (MAIN_BLOCK if main_block else ""))
    for i, (form, place) in enumerate(scripts):
        (root / f"train_{i}.py").write_text(script(form, place))
    if extra == "a script without apex importing it":
        (root / "plain.py").write_text("from helpers import scale\n\nscale(1, 2)\n")
    elif extra == "a string naming it":
        (root / "plain.py").write_text('import importlib\n\nimportlib.import_module("helpers")\n')
    elif extra == "a notebook importing it":
        cell = '{"cells": [{"source": ["from helpers import scale\\n", "scale(1, 2)"]}]}'
        (root / "explore.ipynb").write_text(cell)
    elif extra == "an import the project view cannot resolve":
        (root / "tools").mkdir()
        (root / "tools" / "run.py").write_text("from helpers import scale\n\nscale(1, 2)\n")
    elif extra == "another helpers.py beside its own importer":
        (root / "tools").mkdir()
        (root / "tools" / "helpers.py").write_text("def scale(loss, opt):\n    return loss\n")
        (root / "tools" / "run.py").write_text("from helpers import scale\n\nscale(1, 2)\n")
    elif extra == "a test importing another module":
        (root / "test_model.py").write_text("import torch\n\n\ndef test_sum():\n    pass\n")
    return path


def _left(helper: str, main_block: bool, setup: bool, extra: str,
          scripts: list[tuple[str, str]]) -> bool:  # fmt: skip
    """Whether a default run leaves the helper's ``.cuda()`` alone (the tables above)."""
    sure_import = HELPER_IMPORTS[helper][1]
    every_script = bool(scripts) and all(PLACES[place][3] for _form, place in scripts)
    return sure_import and not main_block and not setup and EXTRA[extra] and every_script


def reported(path: Path, select: list[str] | None = None) -> list[str]:
    rules = ruleset_for(select, None)
    return [f.code for f in check_text(path.read_text(), str(path), rules).findings]


SCRIPTS = st.lists(
    st.tuples(st.sampled_from(sorted(FORMS)), st.sampled_from(sorted(PLACES))), max_size=2
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(HELPER_IMPORTS)),
    st.booleans(),
    st.booleans(),
    st.sampled_from(sorted(EXTRA)),
    SCRIPTS,
)
@example("from", False, False, "nothing", [("from", "main"), ("module", "module")])
@example("module", False, False, "nothing", [("in main", "main, sys.exit")])
@example("from", False, False, "nothing", [("from", "main"), ("from", "main, if")])
@example("from", False, False, "nothing", [("from", "main, after a return")])
@example("from", False, False, "nothing", [("from", "main, after a raise")])
@example("from", False, False, "nothing", [("from", "another function")])
@example("from", False, False, "nothing", [("from", "main never called")])
@example("from", False, False, "nothing", [("from", "main, try")])
@example("from", False, False, "nothing", [("from", "scale_loss only")])
@example("from", False, False, "nothing", [])
@example("try", False, False, "nothing", [("from", "main")])
@example("if", False, False, "nothing", [("from", "main")])
@example("none", False, False, "nothing", [("from", "main")])
@example("from", True, False, "nothing", [("from", "main")])
@example("from", False, True, "nothing", [("from", "main")])
@example("from", False, False, "a script without apex importing it", [("from", "main")])
@example("from", False, False, "a string naming it", [("from", "main")])
@example("from", False, False, "a notebook importing it", [("from", "main")])
@example("from", False, False, "an import the project view cannot resolve", [("from", "main")])
@example("from", False, False, "another helpers.py beside its own importer", [("from", "main")])
@example("from", False, False, "a test importing another module", [("module", "main")])
def test_a_helper_of_apex_scripts_needs_cuda_only_when_every_importer_surely_calls_apex(
    helper: str, main_block: bool, setup: bool, extra: str, scripts: list[tuple[str, str]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = write(Path(folder), helper, main_block, setup, extra, scripts)
        left = "TP101" not in reported(path)
        assert left == _left(helper, main_block, setup, extra, scripts), path.read_text()
        assert "TP101" in reported(path, ["TP101"])  # named, the rule reports it all the same


def test_a_script_imported_by_another_module_is_no_entry(tmp_path: Path) -> None:
    """A script whose ``main`` calls ``amp.initialize`` but that another module imports: there
    its ``main`` need not run, so it does not make the helper CUDA-only."""
    path = write(tmp_path, "from", False, False, "nothing", [("from", "main")])
    assert "TP101" not in reported(path)
    (tmp_path / "evaluate.py").write_text("from train_0 import main\n\nprint(main)\n")
    assert "TP101" in reported(path)


def test_no_repository_keeps_the_findings(tmp_path: Path) -> None:
    path = write(tmp_path, "from", False, False, "nothing", [("from", "main")])
    (tmp_path / ".git").rmdir()
    assert "TP101" in reported(path)


def test_an_edited_script_is_read_again(tmp_path: Path) -> None:
    """The answers kept for the run rest on the files they read: a script edited so that its
    call runs only under a flag makes the helper's findings come back in the same process."""
    for place in ("main", "module"):
        root = tmp_path / place.replace(" ", "_")
        root.mkdir()
        path = write(root, "from", False, False, "nothing", [("from", place)])
        assert "TP101" not in reported(path)
        (root / "train_0.py").write_text(script("from", "main, if") + "\n# edited\n")
        assert "TP101" in reported(path), place
