"""TP121's second arm: the CPU as the default of a parameter its function places work on.

Held-out recall round 5f (weigertlab/trackastra: ``def __init__(self, transformer,
train_args, device="cpu"): self.transformer = transformer.to(device)`` and the two class
methods that hand their own ``device: str = "cpu"`` on to it). The oracle is written apart
from the rule, from the shape drawn: a default pins the function's work to the CPU when it is
the CPU (``"cpu"``, ``torch.device("cpu")``), the parameter's name does not itself say CPU
(``cpu_device``: the CPU on purpose), and the body places something on that parameter
(``.to(p)``, ``.to(device=p)``, ``device=p`` of any call, also through ``d =
torch.device(p)``); not a body that only prints it, makes a device of it, loads onto it
(``map_location=p``) or places on another name, nor a nested function's own parameter of
the same name. Test code and a file with a device flag are the CPU chosen on purpose.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths

# (the parameter's name, whether the name itself says CPU)
NAMES = (("device", False), ("dev", False), ("target", False), ("cpu_device", True))
# (the default, whether it is the CPU)
DEFAULTS = (
    ('"cpu"', True),
    ("torch.device('cpu')", True),
    ('"cuda"', False),
    ("None", False),
    ('"mps"', False),
)
# (how the parameter is declared, given its name and default)
DECLARED = ("{p}={d}", "{p}: str = {d}", "*, {p}={d}", "{p}={d}, extra=1")
# (the body's use of the parameter `{p}`, whether that places work on it)
USES = (
    ("model = model.to({p})", True),
    ("x = x.to(device={p})", True),
    ("x = torch.zeros(3, device={p})", True),
    ("d = torch.device({p})\n{i}model.to(d)", True),
    ("return Runner(model, device={p})", True),  # handed on to a placing callee
    ("state = torch.load(path, map_location={p})", False),
    ("d = torch.device({p})", False),
    ("print({p})", False),
    ("model = model.to(other)", False),
    ("def inner({p}):\n{i}    return x.to({p})", False),  # the nested function's own
)
# (where the function is defined: a template with {sig} and {body} and the body's indent)
WHERE = (
    ("def run(model, {sig}):\n    {body}\n", "    "),
    ("async def run(model, {sig}):\n    {body}\n", "    "),
    ("class Tracker:\n    def __init__(self, model, {sig}):\n        {body}\n", "        "),
    (
        "class Tracker:\n    @classmethod\n    def load(cls, model, {sig}):\n        {body}\n",
        "        ",
    ),
    ("def outer():\n    def run(model, {sig}):\n        {body}\n    return run\n", "        "),
)
# (the file: its name, a line before the function, whether that makes the CPU a choice)
FILES = (
    ("run.py", "", False),
    ("tests/test_run.py", "", True),  # test code: the suite's device
    (
        "run.py",
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--device')\n",
        True,
    ),
)


def _reported(file: str, source: str) -> bool:
    with tempfile.TemporaryDirectory() as name:
        path = Path(name) / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        result = check_paths([path], select=["TP121"], jobs=1)
    return any(f.code == "TP121" for f in result.findings)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(NAMES),
    st.sampled_from(DEFAULTS),
    st.sampled_from(DECLARED),
    st.sampled_from(USES),
    st.sampled_from(WHERE),
    st.sampled_from(FILES),
)
def test_a_cpu_default_is_reported_when_the_body_places_on_it(
    name: tuple[str, bool],
    default: tuple[str, bool],
    declared: str,
    use: tuple[str, bool],
    where: tuple[str, str],
    file: tuple[str, str, bool],
) -> None:
    template, indent = where
    sig = declared.format(p=name[0], d=default[0])
    body = use[0].format(p=name[0], i=indent)
    source = "import torch\n" + file[1] + "\n\n" + template.format(sig=sig, body=body)
    expected = default[1] and not name[1] and use[1] and not file[2]
    assert _reported(file[0], source) == expected, source


def test_the_finding_is_the_default_and_names_the_function(tmp_path: Path) -> None:
    (tmp_path / "api.py").write_text(
        "import torch\n\n\nclass Tracker:\n    @classmethod\n"
        "    def from_folder(cls, folder, device: str = 'cpu'):\n"
        "        return cls(load(folder), device=device)\n"
    )
    (found,) = check_paths([tmp_path / "api.py"], select=["TP121"], jobs=1).findings
    assert (found.line, found.fix) == (6, None)
    assert "`from_folder`" in found.message and "`device`" in found.message
    assert check_paths([tmp_path / "api.py"], jobs=1).findings == []  # off by default
