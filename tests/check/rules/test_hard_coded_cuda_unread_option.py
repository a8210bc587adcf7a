"""TP101 leaves an ``--device`` option alone whose value reaches only parameters no code reads.

Held-out sample AB (reinforcement_balance's Perception scripts, judged low (e)):
``p.add_argument("--device", type=str, default="cuda")`` in a private parser builder, the
parsed ``args.device`` passed only to a skeleton, ``def train_teacher(..., device="cuda"):``
whose body is a docstring and ``raise NotImplementedError("train_teacher is a skeleton")``.

The oracle is the tables below, each part marked by hand: whether the parser can be parsed
elsewhere, whether the receiving function reads its ``device``, whether a use of the parsed
namespace lets the value reach other code. The program is drawn from them; TP101 reports the
option's default exactly when some part lets the value reach code, and the receiving
function's own ``device="cuda"`` default exactly when that function reads it.
"""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

_OPTIONS = (
    '{i}p.add_argument("--device", type=str, default="cuda")\n'
    '{i}p.add_argument("--epochs", type=int, default=1)\n'
)
# how the parser is built and parsed: (definitions, main's parsing lines, parsed elsewhere?)
PARSERS = {
    "private builder": (
        "def _parser():\n    p = argparse.ArgumentParser()\n"
        + _OPTIONS.format(i="    ")
        + "    return p\n",
        "    args = _parser().parse_args(argv)\n",
        False,
    ),
    "public builder": (
        "def build_parser():\n    p = argparse.ArgumentParser()\n"
        + _OPTIONS.format(i="    ")
        + "    return p\n",
        "    args = build_parser().parse_args(argv)\n",
        True,
    ),
    "in main": (
        "",
        "    p = argparse.ArgumentParser()\n"
        + _OPTIONS.format(i="    ")
        + "    args = p.parse_args(argv)\n",
        False,
    ),
    "at the module's top": (
        "p = argparse.ArgumentParser()\n" + _OPTIONS.format(i=""),
        "    args = p.parse_args(argv)\n",
        True,
    ),
    "handed to a helper": (
        'def add_common(p):\n    p.add_argument("--seed", type=int, default=0)\n',
        "    p = argparse.ArgumentParser()\n"
        + _OPTIONS.format(i="    ")
        + "    add_common(p)\n    args = p.parse_args(argv)\n",
        True,
    ),
    "parsed twice": (
        "def _parser():\n    p = argparse.ArgumentParser()\n"
        + _OPTIONS.format(i="    ")
        + "    return p\n",
        "    args = _parser().parse_args(argv)\n    keep(_parser().parse_args([]))\n",
        True,
    ),
    "namespace returned": (
        "def _parse(argv):\n    p = argparse.ArgumentParser()\n"
        + _OPTIONS.format(i="    ")
        + "    return p.parse_args(argv)\n",
        "    args = _parse(argv)\n",
        True,
    ),
}
# the function given `args.device`: (its body, reads `device`?)
TARGETS = {
    "skeleton": ('    """Later."""\n    raise NotImplementedError("run is a skeleton")\n', False),
    "skeleton naming it": (
        '    """Later."""\n    raise NotImplementedError(f"run on {device}")\n',
        False,
    ),
    "bare raise": ("    raise NotImplementedError\n", False),
    "never names it": ("    return x\n", False),
    "moves to it": ("    return x.to(device)\n", True),
    "message built by a call": ("    raise NotImplementedError(str(device))\n", True),
    "raise after work": ("    x.to(device)\n    raise NotImplementedError\n", True),
}
DECORATORS = {"": False, "@functools.lru_cache\n": False, "@register\n": True}
# main's uses of the namespace: (line, lets the value reach code?)
USES = {
    "run(x, device=args.device)": False,
    "run(x, args.device)": False,
    "n = args.epochs": False,
    "print(args.device)": True,
    "helper(device=args.device)": True,
    "keep(args)": True,
    "cfg = vars(args)": True,
    "run(*xs, args.device)": True,
    "args.device = 'cpu'": True,
}
_RUN_CALLS = ("run(x, device=args.device)", "run(x, args.device)")


def test_every_program_of_one_use_is_decided_as_its_parts_say() -> None:
    """All of the tables' programs with one use of the namespace (1,400 of them)."""
    for parser, target, decorator, use in itertools.product(PARSERS, TARGETS, DECORATORS, USES):
        _check(parser, target, decorator, [use])


@settings(max_examples=100)
@given(
    parser=st.sampled_from(sorted(PARSERS)),
    target=st.sampled_from(sorted(TARGETS)),
    decorator=st.sampled_from(sorted(DECORATORS)),
    uses=st.lists(st.sampled_from(sorted(USES)), min_size=2, max_size=3),
)
def test_an_option_only_unread_parameters_get_is_left_alone(
    parser: str, target: str, decorator: str, uses: list[str]
) -> None:
    _check(parser, target, decorator, uses)


def _check(parser: str, target: str, decorator: str, uses: list[str]) -> None:
    defs, parse, elsewhere = PARSERS[parser]
    body, reads = TARGETS[target]
    reads = reads or DECORATORS[decorator]
    source = (
        "import argparse\nimport functools\nimport torch\n\n\n"
        f'{decorator}def run(x, device="cuda"):\n{body}\n\n'
        "def helper(device):\n    return torch.zeros(1, device=device)\n\n\n"
        f"{defs}\n\n"
        "def main(argv=None):\n    x = torch.zeros(1)\n    xs = [x]\n"
        f"{parse}" + "".join(f"    {u}\n" for u in uses) + "    return 0\n"
    )
    lines = source.splitlines()
    option = next(n for n, t in enumerate(lines, 1) if 'add_argument("--device"' in t)
    default = next(n for n, t in enumerate(lines, 1) if t.startswith("def run("))
    found = {f.line for f in check_source(source, select=["TP101"])}
    reaches = elsewhere or any(USES[u] or (u in _RUN_CALLS and reads) for u in uses)
    assert (option in found) == reaches, source
    assert (default in found) == reads, source


def test_the_options_destination_is_the_one_followed() -> None:
    """``dest=`` names the attribute; a namespace read of another attribute is no read of it."""
    source = (
        "import argparse\n\n\n"
        'def run(x, device="cuda"):\n    raise NotImplementedError\n\n\n'
        "def main():\n    p = argparse.ArgumentParser()\n"
        '    p.add_argument("--device", dest="where", default="cuda")\n'
        "    args = p.parse_args()\n    run(1, device=args.device)\n    return args.where.upper()\n"
    )
    option = next(n for n, t in enumerate(source.splitlines(), 1) if "dest=" in t)
    assert [f.line for f in check_source(source, select=["TP101"])] == [option]
    assert not check_source(source.replace("args.where.upper()", "0"), select=["TP101"])
