"""The program's check imports pathlib without ``urllib.parse``, ``ipaddress`` and ``ntpath``
(cli/check.py: ``_pathlib_without_its_extras``), and pathlib computes what it computed.

The oracle for "what it computed" is a fresh interpreter that imports pathlib as Python
does, asked the same questions (Windows paths, URIs, globs) about generated paths.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

TINY = "import torch\nx = torch.zeros(3).cuda()\nprint(x)\n"

# Run as the program (`main()` with sys.argv), the exit replaced by a record of what
# was imported by then.
_PROGRAM = """
import sys
import torchport.cli._main as m
seen = []
m.exit_now = lambda code: seen.append(sorted(sys.modules))
sys.argv = ["torchport", "check", "--no-cache", sys.argv[1]]
code = m.main()
import json
print(json.dumps([code, seen[0]]))
"""

_ASKED = """
import json, sys
if sys.argv[1] == "lean":
    from torchport.cli.check import _pathlib_without_its_extras
    _pathlib_without_its_extras()
import pathlib
lean_modules = [m in sys.modules for m in ("urllib.parse", "ipaddress", "ntpath")]
out = {"before": lean_modules}
for i, text in enumerate(json.loads(sys.argv[2])):
    w = pathlib.PureWindowsPath(text)
    p = pathlib.PurePosixPath(text)
    answers = [
        str(w), w.drive, w.root, w.anchor, w.parts, str(w.parent), w.name, w.suffix,
        w.is_absolute(), w.is_reserved(), w.as_posix(), str(w / "x y"),
        w == pathlib.PureWindowsPath(text.upper()),
        w.match("*.py"), p.match("*.py"), p.match("a/*"), str(p), p.parts, p.is_absolute(),
    ]
    rooted = (pathlib.PurePosixPath("/") / text.lstrip("/"), pathlib.PureWindowsPath("c:/") / text)
    for path in (w, p, *rooted):
        try:
            answers.append(path.as_uri())
        except ValueError as exc:
            answers.append(f"ValueError {exc}")
    out[str(i)] = repr(answers)
import ntpath, urllib.parse
out["real"] = [ntpath.__name__, hasattr(ntpath, "__file__"), urllib.parse.__name__,
               hasattr(urllib.parse, "__file__"), pathlib.ntpath.join("a", "b"),
               sys.modules["ntpath"] is ntpath, type(sys.modules["urllib.parse"]).__name__]
print(json.dumps(out))
"""


def _run(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, check=False
    )


def test_the_programs_check_loads_pathlib_without_its_extras(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY)
    run = _run(_PROGRAM, str(tmp_path / "tiny.py"))
    assert run.returncode == 0, run.stderr
    code, modules = json.loads(run.stdout.strip().splitlines()[-1])
    assert code == 1  # the finding was reported
    assert "pathlib" in modules
    for name in ("urllib.parse", "ipaddress", "ntpath"):
        assert name not in modules, name


@settings(max_examples=5, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from("ab .py/\\:%#?~é_-cC\x7f"), max_size=14),
        min_size=20,
        max_size=20,
    )
)
def test_pathlib_computes_what_it_computed(texts: list[str]) -> None:
    texts = [*texts, "c:\\a b\\é.py", "/a b/%#?.py", "\\\\server\\share\\x", "con", "a/b.py"]
    lean = _run(_ASKED, "lean", json.dumps(texts))
    plain = _run(_ASKED, "plain", json.dumps(texts))
    assert lean.returncode == 0 and plain.returncode == 0, (lean.stderr, plain.stderr)
    lean_out, plain_out = json.loads(lean.stdout), json.loads(plain.stdout)
    assert lean_out.pop("before") == [False, False, False]  # the lean import did its part
    plain_out.pop("before")
    assert lean_out == plain_out
    assert lean_out["real"] == ["ntpath", True, "urllib.parse", True, "a\\b", True, "module"]
