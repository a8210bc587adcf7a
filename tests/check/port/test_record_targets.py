"""Targets that travel with outputs through a namedtuple: reported exactly when left on the CPU.

The oracle is a run of each ported program on the simulated accelerator (real
values, CUDA's device rules) in a child process: a program that runs to its end
there left nothing on the CPU, so the port must have reported nothing for it; one
that stops at a device error left something, so the port must have said so.
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from pathlib import Path

import pytest

from tests.preloaded import run_python
from torchport.check import port_paths

DEFINITIONS = {
    "collections": "import collections\nPair = collections.namedtuple('Pair', 'out target')\n",
    "list": "from collections import namedtuple\nPair = namedtuple('Pair', ['out', 'target'])\n",
    "typing": "import typing\nPair = typing.NamedTuple('Pair', [('out', torch.Tensor), "
    "('target', torch.Tensor)])\n",
    "class": "from typing import NamedTuple\n\n\nclass Pair(NamedTuple):\n"
    "    out: torch.Tensor\n    target: torch.Tensor\n",
}
TARGETS = {  # what the target is made by; True: the port can move it
    "factory": ("torch.ones(6, 2)", True),
    "loaded": ("torch.load(buf, weights_only=True)", False),
}
READS = {
    "attribute": "crit(p.out, p.target)",
    "index": "crit(p[0], p[1])",
    "unpacked": "crit(*p)",
}


def program(definition: str, target: str, read: str) -> str:
    return (
        "import io\nimport torch\nfrom torch import nn\n"
        + DEFINITIONS[definition]
        + "\nbuf = io.BytesIO()\ntorch.save(torch.zeros(6, 2), buf)\nbuf.seek(0)\n"
        "model = nn.Linear(4, 2)\ncrit = nn.MSELoss()\nX = torch.randn(6, 4)\n"
        f"p = Pair(model(X), {TARGETS[target][0]})\n"
        f"print({READS[read]}.item())\n"
    )


_CHILD = """
import json, runpy, sys, warnings
from torchport.testing import simulate_accelerator

simulate_accelerator()
warnings.simplefilter("ignore")
done = {}
for path in sys.argv[1:]:
    try:
        runpy.run_path(path, run_name="__main__")
        done[path] = ""
    except Exception as exc:
        done[path] = f"{type(exc).__name__}: {exc}"[:200]
print(json.dumps(done))
"""


@pytest.mark.needs_simulator  # the oracle runs on sim:0: needs torch 2.7+
def test_what_goes_through_a_namedtuple_is_reported_iff_a_run_finds_it_on_the_cpu() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        reported: dict[str, bool] = {}
        for definition, target, read in itertools.product(DEFINITIONS, TARGETS, READS):
            path = Path(tmp) / f"{definition}_{target}_{read}.py"
            path.write_text(program(definition, target, read), encoding="utf-8")
            result = port_paths([path], jobs=1)
            assert not result.errors, result.errors
            reported[str(path)] = bool(result.remaining)
        env = {k: v for k, v in os.environ.items() if k != "TORCHPORT_DEVICE"}
        run = run_python(_CHILD, *reported, timeout=600, env=env)
        assert run.returncode == 0, run.stderr[-3000:]
        ran = json.loads(run.stdout.strip().splitlines()[-1])
        for path, said in reported.items():
            error = ran[path]
            assert not error or "device" in error, (path, error)  # only device errors stop it
            assert said == bool(error), (Path(path).name, "reported" if said else "silent", error)
        # the oracle is not blind: a target the port cannot move stops the run on sim
        assert sum(bool(e) for e in ran.values()) == len(DEFINITIONS) * len(READS)
