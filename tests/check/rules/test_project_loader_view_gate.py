"""TP310 builds a file's project view only where the view can hold the called class.

``may_own`` reads the file alone: a name no module-level class, assignment or import of a
project module binds (a torch class, a library's, a name bound inside a function) has no
owner in the view. Hypothesis draws how the name is bound and where its module lives; the
oracle is the view itself (``owners_of`` of ``project_of``), built apart from the gate.
"""

from __future__ import annotations

import ast
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torchport.check.port._project_view as view
from torchport.check import check_paths
from torchport.check._context import Context
from torchport.check.port._project_owners import may_own, owners_of
from torchport.check.port._project_view import project_of

MODULE = (
    "import torch\n\n\nclass Net(torch.nn.Module):\n    pass\n\n\n"
    "class Model(torch.nn.Module):\n    pass\n\n\nnet = Net()\n"
)
# How use.py binds `Net`: (the lines at module level, whether its module is the project's)
BINDS = {
    "from": "from models import Net\n",
    "from_as": "from models import Model as Net\n",
    "star": "from models import *\n",
    "plain": "import models as Net\n",
    "sub": "from pkg import models as Net\n",
    "in_try": "try:\n    from models import Net\nexcept ImportError:\n    Net = None\n",
    "in_if": "if True:\n    from models import Net\n",
    "class": "class Net:\n    pass\n",
    "instance": "from models import Net as Cls\n\nNet = Cls()\n",
    "in_function": "def f():\n    from models import Net\n    return Net\n",
}
WHERE = ("beside", "package", "nowhere")


def _use(binds: str, where: str, called: str) -> tuple[dict[str, str], str]:
    text = BINDS[binds].replace("models", "lib_models" if where == "nowhere" else "models")
    use = f"{text}\n\nx = {called}.load_from_file('net.pt')\n"
    files = {"models.py": MODULE} if where == "beside" else {}
    if where == "package":
        files = {"models.py": MODULE, "pkg/__init__.py": "", "pkg/models.py": MODULE}
    return {**files, "use.py": use}, use


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    binds=st.sampled_from(sorted(BINDS)),
    where=st.sampled_from(WHERE),
    called=st.sampled_from(("Net", "Other")),
)
def test_a_name_the_gate_rules_out_has_no_owner_in_the_view(
    binds: str, where: str, called: str, tmp_path: Path
) -> None:
    files, use = _use(binds, where, called)
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    path = str(root / "use.py")
    ctx = Context(use, path, ast.parse(use))
    gate = may_own(ctx, called)
    owners = dict(owners_of(ctx, project_of(ctx), frozenset()))
    if not gate:
        assert called not in owners, (files, owners)
    # What the file says alone: no module-level binding of the name, or one only from a
    # module the project does not hold, cannot be an owner.
    local = binds in ("class", "instance") or (binds == "in_try" and called == "Net")
    found = where != "nowhere" and binds not in ("in_function",)
    if called == "Other" and binds != "star":
        assert not gate
    if binds in ("from", "from_as", "star", "class") and where != "nowhere" and called == "Net":
        assert called in owners  # the draw reaches the view's owners (the gate is tried)
    elif called == "Net" and not local and not found:
        assert not gate, files


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (  # a torch class: FSDP.optim_state_dict_to_load (Lightning's fsdp.py)
            "strategy.py",
            "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n\n"
            "def load(osd, model, optim):\n"
            "    return FSDP.optim_state_dict_to_load(model, optim, osd)\n",
        ),
        (  # a test loads its own fixture: never reported, so nothing to ask
            "test_restore.py",
            "from models import Net\n\n\ndef test_it():\n    Net.load_from_file('net.pt')\n",
        ),
    ],
)
def test_no_project_view_is_built_where_no_loader_can_be_found(
    name: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "models.py").write_text(MODULE)
    (tmp_path / name).write_text(text)
    asked: list[str] = []
    built = view.project_imports

    def counted(ctx: Context) -> object:
        asked.append(ctx.path)
        return built(ctx)

    monkeypatch.setattr(view, "project_imports", counted)
    result = check_paths([tmp_path / name], select=["TP310"], jobs=1)
    assert result.findings == []
    assert asked == []
