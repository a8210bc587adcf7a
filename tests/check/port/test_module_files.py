"""Which file an import names, as Python finds it when the importing script runs.

The oracle is written apart from ``_module_files`` (no listing cache, no string
paths): ``pathlib`` and ``is_file`` on each candidate, in the order the module
docstring states (beside the importer, then the root above its packages, then for a
dotted name the first folder up holding its first part as a package; a relative
import from the importer's package). Layouts, importers (absolute and
relative to the working directory) and imports are generated.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check._listing import listed_once, recorded
from torchport.check.port._module_files import Lookups, find_module

NAMES = ("a", "b", "pkg", "model")


def oracle(importer: Path, module: str | None, level: int) -> Path | None:
    def named(base: Path, dotted: str) -> Path | None:
        target = base.joinpath(*dotted.split(".")) if dotted else base
        if dotted and (target.parent / (target.name + ".py")).is_file():
            return target.parent / (target.name + ".py")
        if (target / "__init__.py").is_file():
            return target / "__init__.py"
        return None

    folder = importer.parent
    if level:
        for _ in range(level - 1):
            folder = folder.parent
        return named(folder, module or "")
    if not module:
        return None
    root = folder
    while (root / "__init__.py").is_file() and root.parent != root:
        root = root.parent
    found = named(folder, module) or named(root, module)
    if found is not None or "." not in module:
        return found
    # a dotted name: the first folder up holding its first part as a package
    head = module.split(".")[0]
    for above in list(folder.parents)[:8]:
        if (above / head / "__init__.py").is_file():
            return named(above, module)
    return None


layouts = st.lists(
    st.tuples(st.lists(st.sampled_from(NAMES), max_size=2), st.sampled_from((*NAMES, "__init__"))),
    min_size=1,
    max_size=12,
)
imports = st.tuples(
    st.one_of(st.none(), st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(".".join)),
    st.integers(0, 3),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(layouts, st.integers(0, 11), st.lists(imports, min_size=1, max_size=6), st.booleans())
def test_find_module_agrees_with_the_oracle(
    layout: list[tuple[list[str], str]],
    which: int,
    asked: list[tuple[str | None, int]],
    relative: bool,
) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp) / "project"
        files: list[Path] = []
        for folders, stem in layout:
            path = root.joinpath(*folders, stem + ".py")
            if any(p.is_file() for p in (path.parent, *path.parent.parents)):
                continue  # a file where a folder would go
            if path.with_suffix("").is_dir():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("", encoding="utf-8")
            files.append(path)
        if not files:
            return
        importer = files[which % len(files)]
        if relative:
            mp.chdir(root)
            importer = importer.relative_to(root)
        # One question (a file's imports): folders read once, answers kept; asked twice
        # over, every answer must still be the oracle's.
        lookups = Lookups()
        for module, level in [*asked, *asked]:
            want = oracle(importer, module, level)
            for got in (
                find_module(importer, module, level),
                find_module(importer, module, level, lookups),
            ):
                assert (got and os.path.realpath(got)) == (want and os.path.realpath(want)), (
                    importer,
                    module,
                    level,
                )
            if want is not None:
                stat = want.stat()
                assert lookups.version(want) == (
                    os.path.realpath(want),
                    (stat.st_mtime_ns, stat.st_size),
                )
        # One span: each file's question shares it (the listings, and the answers read
        # from them: each folder's root, the package found above a folder), asked from
        # every file of the layout in turn.
        others = [f.relative_to(root) if relative else f for f in files if f != importer]
        with listed_once(), listed_once():
            for _ in range(2):
                for source, (module, level) in [(f, a) for f in (importer, *others) for a in asked]:
                    with recorded() as noted:  # (each answer noted: its caller reads it)
                        got = find_module(source, module, level, Lookups())
                    want = oracle(source, module, level)
                    assert (got and os.path.realpath(got)) == (want and os.path.realpath(want))
                    assert got is None or os.path.abspath(got) in noted
                    if want is not None:  # a version the span holds is the file's own
                        stat = want.stat()
                        assert Lookups().version(want) == (
                            os.path.realpath(want),
                            (stat.st_mtime_ns, stat.st_size),
                        )


def test_a_port_reads_a_sibling_s_version_once_a_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``port --diff`` writes nothing: its chunk is one span, as a check's; so is ``port``'s,
    which writes no file before every file is ported (files/_commit.py, issue 31/34)."""
    from torchport.check.port import _module_files
    from torchport.check.port._rewrite import port_paths

    (tmp_path / "model.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("import torch\nfrom model import Net\n\nnet = Net()\n")
    for name in ("c.py", "d.py", "e.py"):  # six files: chunks of two, a.py and b.py in one
        (tmp_path / name).write_text("x = 1\n")
    asked: list[str] = []
    version = _module_files._version

    def counted(path: Path, lookups: _module_files.Lookups) -> tuple[str, tuple[int, int]] | None:
        asked.append(path.name)
        return version(path, lookups)

    monkeypatch.setattr(_module_files, "_version", counted)
    port_paths([tmp_path], diff=True, jobs=1)
    assert asked.count("model.py") == 1  # a.py's and b.py's questions share it
    asked.clear()
    port_paths([tmp_path], jobs=1)  # writes, at the end: the tree holds still until then
    assert asked.count("model.py") == 1


def test_a_span_keeps_its_answers_until_it_ends(tmp_path: Path) -> None:
    importer = tmp_path / "main.py"
    importer.write_text("", encoding="utf-8")
    os.utime(tmp_path, ns=(0, 0))  # any later change gives the folder another time
    with listed_once():
        assert find_module(importer, "helper", 0, Lookups()) is None
        (tmp_path / "helper.py").write_text("", encoding="utf-8")
        assert find_module(importer, "helper", 0, Lookups()) is None  # the span's answer
    assert find_module(importer, "helper", 0, Lookups()) == tmp_path / "helper.py"
    assert find_module(importer, "helper", 0) == tmp_path / "helper.py"


def test_a_package_path_from_a_script_below_it_is_found(tmp_path: Path) -> None:
    """``from TCN.char_cnn.model import TCN`` in ``TCN/char_cnn/train.py`` (locuslab/TCN's
    layout: the script puts ``../../`` on ``sys.path``; only ``TCN/`` is a package)."""
    (tmp_path / "TCN" / "char_cnn").mkdir(parents=True)
    (tmp_path / "TCN" / "__init__.py").write_text("", encoding="utf-8")
    model = tmp_path / "TCN" / "char_cnn" / "model.py"
    model.write_text("", encoding="utf-8")
    script = tmp_path / "TCN" / "char_cnn" / "train.py"
    script.write_text("", encoding="utf-8")
    assert find_module(script, "TCN.char_cnn.model", 0) == model
    assert find_module(script, "model", 0) == model  # beside it, as before
    assert find_module(script, "char_cnn.model", 0) is None  # `char_cnn` is no package


def test_a_span_s_roots_and_packages_above_are_each_folder_s_own(tmp_path: Path) -> None:
    """One span, importers in folders with other roots and other packages above them."""
    layout = [
        "pkg/__init__.py", "pkg/mod.py", "helper.py", "scripts/run.py",
        "x/TCN/__init__.py", "x/TCN/model.py", "x/TCN/char/run.py", "y/run.py",
    ]  # fmt: skip
    for name in layout:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    asked = [
        ("pkg/mod.py", "helper"),  # the root above the package: helper.py
        ("scripts/run.py", "helper"),  # a script's own folder is its root: none
        ("x/TCN/char/run.py", "TCN.model"),  # the package two folders up
        ("y/run.py", "TCN.model"),  # no TCN above y/: none
    ]
    for order in (asked, asked[::-1]):
        with listed_once():
            for importer, module in order:
                got = find_module(tmp_path / importer, module, 0, Lookups())
                want = oracle(tmp_path / importer, module, 0)
                assert got == want, (importer, module)
