"""The default target-torch: the lowest torch a project's own files let it be installed with.

Each case writes the declaration the way a project writes it (pip, PEP 508 with markers
and parentheses, Poetry, pixi, uv's dependency groups, setup.cfg, conda's environment
file) and compares with the bound the test computes from the versions it wrote.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check.files._requirements import declared_target, requirement_floor

versions = st.tuples(st.integers(1, 3), st.integers(0, 15))


def _v(version: tuple[int, int]) -> str:
    return f"{version[0]}.{version[1]}"


@given(
    bounds=st.lists(versions, min_size=2, max_size=4),
    name=st.sampled_from(["torch", "Torch", "TORCH"]),
    paren=st.booleans(),
)
def test_requirements_under_different_markers_are_alternatives(
    bounds: list[tuple[int, int]], name: str, paren: bool
) -> None:
    """One line per Python version: the project runs on the lowest of them."""
    lines = []
    for i, bound in enumerate(bounds):
        spec = f"(>={_v(bound)},<4)" if paren else f">={_v(bound)},<4"
        lines.append(f'{name} {spec} ; python_version == "3.{10 + i}"')
    assert requirement_floor(lines) == min(bounds)


@given(everywhere=versions, marked=versions)
def test_a_bound_without_marker_holds_everywhere(
    everywhere: tuple[int, int], marked: tuple[int, int]
) -> None:
    lines = [f"torch>={_v(everywhere)}", f'torch>={_v(marked)}; sys_platform == "linux"']
    assert requirement_floor(lines) == everywhere  # the marked line only adds to it
    # an unbounded torch everywhere leaves other platforms unbounded: no floor to read
    assert requirement_floor(["torch", f'torch>={_v(marked)}; sys_platform == "linux"']) is None


@pytest.mark.parametrize(
    ("line", "floor"),
    [
        ("torch>=2", (2, 0)),
        ("torch==2.*", (2, 0)),
        ("torch (>=2.4)", (2, 4)),
        ("torch>=2.4 --hash=sha256:0123", (2, 4)),
        ("torch @ https://download.pytorch.org/whl/torch-2.4.0.whl", None),
        ("torch<2.8", None),
    ],
)
def test_pip_spellings(line: str, floor: tuple[int, int] | None) -> None:
    assert requirement_floor([line]) == floor


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@given(low=versions, high=versions)
def test_each_project_file_form_gives_the_lowest_torch(
    low: tuple[int, int], high: tuple[int, int]
) -> None:
    import tempfile

    low, high = min(low, high), max(low, high)
    forms = {
        "pyproject.toml": (
            "[tool.poetry.dependencies]\n"
            f'python = "^3.10"\ntorch = [{{version = "^{_v(low)}", python = "<3.13"}},'
            f' {{version = ">={_v(high)}", python = ">=3.13"}}]\n'
        ),
        "pixi.toml": f'[dependencies]\npytorch = ">={_v(low)},<3"\n',
        "setup.cfg": f"[options]\ninstall_requires =\n    numpy\n    torch~={_v(low)}\n",
        "environment.yml": (
            "name: x\nchannels:\n  - conda-forge\ndependencies:\n"
            f"  - python=3.11\n  - pytorch={_v(low)}=cuda*\n  - pip\n  - pip:\n      - einops\n"
        ),
    }
    groups = (
        '[project]\nname = "x"\ndependencies = ["numpy"]\n[dependency-groups]\n'
        f'old = ["torch>={_v(low)}"]\nnew = ["torch>={_v(high)}"]\n'
    )
    pixi_in_pyproject = f'[tool.pixi.pypi-dependencies]\ntorch = {{version = ">={_v(low)}"}}\n'
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, text) in enumerate(
            [*forms.items(), ("pyproject.toml", groups), ("pyproject.toml", pixi_in_pyproject)]
        ):
            folder = Path(tmp) / str(i)
            _write(folder / name, text)
            found = declared_target(folder)
            assert found is not None and found[0] == low, (name, text, found)
            assert name in found[1]


def test_a_pyproject_without_torch_leaves_the_requirements_file_to_say(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", '[tool.poetry.dependencies]\npython = "^3.10"\n')
    _write(tmp_path / "requirements.txt", "torch>=2.3  \\\n    --hash=sha256:00\n")
    assert declared_target(tmp_path) == ((2, 3), f"torch>=2.3 in {tmp_path / 'requirements.txt'}")


def test_a_requirements_file_includes_the_files_it_names(tmp_path: Path) -> None:
    _write(tmp_path / "requirements" / "base.txt", "numpy\ntorch>=2.3\n-r ../requirements.txt\n")
    _write(tmp_path / "requirements.txt", "-r requirements/base.txt\neinops\n")
    found = declared_target(tmp_path)
    assert found is not None and found[0] == (2, 3)
    _write(tmp_path / "requirements.txt", "--requirement=requirements/missing.txt\n")
    assert declared_target(tmp_path) is None


@given(low=versions, high=versions, named=st.booleans())
def test_setup_py_literals_are_read_never_run(
    low: tuple[int, int], high: tuple[int, int], named: bool
) -> None:
    import tempfile

    low, high = min(low, high), max(low, high)
    deps = f'["numpy", "torch>={_v(high)}"]'
    text = (
        "import sys\nsys.exit('setup.py was run')\nfrom setuptools import setup\n"
        + (f"DEPS = {deps}\n" if named else "")
        + f"setup(name='x', install_requires={'DEPS' if named else deps},\n"
        f"      extras_require={{'old': ['torch>={_v(low)}']}})\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        _write(Path(tmp) / "setup.py", text)
        found = declared_target(Path(tmp))
        assert found is not None and found[0] == high and "setup.py" in found[1]
        _write(Path(tmp) / "setup.py", "from setuptools import setup\nsetup(name='x')\n")
        assert declared_target(Path(tmp)) is None
