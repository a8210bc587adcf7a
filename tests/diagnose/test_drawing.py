"""The pillar's reports hold facts; the drawing modules draw them; nothing imports in a circle."""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

import torchport as tp
from torchport.diagnose import AuditEntry, _drawing

_PACKAGE = Path(_drawing.__file__).parent
_FACTS = (
    "_audit.py",
    "_doctor.py",
    "_memory.py",
    "_oom.py",
    "_oom_causes.py",
    "_bandwidth.py",
    "_findings.py",
)


def _runtime_imports(path: Path) -> set[str]:
    """Modules a file imports when it runs: at its top level, outside ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("name", _FACTS)
def test_report_modules_draw_nothing(name: str) -> None:
    imports = _runtime_imports(_PACKAGE / name)
    assert not any(module.split(".")[0] == "rich" for module in imports)
    assert not imports & {  # delegation is lazy, from a method
        "torchport.diagnose._drawing",
        "torchport.diagnose._doctor_drawing",
    }


@pytest.mark.parametrize("name", ["_drawing.py", "_doctor_drawing.py"])
def test_the_renderer_imports_no_report_module_at_run_time(name: str) -> None:
    imports = _runtime_imports(_PACKAGE / name)
    assert not imports & {
        f"torchport.diagnose.{name[:-3]}"
        for name in ("_audit.py", "_doctor.py", "_memory.py", "_oom.py", "_oom_causes.py")
    }


def test_every_report_draws_through_the_one_renderer() -> None:
    with tp.audit() as audit_report:
        torch.ones(2).sum().item()
    memory = tp.memory_report("cpu")
    doctor = tp.doctor(free_memory=False)
    oom = tp.explain_oom("CUDA out of memory. Tried to allocate 2.00 GiB")
    for report in (audit_report, memory, doctor):
        assert str(report) == _drawing.render_text(report)
    assert str(oom) == _drawing.oom_text(oom)
    with pytest.raises(TypeError, match="expected an AuditReport"):
        _drawing.render(object())


# -- the audit's locations are never cut ------------------------------------------------

_WIDTHS = (60, 80, 120, 200)
_SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789", min_size=1, max_size=24)


@st.composite
def _paths(draw: st.DrawFn) -> str:
    """Absolute .py paths: under the working directory, in a site-packages, or elsewhere."""
    parts = draw(st.lists(_SEGMENT, min_size=1, max_size=8))
    name = draw(_SEGMENT) + ".py"
    root = draw(
        st.sampled_from(
            [
                os.getcwd(),
                "/opt/conda/envs/train/lib/python3.11/site-packages",
                "/usr/lib/python3/dist-packages",
                "/srv/jobs/2026/experiment_with_a_rather_long_folder_name",
            ]
        )
    )
    return os.path.join(root, *parts, name)


@st.composite
def _entries(draw: st.DrawFn) -> AuditEntry:
    via = draw(st.none() | _paths())
    return AuditEntry(
        kind=draw(st.sampled_from(["transfer", "sync", "shape sync"])),
        label="scalar read (.item())",
        op="Tensor.item",
        device="cpu",
        would_sync=draw(st.booleans()),
        file=draw(_paths()),
        line=draw(st.integers(1, 2_000_000)),
        function=draw(_SEGMENT),
        code="loss_value = criterion(model(batch['input_ids']), batch['labels']).item()",
        count=draw(st.integers(1, 10**6)),
        via=f"{via}:{draw(st.integers(1, 99_999))}" if via else "",
    )


def _shown_location(text: str, path: str, line: int) -> str | None:
    """The path shown for ``path:line`` on one output line, or None when no line shows it whole.

    Written apart from the renderer: the shown path must end with the file's name and
    the line number, and name the same file (a left-cut suffix of the absolute path, or
    a path relative to the working directory).
    """
    name = os.path.basename(path)
    for out in text.splitlines():
        for match in re.finditer(rf"(\S*{re.escape(name)}):{line}\b", out):
            shown = match.group(1)
            same = path.endswith(os.sep + shown) or path == shown
            relative = os.path.normpath(os.path.join(os.getcwd(), shown)) == path
            if same or relative:
                return shown
    return None


@given(st.lists(_entries(), min_size=1, max_size=4), st.sampled_from(_WIDTHS))
def test_every_location_is_printed_whole_on_one_line(entries: list[AuditEntry], width: int) -> None:
    report = tp.AuditReport(entries=entries)
    text = _drawing.render_text(report, width=width)
    assert "…" not in text
    for e in entries:
        assert _shown_location(text, e.file, e.line) is not None, (e.file, e.line, text)
        if e.via:
            via_path, _, via_line = e.via.rpartition(":")
            assert _shown_location(text, via_path, int(via_line)) is not None
    # only a location may run past the width: prose and code wrap
    for out in text.splitlines():
        if len(out) > width:
            assert re.match(r"\s*(through )?\S+:\d+", out), out


@given(st.lists(_entries(), min_size=1, max_size=3), st.sampled_from(_WIDTHS))
def test_a_rich_console_folds_a_long_location_instead_of_cutting_it(
    entries: list[AuditEntry], width: int
) -> None:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(tp.AuditReport(entries=entries))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text
    assert max(len(out) for out in text.splitlines()) <= width
    joined = "".join(text.splitlines())  # a fold breaks lines only
    for e in entries:
        shown = _drawing.short_path(e.file)
        assert f"{shown}:{e.line}" in joined


@pytest.mark.parametrize("columns", [60, 80, 120, 200])
def test_print_report_keeps_every_location(
    columns: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = os.path.join(
        "/opt/conda/envs/a_long_environment_name/lib/python3.11/site-packages",
        "some_library_with_a_long_name/models/encoder_decoder/modeling_encoder_decoder.py",
    )
    mine = os.path.join(os.getcwd(), "experiments", "2026_11_run", "train_with_a_long_name.py")
    report = tp.AuditReport(
        entries=[
            _entry(file=deep, line=12345, function="forward"),
            _entry(kind="transfer", file=mine, line=7, via=f"{deep}:99", bytes=64),
        ]
    )
    size = os.terminal_size((columns, 24))
    monkeypatch.setattr(shutil, "get_terminal_size", lambda fallback=None: size)
    print(report)
    out = capsys.readouterr().out
    assert (
        "some_library_with_a_long_name/models/encoder_decoder/modeling_encoder_decoder.py:12345"
        in out
    )
    assert os.path.join("experiments", "2026_11_run", "train_with_a_long_name.py:7") in out
    assert "modeling_encoder_decoder.py:99" in out


def _entry(**fields: Any) -> AuditEntry:
    """An entry of a scalar read at ``train.py:1``, with ``fields`` changed."""
    base: dict[str, Any] = {
        "kind": "sync",
        "label": "scalar read (.item())",
        "op": "Tensor.item",
        "device": "cpu",
        "would_sync": True,
        "file": os.path.join(os.getcwd(), "train.py"),
        "line": 1,
        "function": "main",
        "code": "x.item()",
        "count": 1,
    }
    return AuditEntry(**{**base, **fields})


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (
            "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py",
            "transformers/modeling_utils.py",
        ),
        ("/usr/lib/python3/dist-packages/tqdm/std.py", "tqdm/std.py"),
        ("<string>", "<string>"),
        ("/elsewhere/train.py", "/elsewhere/train.py"),
    ],
)
def test_short_paths_drop_only_what_a_reader_does_not_need(path: str, shown: str) -> None:
    assert _drawing.short_path(path, cwd="/work/project") == shown
    assert _drawing.short_path("/work/project/src/train.py", cwd="/work/project") == os.path.join(
        "src", "train.py"
    )


def test_the_data_loading_part_is_drawn_apart_and_out_of_the_totals() -> None:
    report = tp.AuditReport(
        entries=[_entry(line=40, count=2)],
        data_loading=[
            _entry(
                label="scalar read (int(tensor))",
                would_sync=False,
                line=12,
                count=96,
                phase="data loading",
            )
        ],
    )
    text = " ".join(_drawing.render_text(report, width=100).split())
    assert "2 points that would sync on an accelerator" in text
    assert "data loading (host): 96 events at 1 line" in text
    assert text.index("total:") < text.index("data loading (host)") < text.index("train.py:12")
    assert "96 × scalar read (int(tensor)) · cpu" in text  # noqa: RUF001
    assert "would sync" not in text.split("data loading (host)")[1]
