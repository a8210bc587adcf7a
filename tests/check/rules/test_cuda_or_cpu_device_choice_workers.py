"""TP109 leaves a CUDA-or-CPU choice whose device places what the module shares with workers.

``torch.multiprocessing`` shares CPU and CUDA tensors only (sample W's class W1, issue 34:
Popular-RL-Algorithms' ``td3_multiprocess.py`` and ``ppo_continuous_multiprocess2.py``, judged
low (f)), so there the choice picks between all the devices the program can use. Generated
modules draw how the choice is bound (a plain name, another name, inline), how a value is
placed (assigned from ``.to(device)``, a model or an attribute moved in place, placed on
another device), and how the module hands values to workers (``share_memory()``,
``share_memory_()``, ``Process(args=...)`` of either multiprocessing, ``mp.spawn``, or only
``mp.cpu_count()``, a queue's ``put``, a share of something else). The oracle: the tables
below, marked by hand, and the rule written out in :func:`_left`.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

CHOICE = '"cuda" if torch.cuda.is_available() else "cpu"'
# How the choice is bound, and the name it binds (None: not bound to a plain name).
BINDINGS = {
    f"device = torch.device({CHOICE})": "device",
    f"device = {CHOICE}": "device",
    f"dev = torch.device({CHOICE})": "dev",
    f"print(torch.device({CHOICE}))": None,
}
# How a value reaches a device name: (lines with {dev}, the last name placed).
PLACEMENTS = {
    "model = Net().to({dev})": "model",
    "model = Net()\nmodel.to({dev})": "model",
    "ppo = PPO()\nppo.actor = Policy().to(device={dev})": "actor",
    "buffer = torch.zeros(4).to({dev}, non_blocking=True)": "buffer",
}
# How the module hands something to workers: (lines, the last name handed, or None).
SHARES = {
    "{name}.share_memory()": True,
    "{name}.share_memory_()": True,
    "p = mp.Process(target=work, args=(0, {name}, queue))": True,
    "p = Process(target=work, args=[{name}])": True,
    "mp.spawn(work, args=({name},), nprocs=2)": True,
    "workers = mp.cpu_count()\nloader = DataLoader(data, num_workers=workers)": False,
    "queue.put({name})": False,  # not a sign this rule reads
    "other.share_memory()": False,
    "p = mp.Process(target=work, args=(0, other))": False,
}
SHARED_AS = {"model": "model", "actor": "ppo.actor", "buffer": "buffer"}


def _left(binding: str, placement: str, place_with: str, share: str) -> bool:
    """Whether TP109 leaves the choice: bound to a plain name that places a value which the
    module then shares by the same last name."""
    name = BINDINGS[binding]
    return name is not None and place_with == name and SHARES[share]


@given(
    binding=st.sampled_from(sorted(BINDINGS)),
    placement=st.sampled_from(sorted(PLACEMENTS)),
    place_with=st.sampled_from(["device", "dev", "other_device"]),
    share=st.sampled_from(sorted(SHARES)),
    in_main=st.booleans(),
)
def test_a_choice_whose_models_are_shared_with_workers_is_left(
    binding: str, placement: str, place_with: str, share: str, in_main: bool
) -> None:
    placed = placement.format(dev=place_with).splitlines()
    shared = share.format(name=SHARED_AS[PLACEMENTS[placement]]).splitlines()
    tail = [*placed, *shared]
    if in_main:
        tail = ['if __name__ == "__main__":', *("    " + line for line in tail)]
    source = "\n".join(
        [
            "import torch",
            "import torch.multiprocessing as mp",
            "from multiprocessing import Process",
            "from torch.utils.data import DataLoader",
            "",
            "other_device = torch.device('cpu')",
            binding,
            *tail,
        ]
    )
    found = check_text(source + "\n", "train.py", ruleset_for(["TP109"], None)).findings
    assert bool(found) != _left(binding, placement, place_with, share), source


def test_a_module_that_only_imports_multiprocessing_keeps_its_choice() -> None:
    # pytorch-vqvae's vqvae.py (sample W, judged real): `import multiprocessing as mp` for a
    # default `--num-workers`, the choice places the model that trains in this process
    source = (
        "import multiprocessing as mp\nimport torch\n\n"
        "workers = mp.cpu_count() - 1\n"
        f"device = torch.device({CHOICE})\n"
        "model = Net().to(device)\n"
    )
    found = check_text(source, "vqvae.py", ruleset_for(["TP109"], None)).findings
    assert [f.line for f in found] == [5]
