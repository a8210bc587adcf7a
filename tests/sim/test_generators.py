"""Device generators on the simulated accelerator: what cannot be made says why and what to do.

PyTorch builds a device's ``torch.Generator`` through a C++ hook a backend written in
Python cannot fill (``PrivateUse1HooksInterface.getNewGenerator``), so
``torch.Generator(device="sim")`` is refused by PyTorch, and a run redirected to ``sim``
refuses ``torch.Generator(device="cuda")`` naming the workaround. The workaround holds:
random ops on ``sim`` draw from the global generator, with the CPU's values.
"""

from __future__ import annotations

import pytest

from tests.sim.isolated import run_isolated

pytestmark = pytest.mark.needs_simulator


def test_a_device_generator_is_refused_with_the_workaround_that_works() -> None:
    got = run_isolated(
        """
        import torchport as tp
        device = simulate_accelerator()
        out = {}
        try:
            torch.Generator(device=device)
            out["direct"] = None
        except NotImplementedError as error:
            out["direct"] = str(error)
        try:
            with tp.redirect(device):
                torch.Generator(device="cuda")
            out["run"] = None
        except tp.RedirectError as error:
            out["run"] = str(error)
        values = []
        for where in ("cpu", device):
            torch.manual_seed(7)
            values.append([torch.randn(5, device=where).cpu().tolist(),
                           torch.rand(2, 3, device=where).cpu().tolist(),
                           torch.randint(0, 9, (4,), device=where).cpu().tolist()])
        out["same"] = values[0] == values[1]
        print(json.dumps(out))
        """
    )
    assert "getNewGenerator" in got["direct"]
    assert "no generator of its own" in got["run"]
    assert "torch.manual_seed(seed)" in got["run"] and "--device cpu" in got["run"]
    assert "build the generator without a device" not in got["run"]  # refused on sim
    assert got["same"] is True
