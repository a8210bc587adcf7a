"""Run code in a fresh interpreter with the simulated accelerator, and read back what it printed.

Installing the simulator changes the process for good (PyTorch then reports an
accelerator), so the suite's own process never installs it: each check runs in
a child (forked off a server that has imported torch: :mod:`tests.preloaded`), which
prints one JSON document as its last line.
"""

from __future__ import annotations

import json
import os
import textwrap
from typing import Any

from tests.preloaded import run_python

PRELUDE = """
import json, torch
from torchport.testing import simulate_accelerator
"""


def run_isolated(*parts: str, env: dict[str, str] | None = None, timeout: float = 240) -> Any:
    """Run ``parts`` (dedented) after :data:`PRELUDE` in a child; return its last line's JSON."""
    source = PRELUDE + "".join(textwrap.dedent(part) for part in parts)
    child_env = {key: value for key, value in os.environ.items() if key != "TORCHPORT_DEVICE"}
    child_env.update(env or {})
    done = run_python(source, env=child_env, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"child failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


_AUDIT_CHILD = """
import collections, linecache, os, tempfile
import torchport as tp
sim = simulate_accelerator()
sources = json.loads({sources!r})
folder = tempfile.mkdtemp()
results = []
for number, source in enumerate(sources):
    path = os.path.join(folder, f"prog_{{number}}.py")
    with open(path, "w") as f:
        f.write(source)
    linecache.checkcache(path)
    scope = {{}}
    exec(compile(source, path, "exec"), scope)
    counted = {{"notes": {{}}}}
    for name, dev in (("predicted", torch.device("cpu")), ("measured", sim)):
        with tp.audit() as report:
            scope["prog"](dev)
        assert report.measured == (name == "measured"), name
        lines = collections.Counter()
        for e in report.entries:
            if e.file == path:
                kind = "copy" if e.kind == "transfer" else "sync"
                lines[f"{{e.line}} {{kind}}"] += e.count
        counted[name] = dict(lines)
        counted["notes"][name] = sorted(report.unpredicted)
    results.append(counted)
print(json.dumps(results))
"""


def audit_counts(sources: list[str]) -> list[dict[str, dict[str, int]]]:
    """Run each source's ``prog(dev)`` under ``tp.audit()`` twice in one child: on the CPU
    (``"predicted"``) and on the simulated accelerator (``"measured"``).

    Returns:
        Per source, ``{"predicted": counts, "measured": counts, "notes": notes}``, where
        counts maps ``"LINE copy"`` / ``"LINE sync"`` to how many the audit counted at that
        line, and notes holds each run's ``report.unpredicted`` (what it left unpredicted).
    """
    return run_isolated(_AUDIT_CHILD.format(sources=json.dumps(sources)))  # type: ignore[no-any-return]


def assert_predicted_as_measured(sources: list[str], *, notes_allowed: bool = False) -> None:
    """Each source's per-line counts on the CPU (predicted) equal those on the simulated
    accelerator (measured); unless ``notes_allowed``, neither run left anything unpredicted."""
    for source, counted in zip(sources, audit_counts(sources), strict=True):
        assert counted["predicted"] == counted["measured"], (source, counted)
        if not notes_allowed:
            assert counted["notes"] == {"predicted": [], "measured": []}, source
