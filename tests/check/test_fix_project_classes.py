"""Generated projects of 2-3 modules: ``fix`` leaves the project's own classes' methods alone.

Each project is a package ``pkg``: modules ``a`` and ``b`` define classes (with their own
``cuda``/``to`` or not, ``nn.Module`` subclasses or not, bases in the other module), the
package's ``__init__`` may re-export them, and ``main`` imports them in one of several
spellings (``from .a import C``, ``from pkg import C``, ``from . import a``, an alias) and
calls ``.cuda()`` and ``.to("cuda")`` on an instance of each. The oracle: the program run
on the simulated accelerator (``torchport run --device sim``: its CUDA calls land on
``sim``) prints the same before and after ``fix --unsafe --select ALL`` (a class's own
method prints its name, a missing one prints the ``AttributeError``, a module prints where
its parameter lives), and the fixed program crashes nowhere the original did not. And an
``nn.Module`` subclass from a sibling module without ``cuda``/``to`` of its own is still fixed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.cli._main import main as torchport_main


@dataclass(frozen=True)
class Spec:
    """One class: where it lives, what it derives from, which methods it has itself."""

    name: str
    module: str  # "a" or "b"
    base: str | None  # "nn.Module", an earlier class's name, or None (object)
    own: tuple[str, ...]  # of ("cuda", "to")


def _class_text(spec: Spec) -> str:
    base = f"({spec.base})" if spec.base else ""
    lines = [f"class {spec.name}{base}:"]
    if spec.base == "nn.Module":
        lines += [
            "    def __init__(self):",
            "        super().__init__()",
            "        self.w = nn.Parameter(torch.ones(1))",
        ]
    for method in spec.own:
        lines += [
            f"    def {method}(self, *args, **kwargs):",
            f"        print({spec.name!r}, 'own {method}', [str(a) for a in args])",
            "        return self",
        ]
    if len(lines) == 1:
        lines.append("    pass")
    return "\n".join(lines) + "\n"


@st.composite
def projects(draw: st.DrawFn) -> tuple[dict[str, str], list[Spec]]:
    count = draw(st.integers(1, 4))
    specs: list[Spec] = []
    for i in range(count):
        module = "a" if i == 0 else draw(st.sampled_from(["a", "b"]))
        choices: list[str | None] = [None, "nn.Module"]
        # a base from `a` (b imports a; a never imports b: no cycle)
        choices += [s.name for s in specs if s.module == "a" or module == "b"]
        base = draw(st.sampled_from(choices))
        own = tuple(m for m in ("cuda", "to") if draw(st.booleans()))
        specs.append(Spec(f"C{i}", module, base, own))
    files = {"pkg/__init__.py": ""}
    for module in ("a", "b"):
        mine = [s for s in specs if s.module == module]
        head = "import torch\nimport torch.nn as nn\n"
        if module == "b":
            in_a = {s.name for s in specs if s.module == "a"}
            wanted = sorted({s.base for s in mine if s.base in in_a})
            head += f"from .a import {', '.join(wanted)}\n" if wanted else ""
        files[f"pkg/{module}.py"] = head + "\n\n" + "\n\n".join(_class_text(s) for s in mine)
    if draw(st.booleans()):  # the package re-exports every class
        files["pkg/__init__.py"] = "".join(f"from .{s.module} import {s.name}\n" for s in specs)
    body = ["import torch", "from . import a, b"]
    uses = []
    for spec in specs:
        style = draw(st.sampled_from(["from", "alias", "module", "package"]))
        if style == "package" and not files["pkg/__init__.py"]:
            style = "from"
        local = spec.name
        if style == "from":
            body.append(f"from .{spec.module} import {spec.name}")
        elif style == "alias":
            local = f"K{spec.name}"
            body.append(f"from .{spec.module} import {spec.name} as {local}")
        elif style == "module":
            local = f"{spec.module}.{spec.name}"
        else:
            body.append(f"from pkg import {spec.name}")
        uses.append(local)
    body += ["", "", "def run():"]
    for local in uses:
        body += [
            f"    x = {local}()",
            "    for call in (lambda: x.cuda(), lambda: x.to('cuda')):",
            "        try:",
            "            y = call()",
            "        except AttributeError as e:",
            "            print('missing', e)",
            "            continue",
            "        w = getattr(y, 'w', None)",
            "        print(type(y).__name__, None if w is None else w.device.type)",
        ]
    files["pkg/main.py"] = "\n".join(body) + "\n"
    return files, specs


# Runs the original package and the fixed one in one process on the simulated accelerator.
_DRIVER = """\
import sys
for root in sys.argv[1:]:
    for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    print("=== run")
    try:
        import pkg.main
        pkg.main.run()
    except Exception as e:
        print("crashed", type(e).__name__, e)
    sys.path.remove(root)
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _runs(tmp: Path) -> list[str]:
    (tmp / "driver.py").write_text(_DRIVER, encoding="utf-8")
    command = ["-m", "torchport", "run", "--quiet", "--device", "sim", "driver.py"]
    done = subprocess.run(
        [sys.executable, *command, "before", "after"],
        cwd=tmp,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split("=== run\n")[1:]


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@pytest.mark.needs_simulator  # runs each program on sim: torch 2.7+ (the checker leg has none)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(projects())
def test_fix_keeps_the_project_classes_own_methods(
    tmp_path_factory: object, project: tuple[dict[str, str], list[Spec]]
) -> None:
    files, _ = project
    tmp = tmp_path_factory.mktemp("proj")  # type: ignore[attr-defined]
    _write(tmp / "before", files)
    shutil.copytree(tmp / "before", tmp / "after")
    code = torchport_main(
        ["fix", "--unsafe", "--select", "ALL", "--ignore", "TP5", "-q", str(tmp / "after" / "pkg")]
    )
    assert code in (0, 1)
    before, after = _runs(tmp)
    assert "crashed" not in before, (files, before)
    assert after == before, (files, (tmp / "after/pkg/main.py").read_text())


def test_a_module_class_of_a_sibling_module_is_still_fixed(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from .nets import Net\n",
            "pkg/nets.py": "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    pass\n",
            "pkg/base.py": "class Plain:\n    def cuda(self):\n        return self\n",
            "pkg/train.py": (
                "import torch\n\nfrom pkg import Net\nfrom .base import Plain\n"
                "from .nets import Net as Other\n\n"
                "m = Net().cuda()\nn = Other().cuda()\np = Plain().cuda()\n"
            ),
        },
    )
    torchport_main(["fix", "--select", "ALL", "-q", str(tmp_path / "pkg")])
    fixed = (tmp_path / "pkg/train.py").read_text(encoding="utf-8")
    assert "m = Net().to(device)" in fixed and "n = Other().to(device)" in fixed
    assert "p = Plain().cuda()" in fixed
