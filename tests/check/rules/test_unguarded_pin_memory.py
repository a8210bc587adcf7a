"""TP205: ``Tensor.pin_memory()`` called on every machine (held-out recall round 5g).

nagadomi/nunif ad7d87af ("Fix pin_memory() error on CPU"): ``frame.clone().pin_memory()`` and
``torch.ones((3, h, w), dtype=torch.uint8).pin_memory()`` raised on a machine with no
accelerator; nanoGPT's ``x.pin_memory().to(device, non_blocking=True)`` is the chained form.

Two oracles written apart from the rule. The first is the statement's shape: a call is
reported when nothing around it decides whether to pin (no device or accelerator test, no
pinning flag, not the ``pin_memory`` method of a batch class), and fixed when its receiver
is a new tensor. The second is torch itself: this machine has no accelerator, so the
program as written raises, and the fixed program runs and computes the unpinned values.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source

pytestmark = pytest.mark.skipif(
    torch.accelerator.is_available(), reason="the raise is what a machine without one shows"
)

# (how torch is imported, the name the program then uses for it)
IMPORTS = (("import torch", "torch"), ("import torch as th", "th"), ("import torch as T", "T"))
# (the receiver, with {t} for torch's name; True when it is a new tensor)
RECEIVERS = (
    ("{t}.ones(3, 4, dtype={t}.uint8)", True),
    ("{t}.zeros(3, 4)", True),
    ("{t}.empty(3, 4).fill_(2)", False),  # fill_ returns its receiver: not read as new
    ("{t}.stack([frame, frame])", True),
    ("frame.clone()", True),
    ("frame[:, :2].clone()", True),
    ("frame", False),
    ("batch['x']", False),
    ("holder.buf", False),
)
# (the use of the pinned value, with {p} for the call)
USES = (
    "y = {p}",
    "y = {p}.to(device, non_blocking=True)",
    "y, n = {p}, 1",
    "y = keep({p})",
    "y: object = {p}",
)
# (the test around the statement, or None; True when it decides whether to pin)
GUARDS = (
    (None, False),
    ("{t}.cuda.is_available()", True),
    ("{t}.accelerator.is_available()", True),
    ("device.type == 'cuda'", True),
    ("self_pin_memory", True),
    ("non_blocking", True),
    ("len(frame) > 1", False),
)
PLACES = ("module", "function", "loop")


def _program(imp: str, t: str, receiver: str, use: str, guard: str | None, place: str) -> str:
    stmt = use.format(p=f"{receiver.format(t=t)}.pin_memory()")
    if guard is not None:
        stmt = f"if {guard.format(t=t)}:\n    {stmt}\nelse:\n    y = None"
    head = (
        f"{imp}\n\n"
        f"device = {t}.device('cpu')\n"
        f"frame = {t}.arange(12.0).reshape(3, 4)\n"
        "batch = {'x': frame + 1}\n"
        "holder = type('H', (), {'buf': frame * 2})()\n"
        "self_pin_memory = non_blocking = True\n\n"
        "def keep(v):\n    return v\n\n"
    )
    if place == "module":
        return head + stmt + "\n"
    body = "\n".join(("    " if place == "function" else "        ") + s for s in stmt.split("\n"))
    if place == "function":
        return head + f"def run():\n{body}\n    return y\n\ny = run()\n"
    return head + f"def run():\n    for _ in range(2):\n{body}\n    return y\n\ny = run()\n"


def _tp205(source: str) -> list[int]:
    return [f.line for f in check_source(source, "run.py", select=["TP205"])]


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(IMPORTS),
    st.sampled_from(RECEIVERS),
    st.sampled_from(USES),
    st.sampled_from(GUARDS),
    st.sampled_from(PLACES),
)
def test_an_undecided_pin_is_reported_and_a_new_tensor_is_fixed(
    imp: tuple[str, str],
    receiver: tuple[str, bool],
    use: str,
    guard: tuple[str | None, bool],
    place: str,
) -> None:
    source = _program(imp[0], imp[1], receiver[0], use, guard[0], place)
    decided = guard[1]
    assert bool(_tp205(source)) is not decided, source
    fixed = fix_source(source, select=["TP205"])
    assert (fixed != source) is (not decided and receiver[1]), (source, fixed)
    if decided:
        return
    # torch, apart from the rule: pinning raises here; the fixed program runs, with the values
    with pytest.raises(RuntimeError, match="accelerator"):
        exec(compile(source, "run.py", "exec"), {})
    if receiver[1]:
        space: dict[str, object] = {}
        exec(compile(fixed, "run.py", "exec"), space)
        unpinned = source.replace(".pin_memory()", "")
        expected: dict[str, object] = {}
        exec(compile(unpinned, "run.py", "exec"), expected)
        assert torch.equal(space["y"], expected["y"]), fixed  # type: ignore[arg-type]
        assert not _tp205(fixed), fixed


def test_the_batch_protocol_and_self_are_not_reported() -> None:
    source = (
        "import torch\n\n\nclass Batch:\n"
        "    def pin_memory(self):\n"
        "        self.x = self.x.pin_memory()\n"
        "        return self\n\n"
        "    def pinned(self):\n"
        "        return self.pin_memory()\n"
    )
    assert _tp205(source) == []
    loader = (
        "import torch\n\n\ndef pin_memory_batch(batch):\n"
        "    if torch.is_tensor(batch):\n        return batch.pin_memory()\n"
        "    return {k: pin_memory_batch(v) for k, v in batch.items()}\n\n\n"
        "class Data:\n    @staticmethod\n    def pin_memory(items):\n"
        "        def each():\n            for d in items:\n"
        "                yield {k: d[k].pin_memory() for k in d}\n\n"
        "        return each\n"
    )
    assert _tp205(loader) == []


def test_test_code_is_not_reported() -> None:
    source = (
        "import torch\n\n\ndef test_pinned():\n    assert torch.ones(2).pin_memory().is_pinned()\n"
    )
    assert check_source(source, "tests/test_pin.py", select=["TP205"]) == []
    assert _tp205(source.replace("def test_pinned", "def ones_ok")) == [5]


def test_round_5g_nunif_shapes_are_reported() -> None:
    # iw3/desktop/screenshot_thread_pil.py:56 and screenshot_process.py:197 at 2f53895
    source = (
        "import torch\n\n\ndef run(frame, device, h, w):\n"
        "    frame_buffer = torch.ones((3, h, w), dtype=torch.uint8).pin_memory()\n"
        "    staged = frame.clone().pin_memory()\n"
        "    return frame_buffer.to(device), staged.to(device)\n"
    )
    assert _tp205(source) == [5, 6]
    assert fix_source(source, select=["TP205"]).count("torch.accelerator.is_available()") == 2
