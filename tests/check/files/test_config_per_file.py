"""Each file uses its nearest `[tool.torchport]`: a file's findings never depend on the other
paths of the run or on the working folder (Ruff's rule), and `..` paths match patterns."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, fix_paths
from torchport.check.files._config_search import ConfigResolver, _nearest_source
from torchport.check.files._discovery import normalised
from torchport.check.files._requirements import project_folder, requirement_floor

SOURCE = (
    "import torch\n"
    "x = torch.zeros(3).cuda()\n"
    'y = torch.load("m.pt")\n'
    "used = torch.cuda.memory_allocated()\n"
)
FOLDERS = (".", "a", "a/b", "c")
FILES = ("m.py", "n.py", "g.py")  # g.py: a generated file, exempt by Ruff's file-wide noqa


@contextlib.contextmanager
def cwd(folder: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _toml(table: dict[str, object]) -> str:
    lines = ["[tool.torchport]"]
    nested = []
    for key, value in table.items():
        if isinstance(value, dict):
            nested.append(
                f"[tool.torchport.{key}]\n"
                + "".join(f'"{k}" = {_list(v)}\n' for k, v in value.items())
            )
        elif isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        elif isinstance(value, str):
            lines.append(f'{key} = "{value}"')
        else:
            lines.append(f"{key} = {_list(value)}")  # type: ignore[arg-type]
    return "\n".join(lines) + "\n" + "\n".join(nested)


def _list(values: list[str]) -> str:
    return "[" + ", ".join(f'"{v}"' for v in values) + "]"


tables = st.fixed_dictionaries(
    {},
    optional={
        "select": st.sampled_from([["TP1"], ["TP3", "TP4"], ["ALL"]]),
        "ignore": st.sampled_from([["TP101"], ["TP106"]]),
        "per-file-ignores": st.sampled_from([{"m*.py": ["TP3"]}, {"**/n.py": ["TP1"]}]),
        "exclude": st.sampled_from([["n.py"], ["b/"]]),
        "target-torch": st.sampled_from(["2.6", "2.8"]),
        "respect-foreign-noqa": st.booleans(),
    },
)
trees = st.dictionaries(st.sampled_from(FOLDERS), tables, max_size=4)
choices = st.lists(
    st.sampled_from([*FOLDERS, *(f"{d}/{f}" for d in FOLDERS for f in FILES)]),
    min_size=1,
    max_size=4,
    unique=True,
)


def _project(root: Path, tree: dict[str, dict[str, object]]) -> None:
    write(root / ".git" / "HEAD", "")  # the project's top: no .gitignore above it counts
    for folder in FOLDERS:
        for name in FILES:
            write(root / folder / name, ("# ruff: noqa: TP1\n" if name == "g.py" else "") + SOURCE)
    for folder, table in tree.items():
        write(root / folder / "pyproject.toml", _toml(table))


def _by_file(result_findings: list[object], base: Path) -> dict[Path, list[tuple[object, ...]]]:
    out: dict[Path, list[tuple[object, ...]]] = {}
    for f in result_findings:
        path = Path(os.path.normpath(base / f.path))  # type: ignore[attr-defined]
        out.setdefault(path, []).append(
            (f.line, f.col, f.code, f.message, f.fix is not None)  # type: ignore[attr-defined]
        )
    return out


def _alone(file: Path) -> tuple[bool, list[tuple[object, ...]]]:
    """The reference: the file checked on its own, from its own folder."""
    with cwd(file.parent):
        result = check_paths([file.name], extend_select=["TP4"])
    return result.files > 0, _by_file(result.findings, file.parent).get(file, [])


@settings(deadline=None, max_examples=30)
@given(tree=trees, given_paths=choices, where=st.sampled_from(FOLDERS))
def test_a_files_findings_do_not_depend_on_the_other_paths_or_the_working_folder(
    tree: dict[str, dict[str, object]], given_paths: list[str], where: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        _project(root, tree)
        run_from = root / where
        # Paths as a user in `where` types them: relative, with `..` where they climb.
        argv = [os.path.relpath(root / p, run_from) for p in given_paths]
        with cwd(run_from):
            result = check_paths(argv, extend_select=["TP4"])
        # A folder given by name whose files its config excludes is an error of its own
        # ("no Python files to check"), whatever else is given; nothing else may fail.
        assert all(
            "no Python files to check" in error.message and error.path in argv
            for error in result.errors
        ), result.errors
        together = _by_file(result.findings, run_from)
        covered = [
            root / folder / name
            for folder in FOLDERS
            for name in FILES
            if any(
                (root / folder / name) == (root / p) or (root / p) in (root / folder / name).parents
                for p in given_paths
            )
        ]
        for file in covered:
            checked, expected = _alone(file)
            given_itself = any((root / p) == file for p in given_paths)
            if given_itself or checked:
                assert together.get(file, []) == expected, (file, tree, argv, where)
            else:  # excluded alone: never reached through a folder either
                assert file not in together, (file, tree, argv, where)


def test_a_nested_table_rules_its_folder_whatever_else_is_given(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchport]\nselect = ["TP3"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[tool.torchport]\nselect = ["TP1"]\n')
    write(tmp_path / "a.py", SOURCE)
    write(tmp_path / "sub" / "b.py", SOURCE)
    with cwd(tmp_path):
        alone = check_paths(["sub/b.py"]).findings
        both = check_paths(["a.py", "sub/b.py"]).findings
    assert {f.code for f in alone} == {"TP101"}  # TP106 leaves a module's one-off copy
    assert [f for f in both if f.path == "sub/b.py"] == alone
    assert {f.code for f in both if f.path == "a.py"} == {"TP301"}


def test_per_file_ignores_match_a_path_written_with_dotdot(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchport.per-file-ignores]\n"tests/**" = ["TP1"]\n')
    write(tmp_path / "tests" / "x.py", SOURCE)
    (tmp_path / "src").mkdir()
    with cwd(tmp_path / "src"):
        found = check_paths(["../tests/x.py"]).findings
        assert not [f for f in found if f.code.startswith("TP1")]
        fix_paths(["../tests/x.py"])
    assert ".cuda()" in (tmp_path / "tests" / "x.py").read_text()  # TP101 is off there


def test_config_names_one_table_for_every_file(tmp_path: Path) -> None:
    write(tmp_path / "sub" / "pyproject.toml", '[tool.torchport]\nselect = ["TP1"]\n')
    one = write(tmp_path / "one.toml", '[tool.torchport]\nselect = ["TP3"]\n')
    write(tmp_path / "sub" / "b.py", SOURCE)
    found = check_paths([tmp_path / "sub" / "b.py"], config=one).findings
    assert {f.code for f in found} == {"TP301"}


def test_the_target_torch_defaults_to_the_projects_requirement(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.8,<3"]\n')
    write(tmp_path / "lib" / "requirements.txt", "numpy\ntorch ~= 2.7.1\n")
    resolver = ConfigResolver()
    top = resolver.for_folder(tmp_path)
    assert top.target_torch == (2, 8) and "dependencies" in top.target_origin
    assert resolver.for_folder(tmp_path / "lib").target_torch == (2, 7)
    assert resolver.for_folder(tmp_path / "elsewhere").target_torch == (2, 8)


@given(
    major=st.integers(1, 3),
    minor=st.integers(0, 20),
    op=st.sampled_from([">=", "==", "~="]),
    patch=st.sampled_from(["", ".0", ".1"]),
    extra=st.sampled_from(["", "[cuda]", " "]),
    tail=st.sampled_from(["", ",<4", "; python_version>'3.10'", "  # pinned"]),
)
def test_a_requirement_gives_its_lower_bound(
    major: int, minor: int, op: str, patch: str, extra: str, tail: str
) -> None:
    line = f"torch{extra}{op}{major}.{minor}{patch}{tail}"
    assert requirement_floor(["torchvision>=0.99", line]) == (major, minor)
    assert requirement_floor([f"torchaudio{op}{major}.{minor}"]) is None
    assert requirement_floor(["torch"]) is None


@given(
    detour=st.lists(st.sampled_from(["src", "pkg", "a.b"]), max_size=3),
    dot=st.booleans(),
    glob=st.sampled_from(["*.py", "t.py", "**/*.py"]),
)
def test_a_pattern_with_dot_dot_means_the_folder_it_names(
    detour: list[str], dot: bool, glob: str
) -> None:
    """``src/../tests/*.py`` is ``tests/*.py``; ``../tests/*.py`` in sub/'s config (with
    ``--config``) is the sibling folder's: gitignore syntax alone matched neither."""
    pattern = "/".join([*(["."] if dot else []), *detour, *[".."] * len(detour), "tests", glob])
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        target = write(root / "tests" / "t.py", SOURCE)
        table = f'[tool.torchport]\nper-file-ignores = {{"{pattern}" = ["TP101"]}}\n'
        config = write(root / "pyproject.toml", table)
        assert "TP101" not in _codes(check_paths([target], extend_select=ON).findings), pattern
        config.unlink()
        up = write(
            root / "sub" / "pyproject.toml",
            f'[tool.torchport]\nper-file-ignores = {{"../{pattern}" = ["TP101"]}}\n',
        )
        assert "TP101" not in _codes(check_paths([target], config=up, extend_select=ON).findings), (
            pattern
        )
        other = write(root / "elsewhere" / "t.py", SOURCE)
        assert "TP101" in _codes(check_paths([other], config=up, extend_select=ON).findings)


ON = ["TP101"]  # off by default: named (ignore still wins over it)


def _codes(findings: object) -> set[str]:
    return {f.code for f in findings}  # type: ignore[attr-defined]


# What a folder may hold for the upward searches: a table, a pyproject.toml without one,
# or one of the other files that declare torch (each of project_folder's names).
HOLDINGS = {
    "table": ("pyproject.toml", '[tool.torchport]\nselect = ["TP1"]\n'),
    "no table": ("pyproject.toml", '[project]\nname = "p"\ndependencies = ["torch>=2.7"]\n'),
    "requirements": ("requirements.txt", "torch>=2.8\n"),
    "setup.cfg": ("setup.cfg", "[options]\ninstall_requires =\n    torch>=2.6\n"),
    "pixi": ("pixi.toml", '[dependencies]\ntorch = ">=2.6"\n'),
}
NESTED = ("a", "a/b", "a/b/c", "a/d", "e", "e/f/g")


@settings(deadline=None)
@given(
    held=st.dictionaries(st.sampled_from((".", *NESTED)), st.sampled_from(sorted(HOLDINGS))),
    order=st.permutations((".", *NESTED, "a/b/c/new", "x/y")),
)
def test_the_resolvers_per_folder_answers_are_the_upward_searches(
    held: dict[str, str], order: list[str]
) -> None:
    """Each folder's nearest table and project, kept per folder for a run, are what the
    plain upward searches find from that folder, whatever order the folders are asked in
    (a folder's kept answer is its own or its parent's); ``for_file`` keyed by the folder's
    text gives the very settings ``for_folder`` gives its folder."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for folder in NESTED:
            (root / folder).mkdir(parents=True, exist_ok=True)
        for folder, what in held.items():
            name, text = HOLDINGS[what]
            write(root / folder / name, text)
        resolver = ConfigResolver()
        for folder in order:
            path = normalised(root / folder)
            assert resolver._nearest_source(path) == _nearest_source(path), folder
            assert resolver._project_folder(path) == project_folder(path), folder
            assert resolver.for_file(root / folder / "m.py") is resolver.for_folder(path)
            dotted = str(path / ".." / path.name / "n.py")  # the same folder, written otherwise
            assert resolver.for_file(dotted) is resolver.for_folder(path)
