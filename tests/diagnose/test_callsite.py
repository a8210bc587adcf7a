"""Which way a predicted copy goes is read from the call site, not from the CPU run's values.

On a CPU run ``x.to(device)`` receives ``"cpu"`` when the program picked its device
with ``"cuda" if torch.cuda.is_available() else "cpu"``: the same value as a literal
``x.to("cpu")``, although on the accelerator the first copies to the device and the
second to the host. The programs here are generated as source text, with the device
spelled as a literal or held in a variable, and run under the audit from a file (so
their source can be read); the expected direction comes from how the generator spelled
the target, never from reading the text back.
"""

from __future__ import annotations

import itertools
import runpy
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torchport as tp
from torchport.diagnose._callsite import DEVICE, HOST, UNKNOWN, target_named_at

_counter = itertools.count()

# (source of the target, True when it names the host on every machine). Every variable
# below holds the CPU at run time, as it does on a CPU run of a program written for GPUs.
LITERAL_HOST = st.sampled_from(
    [
        '"cpu"',
        "'cpu:0'",
        'torch.device("cpu")',
        "torch.device('cpu', 0)",
        'torch.device(type="cpu")',
    ]
).map(lambda text: (text, True))
PROGRAMS_DEVICE = st.sampled_from(
    [
        "device",  # device = "cuda" if torch.cuda.is_available() else "cpu"
        "dev_obj",  # dev_obj = torch.device(...) of the same
        "cfg.device",
        "torch.device(device)",
        "x.device",
        '("cuda" if torch.cuda.is_available() else "cpu")',
        "devices[0]",
    ]
).map(lambda text: (text, False))
TARGETS = st.one_of(LITERAL_HOST, PROGRAMS_DEVICE)

PRELUDE = """\
import types
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
dev_obj = torch.device(device)
cfg = types.SimpleNamespace(device=device)
devices = [device]
x = torch.ones(4)
model = torch.nn.Linear(2, 1)
"""


def _run(tmp: Path, body: str) -> tp.AuditReport:
    """Run the program as a CPU run does, on every machine: there its
    ``torch.cuda.is_available()`` is False and every variable holds the CPU (on a machine
    with a GPU the program would move to it for real, and the audit would count that run)."""
    path = tmp / f"generated_{next(_counter)}.py"
    path.write_text(PRELUDE + "import torchport as tp\nwith tp.audit() as report:\n" + body)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch.cuda, "is_available", lambda: False)
        return runpy.run_path(str(path))["report"]  # type: ignore[no-any-return]


MOVE_FORMS = st.sampled_from(
    [
        "    y = x.to({t})\n",
        "    y = x.to({t}, torch.float64)\n",
        "    y = x.to(device={t}, non_blocking=True)\n",
        "    y = (x\n         .to(\n             {t},\n         ))\n",
        "    y = [t.to({t}) for t in (x, x)][0]\n",
    ]
)


@settings(max_examples=40, deadline=None)
@given(target=TARGETS, form=MOVE_FORMS)
def test_a_tensor_move_goes_where_its_call_site_says(
    tmp_path_factory: pytest.TempPathFactory, target: tuple[str, bool], form: str
) -> None:
    text, host = target
    report = _run(tmp_path_factory.mktemp("moves"), form.replace("{t}", text))
    directions = {e.device for e in report.entries}
    assert directions == {"device→host" if host else "host→device"}


@settings(max_examples=25, deadline=None)
@given(
    target=TARGETS, creator=st.sampled_from(["torch.tensor", "torch.as_tensor", "torch.asarray"])
)
def test_a_tensor_built_on_a_device_copies_only_when_the_device_is_not_the_host(
    tmp_path_factory: pytest.TempPathFactory, target: tuple[str, bool], creator: str
) -> None:
    text, host = target
    report = _run(
        tmp_path_factory.mktemp("built"), f"    y = {creator}([1.0, 2.0], device={text})\n"
    )
    if host:  # built on the host on every machine: nothing is copied
        assert report.entries == []
    else:
        assert [(e.device, e.count, e.bytes) for e in report.entries] == [("host→device", 1, 8)]


@settings(max_examples=25, deadline=None)
@given(first=TARGETS, second=TARGETS)
def test_a_model_moved_back_to_the_host_is_copied_back(
    tmp_path_factory: pytest.TempPathFactory, first: tuple[str, bool], second: tuple[str, bool]
) -> None:
    body = f"    model.to({first[0]})\n    model.to({second[0]})\n"
    report = _run(tmp_path_factory.mktemp("model"), body)
    # Linear(2, 1): weight and bias, copied at each move; a move the same way as the
    # last one finds them there already and copies nothing
    first_line = PRELUDE.count("\n") + 3
    expected = [(first_line, "device→host" if first[1] else "host→device", 2)]
    if second[1] != first[1]:
        expected.append((first_line + 1, "device→host" if second[1] else "host→device", 2))
    assert sorted((e.line, e.device, e.count) for e in report.entries) == expected


def test_a_model_to_the_host_after_training_on_the_device_counts_its_copies_back(
    tmp_path: Path,
) -> None:
    report = _run(tmp_path, "    model.to(device)\n    y = model(x[:2])\n    model.to('cpu')\n")
    assert sorted((e.device, e.count, e.bytes) for e in report.entries) == [
        ("device→host", 2, 12),
        ("host→device", 2, 12),
    ]


def test_unreadable_call_sites_are_unknown_and_literals_are_read() -> None:
    # compiled from a string the linecache does not hold: nothing to read
    frames: list[int] = []

    def probe() -> None:
        import sys

        frames.append(target_named_at(sys._getframe(2)))

    class Probe:
        def to(self, *args: object, **kwargs: object) -> Probe:
            probe()
            return self

    namespace = {"p": Probe(), "device": "cpu"}
    exec(compile("p.to('cpu')", "<not in linecache>", "exec"), namespace)
    assert frames == [UNKNOWN]
    frames.clear()
    p = Probe()
    p.to("cpu")
    p.to(device="cuda:1")
    p.to(*("cpu",))
    p.to(**{"device": "cpu"})
    p.to("cpu" if frames else namespace["device"])  # a choice: the program's device
    p.to(*("cpu",) if frames else "cpu")
    assert frames == [HOST, DEVICE, UNKNOWN, UNKNOWN, DEVICE, UNKNOWN]
