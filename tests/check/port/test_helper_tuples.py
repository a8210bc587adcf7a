"""A helper of the file returning a tuple of CPU tensors, unpacked at the call.

``paintings, labels = artist_works()`` (MorvanZhou's 406_conditional_GAN.py) with
``return paintings, labels`` of two ``torch.from_numpy`` tensors: the port reported the
tensors where they met the model and moved nothing, as if the call were out of sight. A
helper returning one CPU tensor has its call moved; now the names a call's tuple is
unpacked into are moved right after it, those of tensor positions only (a number stays a
number). A name beside a starred one takes its position counted from its end of the tuple
(Python's rule, not a guess: ``first, *rest = make()``); the starred name itself, and
every name of a target whose length is not the tuple's, is reported (where it meets
the model), never guessed.

Programs are generated: a helper returning two or three of a CPU tensor, a tensor made
from numpy, a number and a forward's output, unpacked into names (or with a starred name),
at the module level or in a function, each name meeting the model's output. Oracles, apart
from the port: the ported program on the simulated accelerator stops only where a name
meets the model, and there exactly when the port left a finding on that line or on the
unpacking; and on the CPU the port prints what the original does.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import same_on_the_cpu, stops_exactly_where_reported

torch = pytest.importorskip("torch")

from torchport.check.port import port_text  # noqa: E402

_VALUES = {
    "cpu tensor": "torch.ones(4, 1)",
    "from numpy": "torch.from_numpy(np.ones((4, 1), dtype=np.float32))",
    "number": "2.0",
    "forward": "G(torch.ones(4, 3)).detach()",
}


def _program(values: list[str], starred: bool, in_function: bool) -> str:
    names = [f"v{i}" for i in range(len(values))]
    made = "".join(f"    {n} = {_VALUES[v]}\n" for n, v in zip(names, values, strict=True))
    target = f"{names[0]}, *rest" if starred else ", ".join(names)
    used = names[:1] if starred else names
    pad = "    " if in_function else ""
    body = f"{pad}{target} = make()  # unpack\n" + "".join(
        f"{pad}OUT.append((G(torch.ones(4, 3)) * {n}).detach())  # use\n" for n in used
    )
    if in_function:
        body = "def main():\n" + body + "\n\nmain()\n"
    return (
        "import numpy as np\nimport torch\nimport torch.nn as nn\n\nOUT = []\n"
        "G = nn.Linear(3, 1)\n\n\ndef make():\n"
        + made
        + f"    return {', '.join(names)}\n\n\n"
        + body
    )


def _marked(source: str) -> set[int]:
    return {
        i for i, line in enumerate(source.splitlines(), 1) if "# use" in line or "# unpack" in line
    }


_CASES = st.tuples(
    st.lists(st.sampled_from(sorted(_VALUES)), min_size=2, max_size=3), st.booleans(),
    st.booleans(),
)  # fmt: skip


@pytest.mark.slow  # among the default run's slowest (15-29 s on 2 cores): the slow leg runs it
@example(
    cases=[
        (["from numpy", "from numpy"], False, False),  # 406_conditional_GAN.py's shape
        (["cpu tensor", "number", "forward"], False, True),  # mixed: the tensors only
        (["cpu tensor", "cpu tensor"], True, False),  # beside a starred name: by position
    ]
)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASES, min_size=1, max_size=8))
def test_a_helpers_tuple_of_cpu_tensors_is_moved_where_it_is_unpacked(
    cases: list[tuple[list[str], bool, bool]],
) -> None:
    programs = [_program(*case) for case in cases]
    stops_exactly_where_reported(cases, programs, lambda source, case: _marked(source))
    same_on_the_cpu(programs)


def test_the_tensor_positions_only_are_moved() -> None:
    """The GAN's shape leaves nothing; of a mixed tuple the number is not moved."""
    gan = port_text(_program(["from numpy", "from numpy"], False, False), "p.py")
    assert not gan.remaining, gan.remaining
    mixed = port_text(_program(["cpu tensor", "number"], False, False), "p.py")
    assert "v0, v1 = make()  # unpack\nv0 = v0.to(device)\n" in mixed.source, mixed.source


def test_a_starred_name_is_reported() -> None:
    """``first, *rest = make()`` with ``rest`` meeting the model: a list, not sure."""
    source = _program(["cpu tensor", "cpu tensor", "cpu tensor"], True, False)
    source += "OUT.append((G(torch.ones(4, 3)) * rest[0]).detach())  # use\n"
    outcome = port_text(source, "p.py")
    assert "v0 = v0.to(device)" in outcome.source, outcome.source
    lines = outcome.source.splitlines()
    where = {i for i, line in enumerate(lines, 1) if "# unpack" in line or "rest[0]" in line}
    assert any(f.line in where for f in outcome.remaining), outcome.remaining


def test_a_target_of_another_length_is_reported_not_moved() -> None:
    """``a, b = make()`` of a three-tuple raises on the CPU too; the port guesses nothing."""
    source = _program(["cpu tensor", "cpu tensor", "cpu tensor"], False, False).replace(
        "v0, v1, v2 = make()", "v0, v1 = make()"
    )
    outcome = port_text(source, "p.py")
    assert "v0 = v0.to(" not in outcome.source and "v0, v1 = v0.to(" not in outcome.source
    lines = outcome.source.splitlines()
    where = {i for i, line in enumerate(lines, 1) if "# unpack" in line or "# use" in line}
    assert any(f.line in where for f in outcome.remaining), outcome.remaining
