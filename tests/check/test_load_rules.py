"""The loading-security rules (TP302, TP304-TP309): aliases, and the torch facts they rest on."""

from __future__ import annotations

import inspect
import os
import pickle
from pathlib import Path

import pytest

from torchport.check import check_source

SECURITY = ["TP302", "TP304", "TP305", "TP306", "TP307", "TP308", "TP309"]


def codes(source: str) -> list[str]:
    return [f.code for f in check_source(source, select=SECURITY)]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch as th, pickle\nx = th.load(p, pickle_module=pickle)\n", ["TP304"]),
        ("from torch import load as tl\nx = tl(p, 'cpu', pickle)\n", ["TP304"]),
        ("from torch.serialization import load\nx = load(p, weights_only=False)\n", ["TP302"]),
        ("import torch\nx = torch.load(p, weights_only=0)\n", ["TP302"]),
        ("import torch\nx = torch.load(p, *rest)\n", ["TP305"]),
        ("import torch\nx = torch.load(p, weights_only=True, **kw)\n", []),
        ("import torch\nx = torch.load(p, pickle_module=None)\n", []),
        ("import torch\nx = torch.load(p, weights_only=None)\n", []),  # None: the safe default
        ("import os\nos.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = 'YES'\n", ["TP306"]),
        ("import os\nos.environ['TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD'] = '0'\n", []),
        (
            "import os as o\no.environ.setdefault('TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD', v)\n",
            ["TP306"],
        ),
        ("import torch.hub\nsd = torch.hub.load_state_dict_from_url(u, None, 'cpu')\n", ["TP307"]),
        ("import torch\nencoder = torch.load(p).eval()\n", ["TP308"]),
        ("import torch\nmodel = torch.load(p)\nmodel.eval()\n", ["TP308"]),
        ("import torch\nckpt = torch.load(p)\nmodel.load_state_dict(ckpt['model'])\n", []),
        ("import torch\nmodel_sd = torch.load(p)\n", []),
        ("import torch\nfrom torch import nn\nm = nn.Linear(2, 2)\ntorch.save(m, p)\n", ["TP309"]),
        ("import torch\ntorch.save(tensors, p)\n", []),
        ("def load(p, weights_only):\n    pass\nload(p, weights_only=False)\n", []),  # not torch
    ],
)
def test_security_rules_on_more_spellings(source: str, expected: list[str]) -> None:
    assert codes(source) == expected


# ---------------------------------------------------------------- the facts behind the messages

torch = pytest.importorskip("torch")


class _RunsCode:
    """A pickle that calls a function when loaded, as a crafted checkpoint would."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.marker),))  # any callable the unpickler can import


def test_pickle_module_turns_weights_only_off(tmp_path: Path) -> None:
    """TP304: `pickle_module=pickle` alone runs the code in the file."""
    marker, path = tmp_path / "ran", tmp_path / "evil.pt"
    torch.save({"x": _RunsCode(marker)}, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)  # the default refuses it
    assert not marker.exists()
    torch.load(path, pickle_module=pickle)
    assert marker.is_dir()


def test_force_no_weights_only_env_turns_it_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TP306: the variable makes a plain `torch.load` run the code in the file."""
    marker, path = tmp_path / "ran", tmp_path / "evil.pt"
    torch.save({"x": _RunsCode(marker)}, path)
    monkeypatch.setitem(os.environ, "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    with pytest.warns(UserWarning):
        torch.load(path)
    assert marker.is_dir()


def test_hub_loads_still_default_to_weights_only_false() -> None:
    """TP307 rests on this default; if torch changes it, the rule should go."""
    import torch.utils.model_zoo

    for fn in (torch.hub.load_state_dict_from_url, torch.utils.model_zoo.load_url):
        assert inspect.signature(fn).parameters["weights_only"].default is False


def test_whole_model_load_fails_by_default_and_safe_globals_allows_it(tmp_path: Path) -> None:
    """TP308/TP309: a pickled module needs its classes allowed (or the unsafe flag)."""
    path = tmp_path / "model.pt"
    torch.save(torch.nn.Linear(2, 2), path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
    with torch.serialization.safe_globals([torch.nn.Linear]):
        assert isinstance(torch.load(path), torch.nn.Linear)
