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
