"""Notebooks: code cells checked and fixed as one virtual file, everything else kept."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, fix_paths
from torchport.check.files._notebook import NotebookError, NotPython, read_notebook
from torchport.cli._main import main


def code(source: str | list[str], **extra: Any) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": source, **extra}  # fmt: skip


def notebook(*cells: dict[str, Any], language: str = "python") -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def save(path: Path, nb: dict[str, Any], indent: int = 1) -> Path:
    path.write_text(json.dumps(nb, indent=indent, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


NB = notebook(
    {"cell_type": "markdown", "metadata": {}, "source": ["# Train\n"]},
    code(["%matplotlib inline\n", "import torch\n", "files = !ls\n", "x = torch.ones(2).cuda()"]),
    code(["%%bash\n", "echo x.cuda()"]),
    code(
        "for i in range(3):\n    !echo {i}\n    y = torch.zeros(3).cuda()\n",
        outputs=[{"output_type": "stream", "name": "stdout", "text": ["é\n"]}],
    ),
)


def test_findings_name_cell_and_line_and_folders_include_notebooks(tmp_path: Path) -> None:
    save(tmp_path / "nb.ipynb", NB)
    result = check_paths([tmp_path], extend_select=["TP101"])
    assert result.errors == [] and result.files == 1
    where = sorted({(Path(f.path).name, f.line, f.col, f.code) for f in result.findings})
    assert ("nb.ipynb:cell 2", 4, 5, "TP101") in where
    assert ("nb.ipynb:cell 4", 3, 9, "TP101") in where
    assert not any("cell 3" in w[0] for w in where)  # the %%bash cell is left out whole


def test_cli_text_output_reads_like_ruff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = save(tmp_path / "nb.ipynb", NB)
    assert main(["check", "--extend-select", "TP101", "--select", "TP101", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:cell 2:4:5: TP101" in out and "in 1 file" in out


def test_fix_changes_only_code_cell_sources(tmp_path: Path) -> None:
    path = save(tmp_path / "nb.ipynb", NB)
    result = fix_paths([path], extend_select=["TP101"])
    assert result.errors == [] and result.changed[0].fixed.get("TP101") == 2
    after = json.loads(path.read_text(encoding="utf-8"))
    before = json.loads(json.dumps(NB))
    sources = [c.pop("source") for c in after["cells"]]
    for c in before["cells"]:
        c.pop("source")
    assert after == before  # outputs, metadata, markdown: untouched
    assert sources[0] == ["# Train\n"] and sources[2] == ["%%bash\n", "echo x.cuda()"]
    assert sources[1][0] == "%matplotlib inline\n" and "files = !ls\n" in sources[1]
    assert sources[1][-1] == "x = torch.ones(2).to(device)"  # no newline added to the last line
    assert any(line.startswith("device = ") for line in sources[1])
    assert "    !echo {i}\n" in sources[3] and ".to(device)" in sources[3]
    assert path.read_text(encoding="utf-8").endswith("}\n") and "é" in path.read_text("utf-8")
    assert fix_paths([path], extend_select=["TP101"]).changed == []  # idempotent


def test_layout_that_cannot_be_reproduced_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.ipynb"
    text = json.dumps(NB, indent=3)  # not a layout Jupyter writes
    path.write_text(text)
    result = fix_paths([path], extend_select=["TP101"])
    assert result.exit_code == 2 and "JSON layout" in result.errors[0].message
    assert path.read_text() == text
    assert check_paths([path], extend_select=["TP101"]).findings  # checking still works


def test_indent_2_and_ascii_layouts_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "two.ipynb"
    path.write_text(json.dumps(NB, indent=2, ensure_ascii=True))
    assert fix_paths([path], extend_select=["TP101"]).errors == []
    text = path.read_text()
    assert not text.endswith("\n") and "\\u00e9" in text and '\n  "cells"' in text


def test_bad_notebooks_are_clear_errors_and_other_languages_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text("{not json")
    (tmp_path / "old.ipynb").write_text(json.dumps({"worksheets": [], "nbformat": 3}))
    save(tmp_path / "r.ipynb", notebook(code("x <- 1"), language="R"))
    result = check_paths([tmp_path], extend_select=["TP101"])
    messages = {Path(e.path).name: e.message for e in result.errors}
    assert set(messages) == {"broken.ipynb", "old.ipynb"} and result.exit_code == 2
    assert "does not parse" in messages["broken.ipynb"] and "nbformat 4" in messages["old.ipynb"]
    with pytest.raises(NotPython):
        read_notebook(json.dumps(notebook(language="julia")))
    with pytest.raises(NotebookError):
        read_notebook("[]")


def test_syntax_error_is_placed_in_its_cell(tmp_path: Path) -> None:
    path = save(tmp_path / "bad.ipynb", notebook(code("x = 1\n"), code("def (:\n")))
    result = check_paths([path], extend_select=["TP101"])
    assert result.exit_code == 2 and result.errors[0].message.startswith("cell 2 not checked")
    assert "at line 1, column" in result.errors[0].message
    assert (
        "at cell 2, line 1" in fix_paths([path], extend_select=["TP101"]).errors[0].message
    )  # fix: the whole file


def test_magics_survive_and_noqa_works_in_cells(tmp_path: Path) -> None:
    nb = notebook(code("import torch\n%time x = torch.ones(1).cuda()  # noqa: TP101\n"),
                  code("y = torch.ones(1).cuda()  # noqa: TP101\n"))  # fmt: skip
    path = save(tmp_path / "m.ipynb", nb)
    assert check_paths([path], extend_select=["TP101"], select=["TP101"]).findings == []


_LINES = st.sampled_from(
    ["import torch\n", "x = 1\n", "%matplotlib inline\n", "!pip install x\n", "files = !ls\n",
     "obj?\n", "    y = 2\n", "# comment\n", "\n", "s = 'é'\n", "a, b = %who_ls\n"]
)  # fmt: skip
_CELLS = st.one_of(
    st.builds(lambda lines, as_list: code(lines if as_list else "".join(lines)),
              st.lists(_LINES, max_size=5), st.booleans()),
    st.just({"cell_type": "markdown", "metadata": {}, "source": "text"}),
    st.just(code(["%%bash\n", "ls"])),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(cells=st.lists(_CELLS, max_size=6), indent=st.sampled_from([1, 2, 4]))
def test_unchanged_source_writes_back_the_same_bytes(
    cells: list[dict[str, Any]], indent: int
) -> None:
    text = json.dumps(notebook(*cells), indent=indent, ensure_ascii=False) + "\n"
    nb = read_notebook(text)
    assert nb.write(nb.source) == text
    for index in nb.cells_of(nb.source):  # each code cell came through in order
        assert nb.data["cells"][index]["cell_type"] == "code"


def test_lines_a_fix_puts_above_the_first_cell_go_into_it() -> None:
    nb = read_notebook(json.dumps(notebook(code("x = 1"), code("y = 2\n")), indent=1) + "\n")
    out = json.loads(nb.write("import torch\n" + nb.source))
    assert out["cells"][0]["source"] == "import torch\nx = 1"
    assert out["cells"][1]["source"] == "y = 2\n"


def test_a_cell_that_does_not_parse_is_reported_and_the_others_are_checked(tmp_path: Path) -> None:
    nb = notebook(
        code("import torch\n"),
        code("input_size = \n"),  # an exercise left blank
        code("x = torch.ones(1).cuda()\n"),
        code("def (:\n"),
    )
    path = save(tmp_path / "ex.ipynb", nb)
    result = check_paths([path], extend_select=["TP101"], select=["TP101"])
    messages = [e.message for e in result.errors]
    assert result.exit_code == 2 and len(messages) == 2
    assert messages[0].startswith("cell 2 not checked: cannot parse") and "cell 4" in messages[1]
    assert [(Path(f.path).name, f.line) for f in result.findings] == [("ex.ipynb:cell 3", 1)]
    before = path.read_text()
    fixed = fix_paths([path], extend_select=["TP101"])
    assert fixed.exit_code == 2 and path.read_text() == before  # fix refuses the notebook


# ---------------------------------------------------------------- every IPython line form

# IPython lines, each with what follows it when it continues (a trailing backslash).
_IPYTHON = [
    "!pip install torch \\\n    torchvision\n",
    "!ls -la\n",
    "!!ls\n",
    "%time y = 1\n",
    "%load_ext autoreload\n",
    "%env CUDA_VISIBLE_DEVICES=0 \\\n  --flag \\\n  --more\n",
    "out = !echo hi \\\n   there\n",
    "?torch.ones\n",
    "??torch.ones\n",
    "torch.ones?\n",
    "torch.nn.Module??\n",
    "%timeit?\n",
    "np.*load*?\n",
    "/print 1 2\n",
    ",print a b\n",
]
# Python whose lines look like IPython's but are not: inside strings, brackets, continuations.
_LOOKALIKES = [
    's = """\n!not a shell line\nwhat?\n%not a magic\n"""\n',
    "t = [\n    1,\n]\n",
    "u = (1 +\n     2)\n",
    "v = 1 + \\\n    2\n",
    "w = '?'\n",
]


@st.composite
def ipython_cells(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A cell mixing IPython lines (also inside blocks) with Python; and its IPython lines."""
    parts: list[str] = ["import torch\n"]
    magic: list[str] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            line = draw(st.sampled_from(_IPYTHON))
            if draw(st.booleans()):
                block = "".join("    " + x for x in line.splitlines(True))
                parts.append("for i in range(2):\n" + block + "    pass\n")
                magic += block.splitlines()
            else:
                parts.append(line)
                magic += line.splitlines()
        elif kind == 1:
            parts.append(draw(st.sampled_from(_LOOKALIKES)))
        else:
            parts.append("x = torch.ones(1).cuda()\n")
    return "".join(parts), magic


@settings(max_examples=80, deadline=None)
@given(ipython_cells(), st.booleans())
def test_every_ipython_line_form_is_kept_out_of_python_and_round_trips(
    cell: tuple[str, list[str]], as_list: bool
) -> None:
    text, magic = cell
    source = text.splitlines(True) if as_list else text
    raw = json.dumps(notebook(code(source)), indent=1, ensure_ascii=False) + "\n"
    nb = read_notebook(raw)
    compile(nb.source, "<nb>", "exec")  # every IPython line is out of the Python's way
    assert sorted(nb.magics.values()) == sorted(magic)
    assert nb.write(nb.source) == raw
    for lookalike in _LOOKALIKES:
        if lookalike in text:
            assert lookalike in nb.source  # Python that looks like IPython stays Python


@settings(max_examples=25, deadline=None)
@given(ipython_cells())
def test_notebooks_with_ipython_lines_are_checked_and_fixed(
    tmp_path_factory: pytest.TempPathFactory, cell: tuple[str, list[str]]
) -> None:
    text, magic = cell
    path = save(tmp_path_factory.mktemp("nb") / "n.ipynb", notebook(code(text)))
    expected = text.count(".cuda()")
    checked = check_paths([path], extend_select=["TP101"], select=["TP101"])
    assert checked.errors == [] and len(checked.findings) == expected
    fixed = fix_paths([path], extend_select=["TP101"], select=["TP101"])
    assert fixed.errors == []
    after = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert ".cuda()" not in after
    kept = [line for line in after.splitlines() if line in magic]
    assert kept == [line for line in text.splitlines() if line in magic]  # in order, as they were


# (the first line of a cell, whether IPython runs the rest as Python)
_CELL_MAGICS = [
    ("%%time\n", True),
    ("%%timeit -n 2 -r 1\n", True),
    ("%%capture captured\n", True),
    ("%%prun -s cumulative\n", True),
    ("%%debug\n", True),
    ("%%bash\n", False),
    ("%%html\n", False),
    ("%%writefile train.py\n", False),
    ("%%timeitx\n", False),  # no such Python magic: left out, as an unknown one
]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(_CELL_MAGICS), ipython_cells())
def test_cell_magics_that_run_python_have_their_body_checked_and_fixed(
    tmp_path_factory: pytest.TempPathFactory, head: tuple[str, bool], cell: tuple[str, list[str]]
) -> None:
    first, python = head
    text, _ = cell
    path = save(tmp_path_factory.mktemp("nb") / "n.ipynb", notebook(code(first + text)))
    expected = text.count(".cuda()") if python else 0
    checked = check_paths([path], extend_select=["TP101"], select=["TP101"])
    assert checked.errors == [] and len(checked.findings) == expected
    assert fix_paths([path], extend_select=["TP101"], select=["TP101"]).errors == []
    after = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert after.startswith(first)
    assert (".cuda()" in after) == (not python and ".cuda()" in text)
