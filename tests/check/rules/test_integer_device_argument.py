"""TP124: an integer handed as the device of a function or method that places work on it.

Held-out recall round 5h (PowerHouseMan/ComfyUI-AdvancedLivePortrait ``nodes.py``:
``device_id = 0`` in ``LP_Engine.load_models``, handed to ``self.load_model(model_config,
device_id, ...)``, whose body does ``.cuda(device)`` and ``stitcher.to(device)``). The oracle
is written apart from the rule, from what the callee does with the value: a call hands the
callee a CUDA index when the value it hands a parameter is an ``int`` (a literal, a name bound
to one, or a name or attribute that says it is a rank or GPU index) and the callee's own body
moves work to that parameter (``.to(p)``, ``.cuda(p)``, ``device=p``, ``torch.device(p)``
then moved to); a callee that indexes with it, counts with it, prints it or moves elsewhere is
not handed a device. A callee whose parameter is itself named as an index is left alone; one the
class only inherits, or that a test of the device type guards, is left alone.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, check_source

# (the callee's use of its parameter `{p}`, whether that moves work onto it)
USES = (
    ("net = net.to({p})", True),
    ("net = net.cuda({p})", True),
    ("x = torch.zeros(3, device={p})", True),
    ("d = torch.device({p})\n{i}net.to(d)", True),
    ("print({p})", False),
    ("x = items[{p}]", False),
    ("total = sum(range({p}))", False),
    ("net = net.to(other)", False),
    ("def inner({p}):\n{i}    return x.to({p})", False),  # a nested function's own
)
PARAMS = (("device", True), ("dev", True), ("gpu", False))  # `gpu`: named as an index
# (the value handed, whether it is an index, whether the finding is at a binding line)
VALUES = (
    ("0", True, False),
    ("args.gpu", True, False),
    ("local_rank", True, False),
    ("n", True, True),  # `n = 1` bound before the call: reported at the `1`
    ("half", False, False),  # `half = 0.5`
    ("'cuda:0'", False, False),
    ("True", False, False),
    ("device", False, False),
)
HANDS = ("{callee}(net, {value})", "{callee}(net, {p}={value})")
GUARDS = (("", False), ("if device.type == 'cuda':\n", True))
# (where the callee is, how the caller names it, whether the rule can read it)
KINDS = (
    ("function", "load", True),
    ("imported", "load", True),
    ("imported as", "fit", True),
    ("method", "self.load", True),
    ("static", "self.load", True),
    ("inherited", "self.load", False),  # a base's method: another class's body
)
_BIND = "n = 1\nhalf = 0.5\n"


def _program(kind: str, callee: str, use: str, p: str, call: str) -> dict[str, str]:
    body = use.format(p=p, i="    ") if kind in ("function", "imported", "imported as") else ""
    if body:
        func = f"def load(net, {p}, other=None, items=(), x=None):\n    {body}\n    return net\n"
        caller = "def main(net, args, local_rank, device):\n" + _indent(_BIND + call, 1)
        if kind == "function":
            return {"run.py": f"import torch\n\n\n{func}\n\n{caller}"}
        line = "from helpers import load" + (" as fit" if kind == "imported as" else "")
        return {
            "helpers.py": f"import torch\n\n\n{func}",
            "run.py": f"import torch\n{line}\n\n\n{caller}",
        }
    params = f"net, {p}, other=None, items=(), x=None"
    deco, first = ("    @staticmethod\n", "") if kind == "static" else ("", "self, ")
    method = f"{deco}    def load({first}{params}):\n        {use.format(p=p, i='        ')}\n"
    method += "        return net\n"
    run = "    def run(self, net, args, local_rank, device):\n" + _indent(_BIND + call, 2)
    if kind == "inherited":
        classes = f"class Base:\n{method}\n\nclass Engine(Base):\n{run}"
    else:
        classes = f"class Engine:\n{method}\n{run}"
    return {"run.py": f"import torch\n\n\n{classes}"}


def _indent(text: str, levels: int) -> str:
    pad = "    " * levels
    out = []
    for line in text.splitlines():
        out.append(pad + line if line else line)
    return "\n".join(out) + "\n"


def _found(files: dict[str, str]) -> list[int]:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for file, text in files.items():
            (folder / file).write_text(text)
        result = check_paths([folder / "run.py"], select=["TP124"], jobs=1)
    return sorted(f.line for f in result.findings if f.code == "TP124")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(KINDS),
    st.sampled_from(USES),
    st.sampled_from(PARAMS),
    st.sampled_from(VALUES),
    st.sampled_from(HANDS),
    st.sampled_from(GUARDS),
)
def test_an_index_is_reported_where_a_callee_moves_work_to_it(
    kind: tuple[str, str, bool],
    use: tuple[str, bool],
    param: tuple[str, bool],
    value: tuple[str, bool, bool],
    hand: str,
    guard: tuple[str, bool],
) -> None:
    call = hand.format(callee=kind[1], value=value[0], p=param[0])
    call = guard[0] + ("    " if guard[0] else "") + call
    files = _program(kind[0], kind[1], use[0], param[0], call)
    expected = kind[2] and use[1] and param[1] and value[1] and not guard[1]
    found = _found(files)
    assert bool(found) == expected, files
    if found:
        lines = files["run.py"].splitlines()
        written = "n = 1" if value[2] else call.splitlines()[-1].strip()
        assert [lines[i - 1].strip() for i in found] == [written], files


def test_a_literal_handed_on_by_several_calls_is_reported_once_at_the_literal() -> None:
    source = (
        "import torch\n\n\nclass Engine:\n    def load(self, cfg, device, kind):\n"
        "        if kind == 'stitch':\n            return Stitcher(cfg).to(device)\n"
        "        return Net(cfg).cuda(device)\n\n    def load_models(self, cfg):\n"
        "        device_id = 0\n        a = self.load(cfg, device_id, 'a')\n"
        "        b = self.load(cfg, device_id, 'stitch')\n        return a, b\n"
    )
    (found,) = check_source(source, select=["TP124"])
    assert (found.line, found.fix) == (11, None)
    assert "`self.load` places its work on `device`" in found.message
    assert [f.code for f in check_source(source)] == ["TP101"]  # off by default (`.cuda()`: TP101)


def test_every_kind_of_callee_and_index_that_should_be_found_is() -> None:
    """The hypothesis draw above lands on few reportable programs: each one, by name."""
    missed = []
    for kind in KINDS:
        for use in (u for u in USES if u[1]):
            for value in (v for v in VALUES if v[1]):
                call = HANDS[0].format(callee=kind[1], value=value[0], p="device")
                files = _program(kind[0], kind[1], use[0], "device", call)
                if bool(_found(files)) != kind[2]:
                    missed.append(files["run.py"])
    assert missed == []


def test_a_class_method_and_an_instance_method_called_on_the_class() -> None:
    """``self.build(net, 0)`` binds the class: reported; ``cls.load(net, 0)`` of an instance
    method hands ``net`` to ``self``, so its positions say nothing: left alone."""
    source = (
        "import torch\n\n\nclass E:\n    def load(self, net, device):\n"
        "        return net.to(device)\n\n    @classmethod\n    def make(cls, net):\n"
        "        return cls.load(net, 0)\n\n    @classmethod\n    def build(cls, net, device):\n"
        "        return net.to(device)\n\n    def run(self, net):\n"
        "        a = self.build(net, 0)\n        return self.load(net, 1)\n"
    )
    assert [f.line for f in check_source(source, select=["TP124"])] == [17, 18]
