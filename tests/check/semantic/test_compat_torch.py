"""torch bound through a project's compatibility module is torch: every rule still sees it.

``from ..compat import torch`` used to hide every rule (the name resolved to no
import of torch). Oracle: the same body under ``import torch`` and under the
compatibility import, as the same local name, gives the same findings on the
same lines; ``from . import torch`` (the package's own submodule) does not count.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

_BODIES = (
    "x = torch.ones(2).cuda()\n",
    "torch.cuda.synchronize()\n",
    "torch.cuda.manual_seed(0)\n",
    "s = torch.cuda.amp.GradScaler()\n",
    "ok = isinstance(s, torch.cuda.amp.GradScaler)\n",
    "def f(x):\n    return x.to(torch.device('cuda'))\n",
)
_FROM = ("..compat", ".utils.compat", "mylib.compat", "compat")


@given(st.sampled_from(_FROM), st.sampled_from(["torch", "th"]), st.sampled_from(_BODIES))
def test_a_compat_torch_is_torch(module: str, local: str, body: str) -> None:
    text = body.replace("torch.", f"{local}.")
    alias = "" if local == "torch" else f" as {local}"
    plain = check_source(f"import torch{alias}\n{text}", select=["ALL"])
    compat = check_source(f"from {module} import torch{alias}\n{text}", select=["ALL"])
    assert plain
    assert [(f.code, f.line) for f in compat] == [(f.code, f.line) for f in plain]


def test_a_submodule_named_torch_is_not_torch() -> None:
    assert check_source("from . import torch\ntorch.cuda.synchronize()\n", select=["ALL"]) == []
