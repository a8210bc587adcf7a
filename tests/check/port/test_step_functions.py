"""A whole batch handed to a function of the file is moved as that function uses it.

``for batch in loader: train_step(model, batch)`` where ``train_step`` unpacks or
indexes its parameter: the batch is a list (a ``TensorDataset`` loader's), so the
loop must not call ``batch.to(device)``; the function moves what it takes out.
The oracle is ``test_port_fuzz.check_port``: the port runs on the CPU as the
original did, and with ``meta`` standing in for the accelerator every forward
sees its inputs on it (or the port left findings).
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check.port import port_text

HERE = Path(__file__).parent


fuzz = load("port_fuzz_oracle_steps", HERE / "test_port_fuzz.py")

HEAD = (
    "import torch\n"
    "from torch.utils.data import DataLoader, TensorDataset\n"
    "torch.manual_seed(0)\n"
    "model = torch.nn.Linear(4, 2)\n"
    "loader = DataLoader(TensorDataset(torch.arange(16.0).view(4, 4), torch.arange(4)),"
    " batch_size=2)\n"
)
# How a step function takes its batch apart: unpacked, indexed, unpacked from its items.
BODIES = (
    "    xb, yb = {p}\n    return (net(xb).argmax(1) == yb).tolist()\n",
    "    return (net({p}[0]).argmax(1) == {p}[1]).tolist()\n",
    "    xb, yb = {p}[0], {p}[1]\n    return net(xb).detach() - yb[:, None]\n",
)
CALLS = ("step(model, {b})", "step(net=model, {p}={b})", "step(model, {p}={b})")


@settings(max_examples=15, deadline=None)
@given(
    body=st.sampled_from(BODIES),
    call=st.sampled_from(CALLS),
    param=st.sampled_from(["batch", "data"]),
    in_function=st.booleans(),
    through=st.booleans(),
)
def test_a_batch_a_step_function_takes_apart_is_not_moved_whole(
    body: str, call: str, param: str, in_function: bool, through: bool
) -> None:
    step = f"def step(net, {param}):\n" + body.format(p=param)
    if through:  # handed on by another function of the file, whole
        step += f"def outer(net, {param}):\n    return step(net, {param})\n"
        call = call.replace("step(", "outer(")
    loop = "for b in loader:\n    OUT.append(" + call.format(b="b", p=param) + ")\n"
    if in_function:
        loop = "def main():\n" + "".join("    " + line + "\n" for line in loop.splitlines())
        loop += "main()\n"
    fuzz.check_port(HEAD + step + loop)


# Callees the port cannot see into, or a batch taken apart by `*`: the batch may be a list.
OPAQUE = (
    "class Runner:\n    def step(self, net, batch):\n        xb, yb = batch\n"
    "        return net(xb).detach()\nrunner = Runner()\n",
    "step = lambda net, batch: net(batch[0]).detach()\n",
    "def step(net, xb, yb):\n    return net(xb).detach() - yb[:, None]\n",
    # a function of the file that hands the elements back instead of feeding the model
    "def parts(batch):\n    return batch[0], batch[1]\n"
    "def step(net, batch):\n    xb, yb = parts(batch)\n    return net(xb).detach()\n",
    "def parts(batch):\n    xb, yb = batch\n    return xb, yb\n",
)
OPAQUE_CALLS = (
    "runner.step(model, {b})",
    "step(model, {b})",
    "step(model, *{b})",
    "step(model, {b})",
    "model(parts({b})[0]).detach()",
)


@settings(max_examples=12, deadline=None)
@given(which=st.integers(0, len(OPAQUE) - 1), in_function=st.booleans(), enumerated=st.booleans())
def test_a_batch_handed_where_the_port_cannot_see_is_never_moved_whole(
    which: int, in_function: bool, enumerated: bool
) -> None:
    source = OPAQUE[which]
    target, iterable = ("(i, b)", "enumerate(loader)") if enumerated else ("b", "loader")
    loop = f"for {target} in {iterable}:\n    OUT.append({OPAQUE_CALLS[which].format(b='b')})\n"
    if in_function:
        loop = "def main():\n" + "".join("    " + line + "\n" for line in loop.splitlines())
        loop += "main()\n"
    fuzz.check_port(HEAD + source + loop)


@settings(max_examples=8, deadline=None)
@given(
    loss=st.sampled_from(["torch.nn.functional.cross_entropy", "torch.nn.CrossEntropyLoss()"]),
    comprehension=st.booleans(),
)
def test_batches_a_step_function_gives_to_a_loss_held_by_a_name_are_moved(
    loss: str, comprehension: bool
) -> None:
    """``loss_batch(model, loss_func, xb, yb)`` (the nn tutorial's shape): all moved, none left."""
    step = (
        f"loss_func = {loss}\n"
        "def loss_batch(net, loss_func, xb, yb):\n"
        "    return loss_func(net(xb), yb).item()\n"
    )
    loop = (
        "OUT.append([loss_batch(model, loss_func, xb, yb) for xb, yb in loader])\n"
        if comprehension
        else "for xb, yb in loader:\n    OUT.append(loss_batch(model, loss_func, xb, yb))\n"
    )
    source = HEAD + step + loop
    fuzz.check_port(source)
    assert [str(f) for f in port_text(source).remaining] == []


@settings(max_examples=8, deadline=None)
@given(
    body=st.sampled_from(BODIES),
    comprehension=st.booleans(),
    generator=st.booleans(),
)
def test_whole_batches_a_step_function_takes_apart_leave_nothing_to_report(
    body: str, comprehension: bool, generator: bool
) -> None:
    """The batch handed whole to a step that unpacks or indexes it: moved there, none left."""
    step = "def step(net, batch):\n" + body.format(p="batch")
    if comprehension:
        items = "step(model, b) for b in loader"
        loop = f"OUT.append({'list(' + items + ')' if generator else '[' + items + ']'})\n"
    else:
        loop = "for b in loader:\n    OUT.append(step(model, b))\n"
    source = HEAD + step + loop
    fuzz.check_port(source)
    assert [str(f) for f in port_text(source).remaining] == []
