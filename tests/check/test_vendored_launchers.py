"""Vendored code a project runs other than by a plain import is not held (branch b34an).

Each example draws a vendored module and one way a project runs it: ``python -m`` in a shell
script, a CI workflow, a Dockerfile or a batch job, an ``importlib`` string, an f-string
naming its package, a console-scripts entry, a config's ``_target_``, a notebook's import, a
``sys.path`` entry and a plain import, a symlinked folder. The oracle is the drawn tree
itself: the module named runs, so it is never held; a module of the copy nothing names is.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check.files._vendored import unreached_vendored

_COUNT = itertools.count()
KINDS = (
    "shell", "workflow", "dockerfile", "batch", "importlib", "fstring", "console", "target",
    "notebook", "syspath", "symlink", "main",
)  # fmt: skip


def _launcher(kind: str, dotted: str, folder: str) -> dict[str, str]:
    """The files (path: text) that run the module ``dotted`` (in ``folder``) by ``kind``."""
    package, _, name = dotted.rpartition(".")
    command = f"python -m {dotted} --epochs 3\n"
    job = f"jobs:\n  t:\n    steps:\n      - run: {command}"
    load = f"import importlib\nm = importlib.import_module({dotted!r})\n"
    cell = {
        "cell_type": "code",
        "source": ["!pip install -q x\n", f"from {package} import {name}\n"],
    }
    return {
        "shell": {"scripts/train.sh": f"#!/bin/sh\nset -e\n{command}"},
        "workflow": {".github/workflows/ci.yml": job},
        "dockerfile": {"docker/gpu.Dockerfile": f'FROM python\nCMD ["python", "-m", "{dotted}"]\n'},
        "batch": {"jobs/train.sbatch": f"#!/bin/bash\n#SBATCH -N 1\nsrun {command}"},
        "importlib": {"app/main.py": load},
        "fstring": {"app/main.py": "import importlib\ndef load(n):\n"
                    f"    return importlib.import_module(f'{package}.{{n}}')\n"},
        "console": {"pyproject.toml": f'[project.scripts]\nrun = "{dotted}:main"\n'},
        "target": {"configs/model.yaml": f"model:\n  _target_: {dotted}.Net\n  width: 3\n"},
        "notebook": {"demo.ipynb": json.dumps({"cells": [cell]})},
        "syspath": {"app/main.py": f"import sys\nsys.path.insert(0, {folder!r})\nimport {name}\n"},
        "symlink": {"app/main.py": f"from linked import {name}\n"},
        "main": {"run.sh": f"python -m {package}\n"},
    }[kind]  # fmt: skip


@st.composite
def trees(draw: st.DrawFn) -> tuple[str, str, list[str], bool]:
    kind = draw(st.sampled_from(KINDS))
    outer = draw(st.sampled_from(("third_party", "external", "vendor", "thirdparty")))
    inner = draw(st.lists(st.sampled_from(("lib", "models", "core", "nn")), min_size=1, max_size=3))
    return kind, outer, inner, draw(st.booleans())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(trees())
def test_a_vendored_module_the_project_runs_is_never_held(
    tmp_path: Path, drawn: tuple[str, str, list[str], bool]
) -> None:
    kind, outer, inner, outer_package = drawn
    root = tmp_path / f"p{next(_COUNT)}"
    (root / ".git").mkdir(parents=True)
    folder = "/".join([outer, *inner])
    name = "__main__" if kind == "main" else "mod"
    dotted = ".".join([outer, *inner, name])
    files = {f"{folder}/{name}.py": "import os\nclass Net: ...\ndef main(): ...\n"}
    files |= {f"{'/'.join([outer, *inner[:i]])}/__init__.py": "" for i in range(1, len(inner) + 1)}
    files |= {f"{outer}/spare/__init__.py": "", f"{outer}/spare/unused.py": "import os\n"}
    if outer_package:
        files[f"{outer}/__init__.py"] = ""
    files |= {"app/__init__.py": "", "app/main.py": "import os\n"}
    files |= _launcher(kind, dotted, folder)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    if kind == "symlink":
        os.symlink(root / folder, root / "linked")
    held = unreached_vendored(os.path.realpath(root))
    real = os.path.realpath(root)
    assert os.path.join(real, folder, f"{name}.py") not in held, (kind, sorted(held))
    assert os.path.join(real, outer, "spare", "unused.py") in held, (kind, sorted(held))
