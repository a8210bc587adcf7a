"""With the checker-only install (no torch), the pytest plugin never breaks collection."""

from __future__ import annotations

import subprocess
import sys
import textwrap
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
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED, "-q", "-p", "no:cacheprovider", "test_user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    out = done.stdout + done.stderr
    assert "ModuleNotFoundError" not in out, out
    assert "1 passed, 2 errors" in out, out  # collection went through; test_plain ran
    assert out.count("pip install 'torchport[torch]'") >= 2, out
