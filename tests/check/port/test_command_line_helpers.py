"""A namespace a function of the file hands over is argparse's too (issue 31, noise down).

timm's ``train.py``/``validate.py`` parse their options in ``_parse_args()``, which returns
``args, args_text``; every ``args.world_size``, ``args.clip_grad``, ``args.batch_size`` read
after ``args, args_text = _parse_args()`` was reported as "made by `args.X`, which the port
cannot follow" (TP523; 43 of timm's port findings), though ``args = parser.parse_args()`` in
the same place was known to hold numbers, strings and bools.

Programs are drawn: how the helper returns the namespace (itself, a name bound to it, in a
tuple at either position, from two ``return`` statements), where the caller unpacks it, and
what is declared. The oracle is the run (``test_port_noise.placed``): on the CPU the ported
program gives the original's values, on the accelerator (meta) every forward has its
parameters and inputs there; a setting reported then fails. The other side: a helper whose
tuple holds a tensor at that position (moved where the call unpacks it), whose second
``return`` gives something else, or a generator, is never taken for argparse's: the value
is placed, or reported where it meets the model or is unpacked.

A namespace handed to a function of the file (timm's ``validate(args)``, from ``main``
and through ``_try_run(args)``) is drawn the same way: how deep, positional or by name,
and the other side, a function one call of which hands it a tensor there instead.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check.port import port_text

HERE = Path(__file__).parent
noise = load("port_noise_checks", HERE / "test_port_noise.py")

PARSER = (
    "import argparse\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument('--scale', type=float, default=2.0)\n"
    "parser.add_argument('--tag', default='run')\n"
)
# how the helper hands the namespace over -> (its body, how the caller takes it)
HELPERS = {
    "itself": ("    return parser.parse_args([])\n", "args = parse()"),
    "a local": ("    args = parser.parse_args([])\n    return args\n", "args = parse()"),
    "first of two": (
        "    args = parser.parse_args([])\n    return args, str(args)\n",
        "args, text = parse()",
    ),
    "second of two": (
        "    args = parser.parse_known_args([])[0]\n    return len(args.tag), args\n",
        "n, args = parse()",
    ),
    "two returns": (
        "    if FLAG:\n        return parser.parse_args([]), 1\n"
        "    ns = parser.parse_args([])\n    return ns, 2\n",
        "args, n = parse()",
    ),
}


@given(st.sampled_from(sorted(HELPERS)), noise.WHERE, st.booleans())
def test_a_namespace_a_helper_returns_is_argparses(helper: str, where: str, flag: bool) -> None:
    body, take = HELPERS[helper]
    use = f"{take}\nOUT.append((model(torch.ones(1, 4)) * args.scale).detach())\n"
    program = f"{PARSER}FLAG = {flag}\n\n\ndef parse():\n{body}\n\n" + noise.wrap(use, where)
    left, clean = noise.placed(noise.MODEL + program)
    assert clean, left
    assert not any("`args." in f for f in left), left


@given(st.sampled_from(["tensor in the tuple", "another return", "a generator"]))
def test_a_helper_that_may_return_a_tensor_there_is_still_reported(case: str) -> None:
    if case == "tensor in the tuple":
        body = "    args = parser.parse_args([])\n    return torch.full((2,), 2.0), args\n"
    elif case == "another return":
        body = (
            "    if not FLAG:\n        return parser.parse_args([]), 0\n"
            "    return torch.full((2,), 2.0), 1\n"
        )
    else:
        body = "    yield torch.full((2,), 2.0), 0\n"
    take = "args, n = next(parse())" if case == "a generator" else "args, n = parse()"
    program = f"{PARSER}FLAG = True\n\n\ndef parse():\n{body}\n\n{take}\n"
    program += "OUT.append((model(torch.ones(1, 4)) * args).detach())\n"
    source = noise.MODEL + program
    left, clean = noise.placed(source)
    ported = port_text(source).source.splitlines()
    last = next(i for i, line in enumerate(ported, 1) if "* args)" in line)  # meets the model
    # moved (the helper's tuple of a CPU tensor) and clean, or reported by name or where it meets
    assert clean or any(f.startswith(f"<string>:{last}:") or "`args`" in f for f in left), left
    assert clean or case != "tensor in the tuple", left


# how the namespace reaches the function that reads it: (the functions, how the program calls)
HANDED = {
    "one call": ("def run(args):\n{use}", "run(parser.parse_args([]))"),
    "a name": ("def run(args):\n{use}", "ns = parser.parse_args([])\nrun(ns)"),
    "by name": ("def run(k, args):\n{use}", "ns = parser.parse_args([])\nrun(args=ns, k=1)"),
    "two deep": (
        "def run(args):\n{use}\n\ndef retry(args, n):\n    for _ in range(n):\n        run(args)\n",
        "ns = parser.parse_args([])\nretry(ns, 2)\nrun(ns)",
    ),
    "a method": (
        "class Job:\n    def run(self, args):\n{use}\n    def go(self, k):\n"
        "        self.run(parser.parse_args([]))\n",
        "Job().go(1)",
    ),
}
USE = "OUT.append((model(torch.ones(1, 4)) * args.scale).detach())\n"


def _handed_program(case: str, flag: bool) -> str:
    functions, call = HANDED[case]
    depth = 8 if case == "a method" else 4
    use = "".join(" " * depth + line + "\n" for line in USE.splitlines())
    return f"{PARSER}FLAG = {flag}\n\n\n{functions.format(use=use)}\n\n{call}\n"


@given(st.sampled_from(sorted(HANDED)), st.booleans())
def test_a_namespace_handed_to_a_function_is_argparses(case: str, flag: bool) -> None:
    left, clean = noise.placed(noise.MODEL + _handed_program(case, flag))
    assert clean, left
    assert not any("`args." in f for f in left), left


@given(st.sampled_from(sorted(HANDED)))
def test_a_function_one_call_hands_a_tensor_is_still_reported(case: str) -> None:
    """One more call hands an object holding a CPU tensor where the namespace went."""
    holder = "class Holder:\n    scale = torch.full((2,), 2.0)\n\n\n"
    extra = {
        "one call": "run(Holder())",
        "a name": "run(Holder())",
        "by name": "run(1, Holder())",
        "two deep": "retry(Holder(), 1)",
        "a method": "Job().run(Holder())",
    }[case]
    program = _handed_program(case, True)
    source = noise.MODEL + holder + program + extra + "\n"
    left, clean = noise.placed(source)
    assert not clean  # the tensor stays on the CPU beside the model's output
    assert any("args" in f or "Holder()" in f for f in left), left
