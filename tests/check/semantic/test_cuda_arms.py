"""A test of CUDA alone guards only the arm where the device IS CUDA (issue 34, round 5f).

``if attr.device != torch.device("cuda"): attr = attr.to(torch.device("cuda"))``
(stable-diffusion's samplers) moves to CUDA exactly where the tensor is not there: on
the CPU, MPS and XPU it crashes, so TP101 reports the move. In the arm where the tensor
is already on CUDA the move is a no-op and nothing is reported.

The oracle does not read the test: it runs the generated function on stand-ins for
``torch`` and the tensor, once per world (where the tensor lives, whether CUDA is there,
the sign of an unrelated ``y``), and records where the tensor was when the move ran.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# Tests that hold exactly where `x` is on CUDA (True) or exactly where it is not (False).
_ON_CUDA = [
    "x.is_cuda",
    'x.device.type == "cuda"',
    'x.device == torch.device("cuda")',
    '"cuda" in str(x.device)',
    'str(x.device).startswith("cuda")',
]
_OFF_CUDA = ['x.device != torch.device("cuda")', 'x.device.type != "cuda"']
_AVAILABLE = "torch.cuda.is_available()"
_OTHER = "y > 0"
_MOVES = ["x = x.cuda()", 'x = x.to(torch.device("cuda"))', 'x = x.to("cuda")']

_atoms = st.sampled_from([*_ON_CUDA, *_OFF_CUDA, _AVAILABLE, _OTHER])
_tests = st.recursive(
    _atoms,
    lambda inner: st.one_of(
        inner.map(lambda t: f"not ({t})"),
        st.tuples(inner, inner, st.sampled_from(["and", "or"])).map(
            lambda abo: f"({abo[0]}) {abo[2]} ({abo[1]})"
        ),
    ),
    max_leaves=3,
)


def _block(lines: list[str], depth: int) -> str:
    return "".join("    " * depth + line + "\n" for line in lines)


@st.composite
def _programs(draw: st.DrawFn) -> tuple[str, bool, bool]:
    """A function with one CUDA move under generated guards; whether a test asks for CUDA's
    availability; whether every test is one comparison or flag, negated or not."""
    move = draw(st.sampled_from(_MOVES))
    shape = draw(st.sampled_from(["body", "else", "nested", "exit", "assert", "ifexp"]))
    first, second = draw(_tests), draw(_tests)
    if shape == "body":
        body = ["if " + first + ":", "    " + move, "else:", "    pass"]
    elif shape == "else":
        body = ["if " + first + ":", "    pass", "else:", "    " + move]
    elif shape == "nested":
        inner_arm = draw(st.booleans())
        inner = ["if " + second + ":", "    " + (move if inner_arm else "pass")]
        inner += ["else:", "    " + ("pass" if inner_arm else move)]
        body = ["if " + first + ":", *("    " + line for line in inner)]
    elif shape == "exit":
        body = ["if " + first + ":", "    return x", move]
    elif shape == "assert":
        body = ["assert " + first, move]
    else:
        call = move.partition(" = ")[2]
        body = [f"x = {call} if {first} else x" if draw(st.booleans()) else
                f"x = x if {first} else {call}"]  # fmt: skip
        second = ""
    source = "import torch\n\n\ndef f(x, y):\n" + _block([*body, "return x"], 1)
    tests = first + " " + second
    return source, _AVAILABLE in tests, " and " not in tests and " or " not in tests


@dataclass
class _Device:
    type: str

    def __str__(self) -> str:
        return self.type


@dataclass
class _Tensor:
    device: _Device
    moves: list[str] = field(default_factory=list)  # where it was at each move

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def cuda(self) -> _Tensor:
        return self.to("cuda")

    def to(self, device: object) -> _Tensor:
        self.moves.append(self.device.type)
        return self


class _Cuda:
    def __init__(self, available: bool) -> None:
        self.available = available

    def is_available(self) -> bool:
        return self.available


class _Torch:
    def __init__(self, available: bool) -> None:
        self.cuda = _Cuda(available)

    @staticmethod
    def device(kind: str) -> _Device:
        return _Device(kind)


def _moves(source: str) -> set[tuple[str, bool]]:
    """(where the tensor was, whether CUDA was there) at each run of the move, over every world."""
    code = compile(source.replace("import torch\n", ""), "<generated>", "exec")
    seen: set[tuple[str, bool]] = set()
    for kind, available, y in itertools.product(["cuda", "cpu", "mps"], [True, False], [1, -1]):
        if kind == "cuda" and not available:
            continue  # no tensor on CUDA without CUDA
        space: dict[str, object] = {"torch": _Torch(available)}
        exec(code, space)  # defines the generated function only: no I/O, no imports
        x = _Tensor(_Device(kind))
        try:
            space["f"](x, y)  # type: ignore[operator]
        except AssertionError:
            continue
        seen.update((where, available) for where in x.moves)
    return seen


@settings(max_examples=400, deadline=None)
@given(_programs())
def test_a_cuda_move_is_reported_where_it_can_run_off_cuda(program: tuple[str, bool, bool]) -> None:
    """Reported where some run moves a tensor that is not on CUDA on a machine without CUDA;
    never where every run finds it on CUDA already (a no-op), as far as one test at a time
    tells: the checker reads each test alone, so a no-op that only the tests together prove
    (``if x.is_cuda or y > 0:`` around ``if y <= 0:``) is still reported. Where the move
    runs off CUDA only with CUDA there, it is a CUDA-or-CPU choice (TP109's): not asked."""
    source, _, literals = program
    at = source.index("x.cuda()" if "x.cuda()" in source else "x.to(")
    line = source.count("\n", 0, at) + 1
    found = check_source(source, select=["TP101"])
    at_move = [f for f in found if f.line == line]
    runs = _moves(source)
    if any(where != "cuda" and not available for where, available in runs):
        assert at_move, source  # crashes on the CPU, MPS, XPU
    elif runs and all(where == "cuda" for where, _ in runs) and literals:
        assert at_move == [], source  # a no-op wherever it runs


def test_the_stable_diffusion_sampler_shape() -> None:
    source = (
        "import torch\n\n\nclass Sampler:\n"
        "    def register_buffer(self, name, attr):\n"
        "        if type(attr) == torch.Tensor:\n"
        '            if attr.device != torch.device("cuda"):\n'
        '                attr = attr.to(torch.device("cuda"))\n'
        "        setattr(self, name, attr)\n"
    )
    assert [
        (f.code, f.line) for f in check_source(source, select=["ALL"]) if f.code == "TP101"
    ] == [("TP101", 8)]
    already = source.replace("!=", "==")
    assert not [f for f in check_source(already, select=["TP101"])]
