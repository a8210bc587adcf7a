"""A loader batch rebound to its own element (``batch = batch[0]``) is not moved whole.

tanelp/tiny-diffusion's loop over a ``TensorDataset`` (each batch a one-tensor list)
does ``batch = batch[0]`` and then reads ``batch.shape``. The port took that read, of
the element, for a read of the loop's batch, judged the batch a tensor and wrote
``batch = batch.to(device)`` on the list: the CPU run raised (x31b held-out pass).
The oracle runs the original on the CPU and the port on the simulated accelerator.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import original_on_cpu_port_on_sim
from torchport.check.port import port_text


def program(name: str, read: str, loop: str) -> str:
    head = (
        f"for step, {name} in enumerate(loader):"
        if loop == "enumerate"
        else (f"for {name} in loader:")
    )
    return (
        "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
        "model = torch.nn.Linear(2, 2)\n"
        "loader = DataLoader(TensorDataset(torch.randn(8, 2)), batch_size=4)\n"
        f"{head}\n"
        f"    {name} = {name}[0]\n"
        f"    noise = torch.randn({name}.{read})\n"
        f"    OUT.append(model({name} + noise).detach())\n"
    )


@pytest.mark.slow  # among the default run's slowest: CI's slow leg runs it
@settings(max_examples=6, deadline=None)
@given(
    st.sampled_from(["batch", "data", "b"]),
    st.sampled_from(["shape", "size()"]),
    st.sampled_from(["enumerate", "plain"]),
)
def test_a_batch_rebound_to_its_element_is_not_moved_whole(name: str, read: str, loop: str) -> None:
    source = program(name, read, loop)
    outcome = port_text(source)
    assert f"{name} = {name}.to(" not in outcome.source, outcome.source
    got = original_on_cpu_port_on_sim(source, outcome.source)
    if not outcome.remaining:  # placed: the same values, every output on the accelerator
        assert got["same"] and all(d.startswith("sim") for d in got["devices"]), got
    else:  # or what is left is said, and the CPU run is the original's
        assert got["same"], got
