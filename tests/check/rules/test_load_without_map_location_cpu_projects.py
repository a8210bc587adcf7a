"""TP301 leaves a file's own checkpoints in a project that never names a device.

ikostrikov/pytorch-ddpg-naf: an agent saves and restores its ``state_dict()`` and no
file of the project places anything on a device, so every checkpoint it writes holds
CPU tensors. Generated projects (a marker file in the project or above it, sibling
modules and a sub-package module whose text names a device or not, in code or in a
comment) hold an agent that loads a checkpoint, saving one itself or not. The oracle,
written apart: quiet exactly when the agent's file saves with ``torch.save`` and no
``.py`` file of the project names a device; a project that uses a device anywhere keeps
the finding (PARL's agents).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

SIBLINGS = {  # a module's text, and whether it names a device
    "import numpy as np\n\nnoise = np.zeros(3)\n": False,
    "import torch\n\nnet = torch.nn.Linear(2, 2)\n": False,
    "import torch\n\nnet = torch.nn.Linear(2, 2).cuda()\n": True,
    "import torch\n\nx = torch.zeros(2).to(dev)\n": True,
    "# runs on the GPU if you pass --device cuda\nimport torch\n": True,
    "import torch\n\nuse_mps = torch.backends.mps.is_available()\n": True,
}
AGENT = """import torch


class Agent:
    def save_model(self, path):
{save}
    def load_model(self, path):
        self.actor.load_state_dict(torch.load(path))
"""
SAVES = {
    "        torch.save(self.actor.state_dict(), path)\n": True,
    "        pass\n": False,
}


@settings(deadline=None)
@given(
    marker=st.sampled_from(("", "pyproject.toml", "setup.py")),
    siblings=st.lists(st.sampled_from(sorted(SIBLINGS)), max_size=3),
    nested=st.none() | st.sampled_from(sorted(SIBLINGS)),
    save=st.sampled_from(sorted(SAVES)),
)
def test_own_checkpoints_of_a_project_without_devices_are_left(
    marker: str, siblings: list[str], nested: str | None, save: str
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        (root / "pkg").mkdir(parents=True)
        # no marker in the project: one above it (the walk up finds it; a bare temporary
        # folder could sit under a marker of this machine's)
        (root / marker if marker else Path(tmp) / "setup.cfg").write_text("")
        for i, text in enumerate(siblings):
            (root / f"mod{i}.py").write_text(text)
        if nested is not None:
            (root / "pkg" / "deep.py").write_text(nested)
        source = AGENT.format(save=save)
        agent = root / "agent.py"
        agent.write_text(source)
        found = check_text(source, str(agent), ruleset_for(["TP301"], None)).findings
    device = any(SIBLINGS[t] for t in siblings) or (nested is not None and SIBLINGS[nested])
    quiet = SAVES[save] and not device
    assert bool(found) != quiet, (marker, siblings, nested, source)
