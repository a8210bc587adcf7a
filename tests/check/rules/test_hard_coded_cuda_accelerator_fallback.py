"""Sample Q: ``"cuda"`` as the old-torch fallback of a choice that asks ``torch.accelerator``.

peft's examples write ``device = torch.accelerator.current_accelerator().type if
hasattr(torch, "accelerator") else "cuda"``: on a torch with ``torch.accelerator`` (2.6+)
the program already runs on whatever accelerator is there; CUDA is only the answer of a
torch too old to ask (judged noise, 5 rows). A conditional whose other arm is not
``torch.accelerator``'s, or whose test is not about torch having it (its version or the
attribute), is still a hard-coded CUDA choice. Generated statements draw the other arm,
the test, which arm is CUDA and where the choice goes; the oracle is the tables below.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# The other arm, and whether it asks torch.accelerator for the device.
OTHERS = {
    "torch.accelerator.current_accelerator().type": True,
    "torch.accelerator.current_accelerator()": True,
    "str(torch.accelerator.current_accelerator())": True,
    '"cpu"': False,
    'torch.device("mps")': False,
    "get_device()": False,
}
# The test, and whether it asks whether this torch has torch.accelerator.
TESTS = {
    'hasattr(torch, "accelerator")': True,
    'version.parse(torch.__version__) >= version.parse("2.6")': True,
    "TORCH_VERSION >= (2, 6)": True,
    "args.fast": False,
    "use_gpu_kernels": False,
}
PLACES = {
    "setting": "device = {choice}\n",
    "attribute": "class T:\n    def __enter__(self):\n        self.device_type = {choice}\n",
    "keyword": "x = torch.ones(2, device={choice})\n",
    "torch.device": "d = torch.device({choice})\n",
}


@given(
    other=st.sampled_from(sorted(OTHERS)),
    test=st.sampled_from(sorted(TESTS)),
    cuda_first=st.booleans(),
    place=st.sampled_from(sorted(PLACES)),
)
@example(
    other="torch.accelerator.current_accelerator().type",
    test='hasattr(torch, "accelerator")',
    cuda_first=False,
    place="setting",
)
@example(other='"cpu"', test='hasattr(torch, "accelerator")', cuda_first=False, place="setting")
@example(
    other="torch.accelerator.current_accelerator().type",
    test="args.fast",
    cuda_first=False,
    place="attribute",
)
def test_cuda_as_the_fallback_of_torch_accelerator_is_left_alone(
    other: str, test: str, cuda_first: bool, place: str
) -> None:
    arms = ('"cuda"', other) if cuda_first else (other, '"cuda"')
    test_text = f"not ({test})" if cuda_first else test  # CUDA's arm: the old torch's
    choice = f"{arms[0]} if {test_text} else {arms[1]}"
    source = "import torch\nfrom packaging import version\n" + PLACES[place].format(choice=choice)
    found = check_text(source, "examples/train.py", ruleset_for(["TP101"], None)).findings
    fallback = OTHERS[other] and TESTS[test]
    assert bool(found) != fallback, (source, found)
