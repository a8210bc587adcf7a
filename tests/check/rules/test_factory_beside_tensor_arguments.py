"""TP117: a tensor made on the CPU in a function meets the function's tensor arguments.

Round 5d (ludwig-ai/ludwig: ``torch.cat((torch.full((n,), -100), target))`` for each
``target`` of ``targets[name]``, collected into one list and stacked) adds the meetings
inside a sequence given to a torch function, the rows of a loop over an argument, and a
list that collects both.

Recall round 5c (openforcefield/smee: ``hessian + d * torch.eye(len(hessian))``,
``torch.pow(r, torch.tensor([-9, ...]))``, ``sig ** 6 * torch.tensor([...])``): a
library function takes its tensors from the caller, wherever they live, and mixes
them with constants it made on the CPU; on an accelerator the first such operation
fails. The oracle is written from torch's semantics, apart from the rule: a factory
without ``device=`` makes a CPU tensor; a 0-dim one mixes with any device; an
argument is a tensor where its annotation says so; the two meet in arithmetic or in
a torch function's arguments, directly or through a local name; a module's method is
TP504's (its inputs and parameters decide the device there).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (annotation of the argument, whether it names a tensor)
ANNOTATIONS = (
    (": torch.Tensor", True),
    (": torch.Tensor | None", True),
    (": float", False),
    ("", False),
)
# (factory, whether it makes a CPU tensor of one dimension or more)
FACTORIES = (
    ("torch.eye(3)", True),
    ("torch.tensor([1.0, 2.0, 3.0])", True),
    ("torch.arange(3)", True),
    ("torch.ones(3, dtype=torch.float64)", True),
    ("torch.eye(3, device=x.device)", False),
    ("torch.eye(3, out=torch.empty_like(x))", False),  # made into x's device
    ("torch.tensor(2.0)", False),
)
# how the factory's tensor meets x: (lines, whether they meet)
MEETINGS = (
    ("y = x * {f}", True),
    ("y = {f} + x ** 2", True),
    ("c = {f}\n    y = x - c", True),
    ("c = {f}.unsqueeze(0)\n    y = (c * 2) @ x", True),
    ("y = torch.pow(x, {f})", True),
    ("y = x.clone()\n    y += {f}", True),
    ("y = x\n    if n > 0:\n        y = x * {f}", True),
    ("c = {f}\n    y = c * 2", False),
    ("print({f})\n    y = x", False),
    # round 5d (f34): a sequence given to a torch function, the rows of a loop, a list
    ("y = torch.cat(({f}, x))", True),
    ("c = {f}\n    y = torch.stack([x, c], dim=0)", True),
    ("y = torch.cat((x, x))\n    print(torch.stack([{f}]))", False),
    ("y = x\n    for row in x:\n        y = row * {f}", True),
    ("y = x\n    for i, row in enumerate(x):\n        y = torch.cat((row, {f}))", True),
    ("y = x\n    for i in range(n):\n        y = x + i\n        print(i * {f})", False),
    ("out = [{f}]\n    out.append(x)\n    y = out", False),
    ("out = []\n    out.append({f})\n    out.append(x)\n    y = torch.stack(out)", True),
    ("out = []\n    out.append(x)\n    out.append({f})\n    y = torch.stack(out)", True),
    ("out = []\n    out.append({f})\n    y = x\n    print(torch.stack(out))", False),
)
HOLDERS = ("function", "plain class", "module")


def _program(note: str, factory: str, meeting: str, holder: str) -> tuple[str, int]:
    body = "    " + meeting.format(f=factory) + "\n    return y\n"
    head = "import torch\nfrom torch import nn\n\n\n"
    if holder == "function":
        source = head + f"def energy(x{note}, n: int):\n" + body
    else:
        base = "nn.Module" if holder == "module" else "object"
        indented = "".join("    " + line + "\n" for line in body.splitlines())
        source = head + f"class Energy({base}):\n    def forward(self, x{note}, n: int):\n"
        source += indented
    line = next(i for i, text in enumerate(source.splitlines(), 1) if factory in text)
    return source, line


@settings(max_examples=120, deadline=None)
@given(
    note=st.sampled_from(ANNOTATIONS),
    factory=st.sampled_from(FACTORIES),
    meeting=st.sampled_from(MEETINGS),
    holder=st.sampled_from(HOLDERS),
)
def test_a_cpu_factory_meeting_a_tensor_argument_is_reported(
    note: tuple[str, bool],
    factory: tuple[str, bool],
    meeting: tuple[str, bool],
    holder: str,
) -> None:
    source, line = _program(note[0], factory[0], meeting[0], holder)
    expected = note[1] and factory[1] and meeting[1] and holder != "module"
    found = [f for f in check_source(source, select=["TP117"]) if f.line == line]
    assert bool(found) == expected, source
    assert len(check_source(source, select=["TP117"])) == int(expected), source


def test_a_count_zipped_beside_an_argument_s_rows_is_no_row() -> None:
    # round 5c's smee site, lost for a while on branch f34: `zip(...)` gives counts too
    source = (
        "import torch\n\n\ndef offsets(x: torch.Tensor, counts: list[int]):\n"
        "    for row, n in zip(x, counts):\n"
        "        y = x + torch.arange(n) * 2\n"
        "    return y\n"
    )
    assert [f.line for f in check_source(source, select=["TP117"])] == [6]
