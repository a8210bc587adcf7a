"""Run code in a fresh interpreter with the simulated accelerator, and read back what it printed.

Installing the simulator changes the process for good (PyTorch then reports an
accelerator), so the suite's own process never installs it: each check runs in
a child, which prints one JSON document as its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

PRELUDE = """
import json, torch
from torchport.testing import simulate_accelerator
"""


def run_isolated(*parts: str, env: dict[str, str] | None = None, timeout: float = 240) -> Any:
    """Run ``parts`` (dedented) after :data:`PRELUDE` in a child; return its last line's JSON."""
    source = PRELUDE + "".join(textwrap.dedent(part) for part in parts)
    child_env = {key: value for key, value in os.environ.items() if key != "TORCHPORT_DEVICE"}
    child_env.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", source],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env,
    )
    if done.returncode != 0:
        raise AssertionError(f"child failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
