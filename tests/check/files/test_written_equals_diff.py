"""A writing ``port`` or ``fix`` writes exactly what its ``--diff`` prints (issue 31/34).

Every file's fix reads the project as it was when the run began: no file is written until
every file is fixed (``files/_commit.py``). Before, each file was written as soon as it was
fixed, and a later file's project view read the written sibling: the port of a script that
star-imports a module (``from model import *``) found the ``device`` the module's port had
just added, and named its own ``_device``; whether it did depended on the order of the
files and, with workers, on timing.

The oracle shares no code with the fixer: the ``--diff`` text of a copy of the project,
applied by the small patcher below (checked against :mod:`difflib` on its own), against the
files an in-place run wrote, for generated multi-file projects (the project fuzzer's model
module, helpers, a base class, a package, star imports, a second script), listed in a drawn
order, with one process or two workers.
"""

from __future__ import annotations

import difflib
import os
import re
import signal
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check import check_paths, fix_paths, port_paths
from torchport.check.files import _write
from torchport.check.port._rewrite import PORT_REPORTS, PORT_SELECT

HERE = Path(__file__).parent
fuzz = load("test_project_fuzz_generators", HERE.parent / "port" / "test_project_fuzz.py")

_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply_diff(files: dict[str, str], diff: str, root: Path) -> dict[str, str]:
    """``files`` (relative path -> text) with ``diff``, a unified diff naming files under
    ``root`` by absolute path, applied; every context and removed line must match."""
    out = dict(files)
    for block in re.split(r"(?m)^(?=--- )", diff):
        if not block:
            continue
        lines = block.splitlines(keepends=True)
        assert lines[0].startswith("--- ") and lines[1].startswith("+++ "), block
        name = str(Path(lines[1][4:].rstrip("\n")).relative_to(root))
        old = out[name].splitlines(keepends=True)
        new: list[str] = []
        at = 0
        k = 2
        while k < len(lines):
            head = _HUNK.match(lines[k])
            assert head is not None, lines[k]
            k += 1
            start = int(head[1]) - (0 if head[2] == "0" else 1)
            assert start >= at
            new += old[at:start]
            at = start
            while k < len(lines) and not lines[k].startswith("@@"):
                line = lines[k]
                k += 1
                if line.startswith("\\"):  # "\ No newline at end of file": the line before
                    continue
                end = k < len(lines) and lines[k].startswith("\\")
                text = line[1:-1] if end else line[1:]
                if line[0] in " -":
                    assert old[at] == text, (name, at, old[at], text)
                    at += 1
                if line[0] in " +":
                    new.append(text)
        out[name] = "".join(new + old[at:])
    return out


@settings(max_examples=15, deadline=None)
@given(
    st.lists(st.sampled_from(["a\n", "b\n", "c\n", "d", "\n"]), max_size=8),
    st.lists(st.sampled_from(["a\n", "b\n", "x\n", "d", "\n"]), max_size=8),
)
def test_the_patcher_applies_difflib_s_diffs(before: list[str], after: list[str]) -> None:
    """The oracle's own check: a diff written as the fixer writes one (``_fix.diff``) turns
    ``before`` into ``after``."""
    before = [line for i, line in enumerate(before) if line.endswith("\n") or i == len(before) - 1]
    after = [line for i, line in enumerate(after) if line.endswith("\n") or i == len(after) - 1]
    root = Path("/r")
    diff = "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
        for line in difflib.unified_diff(before, after, "/r/f.py", "/r/f.py")
    )
    assert apply_diff({"f.py": "".join(before)}, diff, root) == {"f.py": "".join(after)}


def _star(files: dict[str, str]) -> dict[str, str]:
    """The scripts' ``from model import A, B`` as ``from model import *``."""
    return {k: re.sub(r"(?m)^(from \S+ import ).*$", r"\1*", v) if k == "train.py" else v
            for k, v in files.items()}  # fmt: skip


def _cuda(files: dict[str, str]) -> dict[str, str]:
    """Hard-coded CUDA for ``fix`` to rewrite: ``.cuda()`` on the model and the batch."""
    out = {}
    for name, text in files.items():
        text = text.replace("return Net()\n", "return Net().cuda()\n")
        text = text.replace("x = torch.randn(6, 4)\n", "x = torch.randn(6, 4).cuda()\n")
        out[name] = text.replace(" = Net()\n", " = Net().cuda()\n")
    return out


@st.composite
def projects(draw: st.DrawFn) -> dict[str, str]:
    files = fuzz.project_files(
        draw(st.sampled_from(fuzz.LAYOUTS)),
        based=draw(st.booleans()),
        factory=draw(st.booleans()),
        helper=draw(st.sampled_from(fuzz.HELPERS)),
        module_tensor=draw(st.booleans()),
        takes=draw(st.sampled_from(fuzz.TAKES)),
        batch=draw(st.sampled_from(fuzz.BATCHES)),
        rebound=draw(st.booleans()),
    )
    if draw(st.booleans()):
        files = _star(files)
    if draw(st.booleans()):  # a second script importing the same modules
        files["tools/evaluate.py"] = files["train.py"]
    return files


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _read_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8") for p in root.rglob("*.py")}


def _run(command: str, paths: list[str], *, diff: bool, jobs: int) -> object:
    if command == "port":
        return port_paths(paths, diff=diff, jobs=jobs)
    return fix_paths(paths, diff=diff, jobs=jobs, unsafe=True)


def written_equals_diff(command: str, files: dict[str, str], order: list[int], jobs: int) -> None:
    """``command`` in place, the files listed in ``order``, writes ``--diff`` applied."""
    with tempfile.TemporaryDirectory() as tmp:
        dry, wet = Path(tmp, "dry").resolve(), Path(tmp, "wet").resolve()
        _write_tree(dry, files)
        _write_tree(wet, files)
        shown = _run(command, [str(dry)], diff=True, jobs=1)
        assert not shown.errors, shown.errors  # type: ignore[attr-defined]
        expected = apply_diff(files, "".join(c.diff for c in shown.changed), dry)  # type: ignore[attr-defined]
        names = sorted(files)
        listed = [str(wet / names[i]) for i in order]
        done = _run(command, listed, diff=False, jobs=jobs)
        assert not done.errors, done.errors  # type: ignore[attr-defined]
        written = _read_tree(wet)
        assert written == expected, [n for n in files if written[n] != expected[n]]
        changed = sorted(os.path.relpath(c.path, wet) for c in done.changed)  # type: ignore[attr-defined]
        assert changed == sorted(n for n in files if expected[n] != files[n])


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), projects(), st.sampled_from(["port", "fix"]), st.sampled_from([1, 2]))
def test_a_writing_run_writes_its_diff(
    data: st.DataObject, files: dict[str, str], command: str, jobs: int
) -> None:
    order = data.draw(st.permutations(range(len(files))))
    written_equals_diff(command, _cuda(files) if command == "fix" else files, order, jobs)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), projects(), st.sampled_from(["port", "fix"]), st.sampled_from([1, 2]))
def test_a_writing_run_writes_its_diff_wide(
    data: st.DataObject, files: dict[str, str], command: str, jobs: int
) -> None:
    order = data.draw(st.permutations(range(len(files))))
    written_equals_diff(command, _cuda(files) if command == "fix" else files, order, jobs)


_STAR = {
    "model.py": (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n        return self.fc(x)\n\n\ndef build():\n"
        "    return Net()\n"
    ),
    "train.py": (
        "import torch\nfrom model import *\n\nnet = build()\nx = torch.randn(6, 4)\n"
        "print(net(x).sum().item())\n"
    ),
}


# Six more models: eight chunks of one file for two workers, the module's first, the
# script's last, begun once each worker has ported three or four models.
_STAR_AND_SIX = {**_STAR, **{f"m{i}.py": _STAR["model.py"] for i in range(6)}}


@pytest.mark.parametrize(
    ("command", "files", "order", "jobs"),
    [
        ("port", _STAR, [0, 1], 1),
        ("fix", _STAR, [0, 1], 1),
        ("port", _STAR, [1, 0], 1),
        ("port", _STAR_AND_SIX, [6, 0, 1, 2, 3, 4, 5, 7], 2),
    ],
)
def test_a_star_importing_script_ported_after_its_module(
    command: str, files: dict[str, str], order: list[int], jobs: int
) -> None:
    """The module first (its port adds ``device``), the script star-importing it after:
    the script was written with ``_device`` where ``--diff`` shows ``device`` (base: fails
    with one process, and with two workers where the module's chunk ends before the
    script's begins: the eight-file case in each of 4 runs; two files alone now and then)."""
    written_equals_diff(command, _cuda(files) if command == "fix" else files, order, jobs)


def _two_files(tmp_path: Path) -> tuple[Path, Path]:
    _write_tree(tmp_path, _STAR)
    return tmp_path / "model.py", tmp_path / "train.py"


def test_a_run_stopped_while_files_are_fixed_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C on the second file's fix: the first, already fixed, is not written either
    (base: fails, the first file was written when it was fixed)."""
    model, train = _two_files(tmp_path)
    from torchport.check import _fix

    fix_text = _fix.fix_text
    seen: list[str] = []

    def interrupted(text: str, path: str, *args: object, **kwargs: object) -> object:
        seen.append(path)
        if len(seen) == 2:
            raise KeyboardInterrupt
        return fix_text(text, path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_fix, "fix_text", interrupted)
    with pytest.raises(KeyboardInterrupt):
        port_paths([str(model), str(train)], jobs=1)
    assert _read_tree(tmp_path) == _STAR


def test_ctrl_c_while_files_are_written_says_which_were_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during the first write: that write ends, no other starts, and each file left
    as it was is an error naming it; what was written is reported as changed."""
    from torchport.check.files import _commit

    model, train = _two_files(tmp_path)
    write_back = _write.write_back

    def write_then_interrupt(path: str, data: bytes, before: object) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # held until the write is done
        write_back(path, data, before)  # type: ignore[arg-type]

    monkeypatch.setattr(_write, "write_back", write_then_interrupt)
    # a program's own handler (Python's default), whatever an earlier test left in this worker
    worker = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = port_paths([str(tmp_path)], jobs=1)
        given_back = signal.getsignal(signal.SIGINT)
    finally:
        signal.signal(signal.SIGINT, worker)
    assert [c.path for c in result.changed] == [str(model)]
    assert [(e.path, e.message) for e in result.errors] == [(str(train), _commit._INTERRUPTED)]
    assert not [f for f in result.remaining if f.path == str(train)]
    assert train.read_text() == _STAR["train.py"]
    assert model.read_text() != _STAR["model.py"]
    assert result.exit_code == 2
    assert given_back is signal.default_int_handler


def test_a_refused_write_leaves_the_original_s_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write refused at the end (read-only, edited meanwhile): an error naming it, and
    what is left in it is every finding of its original (a check's), as before."""
    model, train = _two_files(tmp_path)
    write_back = _write.write_back

    def refuse_train(path: str, data: bytes, before: object) -> None:
        if path.endswith("train.py"):
            raise _write.WriteRefused("not fixed: refused for the test")
        write_back(path, data, before)  # type: ignore[arg-type]

    monkeypatch.setattr(_write, "write_back", refuse_train)
    result = port_paths([str(tmp_path)], jobs=1)
    assert [c.path for c in result.changed] == [str(model)]
    assert [(e.path, e.message) for e in result.errors] == [
        (str(train), "not fixed: refused for the test")
    ]
    assert train.read_text() == _STAR["train.py"]
    left = sorted((f.line, f.col, f.code) for f in result.remaining if f.path == str(train))
    select = (*PORT_SELECT, *PORT_REPORTS)
    found = check_paths([str(train)], select=select).findings
    assert left == sorted((f.line, f.col, f.code) for f in found) != []
