"""Every fuzzer fragment, fixed, still runs and records the same on the simulated accelerator.

``torchport.testing.simulate_accelerator()`` installs ``sim:0``, a CPU-backed
accelerator with real values and CUDA's device rules, as *the* accelerator of a
process (once, for good), so the programs run in a child process: no CUDA there
(``.cuda()`` raises, as on a Mac or an Intel GPU), ``torch.accelerator`` reports
``sim``. Each fragment of ``fix_programs`` (the look-alikes, the calls that are
not torch's, negative tests, device values as data, device choices), alone,
at module level and inside a function, is fixed (safe and unsafe); wherever the
original ran, the fixed program must run and record the same values on the same
device types, unless a fix that was offered says it changes results.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.preloaded import run_python
from torchport.check import check_source

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import test_fix_fuzz as fuzz  # noqa: E402

pytestmark = pytest.mark.needs_simulator

_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from torchport.testing import simulate_accelerator
simulate_accelerator()
import test_fix_fuzz as fuzz
failures = []
for case in json.load(sys.stdin):
    project = case.get("project")
    before = fuzz.run_program(case["source"], on="sim", project=project)
    if isinstance(before, BaseException):
        continue
    for mode, fixed in case["fixed"].items():
        after = fuzz.run_program(fixed, on="sim", project=project)
        if isinstance(after, BaseException):
            failures.append(f"broken ({mode}): {after!r}\n{case['source']}\n--- fixed\n{fixed}")
        elif not fuzz.same(before, after) and not case["declared"][mode]:
            failures.append(f"changed ({mode}): {before!r} != {after!r}\n{case['source']}"
                            f"\n--- fixed\n{fixed}")
print(json.dumps(failures))
"""


def _cases() -> list[dict[str, object]]:
    cases: list[dict[str, object]] = []
    programs = fuzz.fix_programs
    fragments = programs.ALL_FRAGMENTS + programs.PROJECT_FRAGMENTS
    for k, fragment in enumerate(fragments):
        # (the other module's fragments are fixed as a file of a project holding it)
        project = (
            {"fuzzproj": programs.PROJECT_MODULE}
            if fragment in programs.PROJECT_FRAGMENTS
            else None
        )
        body = fuzz.fix_programs._T.sub("torch.", fragment.replace("{k}", str(k))) + "\n"
        wrapped = [body]
        if "global" not in body and "import" not in body:
            wrapped.append(f"def main{k}():\n{fuzz.fix_programs._indent(body)}main{k}()\n")
        for text in wrapped:
            source = "import torch\n" + text
            fixed, declared = {}, {}
            for unsafe in (False, True):
                mode = "unsafe" if unsafe else "safe"
                out, said = fuzz.fix_with_disclosures(source, unsafe=unsafe, project=project)
                if out != source:
                    fixed[mode], declared[mode] = out, said
            if fixed:
                cases.append(
                    {"source": source, "fixed": fixed, "declared": declared, "project": project}
                )
    return cases


@pytest.mark.skipif(os.environ.get("TORCHPORT_NO_SIM") == "1", reason="simulator turned off")
def test_fixed_fragments_run_the_same_on_the_simulated_accelerator() -> None:
    cases = _cases()
    assert len(cases) > 20  # the fragments do draw fixes
    assert check_source("import torch\nx = torch.ones(1).cuda()\n", extend_select=["TP101"])
    out = run_python(_CHILD, str(HERE), input=json.dumps(cases), timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    failures = json.loads(out.stdout.strip().splitlines()[-1])
    assert not failures, f"{len(failures)} failures; the first:\n" + "\n\n".join(failures[:3])
