"""TP101 asks whether a CUDA site is left alone before it works out the site's fix.

A candidate in code that tests the device's type (or any other reason
``_cuda_choice.left_alone`` gives) is dropped; working out its fix first (the device in
scope, whether the value is torch's) was wasted, and could build the scope pass for
nothing. Held here: on every kind of site TP101 fixes, guarded and not, the findings
are the ones expected, and the fix functions run once per reported finding, never for a
site left alone.
"""

from __future__ import annotations

import pytest

from torchport.check import check_source
from torchport.check.rules import hard_coded_cuda

SITES = (
    "y = x.cuda()",
    'y = x.to("cuda")',
    'd = torch.device("cuda")',
    'y = torch.ones(2, device="cuda")',
    'y = x.to(device="cuda:0")',
)


def _program(site: str, guarded: bool) -> str:
    body = f'    if x.device.type == "cuda":\n        {site}\n' if guarded else f"    {site}\n"
    return f"import torch\n\n\ndef f(x):\n{body}    return x\n"


@pytest.mark.parametrize("site", SITES)
@pytest.mark.parametrize("guarded", [False, True])
def test_a_site_left_alone_has_no_fix_worked_out(
    site: str, guarded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    for name in ("replace_device", "dot_cuda_to_device"):
        real = getattr(hard_coded_cuda, name)

        def counted(*args: object, _real: object = real, _name: str = name, **kw: object) -> object:
            calls.append(_name)
            return _real(*args, **kw)  # type: ignore[operator]

        monkeypatch.setattr(hard_coded_cuda, name, counted)
    findings = [
        f
        for f in check_source(_program(site, guarded), extend_select=["TP101"])
        if f.code == "TP101"
    ]
    assert len(findings) == (0 if guarded else 1), findings
    assert len(calls) == len(findings), calls  # one fix worked out per finding reported
