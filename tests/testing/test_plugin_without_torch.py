"""With the checker-only install (no torch), the pytest plugin never breaks collection."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

_BLOCKED = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] in ('torch', 'optree', 'rich', 'numpy'):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Block())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _other_plugins() -> list[str]:
    """``-p no:NAME`` for every pytest plugin installed here but torchport's: a checker-only
    install has none of those that need the blocked packages (jaxtyping's imports numpy,
    and broke the child on the H200 machine of issue 36)."""
    names = {ep.name for ep in entry_points(group="pytest11")} - {"torchport"}
    return [arg for name in sorted(names) for arg in ("-p", f"no:{name}")]


def test_the_plugin_is_inert_and_a_device_test_says_what_to_install(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(
        textwrap.dedent("""\
            import pytest

            def test_plain():
                assert True

            def test_on_devices(device):
                assert device is not None

            @pytest.mark.devices("cpu")
            def test_marked(device):
                assert device is not None
            """)
    )
    command = [sys.executable, "-c", _BLOCKED, "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, *_other_plugins(), "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    out = done.stdout + done.stderr
    assert "ModuleNotFoundError" not in out, out
    assert "1 passed, 2 errors" in out, out  # collection went through; test_plain ran
    assert out.count("pip install 'torchport[torch]'") >= 2, out
