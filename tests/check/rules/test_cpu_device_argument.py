"""TP121: the CPU handed as a device to a project function that places its work there.

Held-out recall round 5e (venomouscyanide/S3GRL: ``train_gnn(device='cpu', args=args)`` in
``baselines/run_helpers/run_mpgnns.py``, ``train_gnn`` in ``baselines/gnn_link_pred.py``
moving its model and data ``.to(device)``). The oracle is written apart from the rule, from
what the callee does with the value: a call pins the callee's work to the CPU when the value
it hands a parameter is the CPU (``"cpu"``, ``torch.device("cpu")``) and the callee's own
body places something on that parameter (``.to(p)``, ``.to(device=p)``, ``device=p``,
also through ``d = torch.device(p)``); a callee that only prints it, makes a device of it,
loads onto it (``map_location=p``: loading on the CPU is often chosen), or places on another
parameter, is not pinned. The callee may be in the file or a sibling module,
imported by name or through its module; a call under a device test is a choice.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# (the callee's use of its parameter `dev`, whether that places work on it)
USES = (
    ("    model = model.to(dev)\n", True),
    ("    x = x.to(device=dev)\n", True),
    ("    x = torch.zeros(3, device=dev)\n", True),
    ("    d = torch.device(dev)\n    model.to(d)\n", True),
    ("    state = torch.load(path, map_location=dev)\n", False),  # loading: often on purpose
    ("    d = torch.device(dev)\n", False),  # a device made, nothing placed
    ("    return torch.device(dev)\n", False),
    ("    print(dev)\n", False),
    ("    model = model.to(other)\n", False),
    ("    def inner(dev):\n        return x.to(dev)\n", False),  # a nested function's own
)
# (how the call hands the value: keyword or the parameter's position)
HANDS = ("{callee}(model, x, dev={value})", "{callee}(model, x, {value})")
# (the value handed, whether it is the CPU)
VALUES = (
    ("'cpu'", True),
    ("torch.device('cpu')", True),
    ("'cuda'", False),
    ("device", False),
)
# (how the caller reaches the callee: its import (None: defined in the file), the callee)
REACHES = (
    (None, "train"),
    ("from helpers import train", "train"),
    ("from helpers import train as fit", "fit"),
    ("import helpers", "helpers.train"),
)
GUARDS = (("", False), ("if args.use_cpu:\n", True))

_CALLEE = "def train(model, x, dev, other=None, path=None):\n{use}    return model\n"


def _project(
    use: str, hand: str, value: str, reach: tuple[str | None, str], guard: str
) -> dict[str, str]:
    callee = _CALLEE.format(use=use)
    line = hand.format(callee=reach[1], value=value) + "\n"
    if guard:
        line = guard + "    " + line
    if reach[0] is None:
        return {"run.py": f"import torch\n\n\n{callee}\n\n{line}"}
    return {
        "helpers.py": f"import torch\n\n\n{callee}",
        "run.py": f"import torch\n{reach[0]}\n\n{line}",
    }


def _reported(files: dict[str, str]) -> bool:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for file, text in files.items():
            (folder / file).write_text(text)
        result = check_paths([folder / "run.py"], select=["TP121"], jobs=1)
    return any(f.code == "TP121" for f in result.findings)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(USES),
    st.sampled_from(HANDS),
    st.sampled_from(VALUES),
    st.sampled_from(REACHES),
    st.sampled_from(GUARDS),
)
def test_a_call_is_reported_when_it_pins_a_placing_callee_to_the_cpu(
    use: tuple[str, bool],
    hand: str,
    value: tuple[str, bool],
    reach: tuple[str | None, str],
    guard: tuple[str, bool],
) -> None:
    files = _project(use[0], hand, value[0], reach, guard[0])
    assert _reported(files) == (use[1] and value[1] and not guard[1]), files


def test_a_device_flag_in_the_file_makes_the_cpu_a_choice(tmp_path: Path) -> None:
    source = (
        "import argparse\nimport torch\n\n\ndef train(dev):\n    return net.to(dev)\n\n\n"
        "p = argparse.ArgumentParser()\n{flag}train(dev='cpu')\n"
    )
    (tmp_path / "run.py").write_text(source.format(flag=""))
    assert len(check_paths([tmp_path / "run.py"], select=["TP121"], jobs=1).findings) == 1
    (tmp_path / "run.py").write_text(source.format(flag="p.add_argument('--device')\n"))
    assert check_paths([tmp_path / "run.py"], select=["TP121"], jobs=1).findings == []


def test_it_is_off_by_default_and_has_no_fix(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text(
        "import torch\n\n\ndef train(dev):\n    return net.to(dev)\n\n\ntrain(dev='cpu')\n"
    )
    assert check_paths([tmp_path / "run.py"], jobs=1).findings == []
    (found,) = check_paths([tmp_path / "run.py"], select=["TP121"], jobs=1).findings
    assert found.fix is None and "`train`" in found.message and found.line == 8


def test_a_method_of_the_same_class_is_read_as_its_own() -> None:
    """``self.fit(net, device="cpu")`` in a method, ``fit`` a method of the class (f34g)."""
    from torchport.check import check_source

    head = "import torch\n\n\nclass Runner:\n    def fit(self, net, device):\n"
    tail = "\n    def run(self, net):\n        return self.fit(net, 'cpu')\n"
    placing = head + "        return net.to(device)\n" + tail
    (found,) = check_source(placing, select=["TP121"])
    assert found.line == 9 and "`self.fit`" in found.message
    printing = head + "        print(device)\n" + tail
    assert check_source(printing, select=["TP121"]) == []
    subclass = "\nclass Sub(Runner):\n    def run(self, net):"
    inherited = placing.replace("    def run(self, net):", subclass)
    assert check_source(inherited, select=["TP121"]) == []
