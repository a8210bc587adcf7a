"""TP101 leaves a CUDA parameter default that never runs: every call of a function private
to its file passes the argument (samples A-T and V, judged low (e): gpt-fast's
``encode_tokens(device="cuda")``, torchmd-net's ``Calculator(device="cuda")``, ...).

The analysis is the file's alone, so only a module-private (``_f``, ``_F``) or nested
function or class qualifies; a public one may have callers the checker never sees.
Programs are drawn: the callee's shape (private, public, nested, a private or public class),
its default (``"cuda"``, ``torch.device("cuda")``), and its calls (by keyword, by position,
omitting it, through ``**kw`` or ``*a``, through ``functools.partial``, through an alias, a
subclass). Two oracles, written apart from the rule: Python itself runs the program with
every value the unknown names (``a``, ``kw``) may hold, and a default the rule leaves alone
must never have run; and the stated scope: left alone exactly when the callee is private
or nested, called at least once, and every mention of it is a call passing the argument
by keyword or position (for a private class, also a subclass built so).
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

torch = pytest.importorskip("torch")

SHAPES = ("private", "public", "nested", "private_class", "public_class")
NAMES = {"private": "_f", "public": "f", "nested": "enc", "private_class": "_F"}
NAMES["public_class"] = "F"
DEFAULTS = ('"cuda"', 'torch.device("cuda")')
PASSING = ("keyword", "position")
FORMS = {
    "keyword": "{n}(1, device=d)",
    "position": "{n}(1, d)",
    "omitted": "{n}(1)",
    "kwargs": "{n}(1, **kw)",
    "args": "{n}(*a)",
    "partial": "functools.partial({n}, 1)(device=d)",
    "alias": "h = {n}\n    h(1, d)",
    "subclass": "class _Sub({n}):\n        pass\n    _Sub(1, d)",
}
D = "the caller's device"
BINDINGS = [(a, kw) for a in ((1,), (1, D)) for kw in ({}, {"device": D})]


def program(shape: str, default: str, forms: list[str]) -> str:
    name = NAMES[shape]
    record = "SEEN.append(str(device))"
    if shape.endswith("class"):
        callee = f"class {name}:\n    def __init__(self, x, device={default}):\n        {record}\n"
    else:
        callee = f"def {name}(x, device={default}):\n    {record}\n"
    calls = "".join(f"    {FORMS[form].format(n=name)}\n" for form in forms) + "    pass\n"
    if shape == "nested":
        inner = "".join(f"    {line}\n" for line in callee.splitlines())
        return f"import functools\nimport torch\n\n\ndef main(d, a, kw):\n{inner}{calls}"
    return f"import functools\nimport torch\n\n\n{callee}\n\ndef main(d, a, kw):\n{calls}"


def default_ran(source: str) -> bool:
    """Whether the default ran for some value of ``a`` and ``kw`` (Python decides)."""
    for a, kw in BINDINGS:
        scope: dict[str, object] = {"SEEN": []}
        exec(compile(source, "train.py", "exec"), scope)
        scope["main"](D, a, kw)  # type: ignore[operator]
        if any(seen.startswith("cuda") for seen in scope["SEEN"]):  # type: ignore[attr-defined]
            return True
    return False


def reported(source: str) -> bool:
    return bool(check_text(source, "train.py", ruleset_for(["TP101"], None)).findings)


def expected_left_alone(shape: str, forms: list[str]) -> bool:
    # a private class's subclass built passing the argument builds it passing it
    # (`rules/_class_constructions.py`; test_hard_coded_cuda_default_through_subclasses.py)
    passing = {"keyword", "position", "subclass"} if shape == "private_class" else set(PASSING)
    if forms.count("subclass") > 1:  # `_Sub` defined twice: a name bound twice is not followed
        return False
    return shape in ("private", "nested", "private_class") and bool(forms) and set(forms) <= passing


@given(
    st.sampled_from(SHAPES),
    st.sampled_from(DEFAULTS),
    st.lists(st.sampled_from(sorted(FORMS)), max_size=4),
)
@example("private", '"cuda"', ["keyword", "position"])
@example("nested", 'torch.device("cuda")', ["keyword"])
@example("private_class", 'torch.device("cuda")', ["position", "keyword"])
@example("private", '"cuda"', ["keyword", "omitted"])
@example("private", '"cuda"', ["kwargs"])
@example("private", '"cuda"', ["keyword", "partial"])
@example("nested", '"cuda"', ["keyword", "alias"])
@example("private_class", '"cuda"', ["keyword", "subclass"])
@example("private_class", '"cuda"', ["subclass", "subclass"])
@example("public", '"cuda"', ["keyword"])
@example("public", '"cuda"', [])
@example("private", '"cuda"', [])
def test_a_default_is_left_alone_only_when_no_call_can_run_it(
    shape: str, default: str, forms: list[str]
) -> None:
    if "subclass" in forms and not shape.endswith("class"):
        forms = [f for f in forms if f != "subclass"]
    source = program(shape, default, forms)
    left_alone = not reported(source)
    if left_alone:
        assert not default_ran(source), source  # sound: Python never runs the default
    assert left_alone == expected_left_alone(shape, forms), source


@pytest.mark.parametrize(
    "source",
    [
        # (each body reads the parameter: one no code reads places nothing,
        # test_hard_coded_cuda_unread_parameter.py)
        # a name mentioned other ways: a string, an attribute, a rebinding, introspection
        '__all__ = ["_f"]\n\n\ndef _f(x, device="cuda"):\n    return device\n\n\n_f(1, device=d)\n',
        'import m\n\n\ndef _f(x, device="cuda"):\n    return device\n\n\n_f(1, d)\nm._f(1)\n',
        'def _f(x, device="cuda"):\n    return device\n\n\n_f(1, d)\n_f = g\n',
        'def _f(x, device="cuda"):\n    return device\n\n\n_f(1, d)\neval("_f(1)")\n',
        # defined twice, decorated by a decorator not known to keep the call (those that
        # are: test_hard_coded_cuda_passed_defaults_decorated.py), a positional-only
        # parameter given by keyword
        'def _f(x, device="cuda"):\n    return device\n\n\n'
        'def _f(x, device="cuda"):\n    return device\n\n\n_f(1, d)\n',
        'import functools\n\n\n@functools.singledispatch\ndef _f(x, device="cuda"):\n'
        "    return device\n\n\n_f(1, d)\n",
        'def _f(x, device="cuda", /):\n    return device\n\n\n_f(1, device=d)\n',
        # a class that builds itself, or one whose base may (`from_pretrained`)
        'class _F:\n    def __init__(self, device="cuda"):\n        self.device = device\n\n'
        "    def copy(self):\n        return type(self)()\n\n\n_F(d)\n",
        'class _F(Base):\n    def __init__(self, device="cuda"):\n'
        "        self.device = device\n\n\n_F(d)\n",
        # a default that needs CUDA when the `def` runs, used or not
        "import torch\n\n\ndef _f(x, device=torch.zeros(1).cuda()):\n    pass\n\n\n_f(1, d)\n",
        "import torch\n\n\ndef _f(x, device=torch.zeros(1).cuda().device):\n    pass\n\n\n"
        "_f(1, d)\n",
        'import torch\n\n\ndef _f(x, device=torch.device("cuda", torch.cuda.current_device())):\n'
        "    pass\n\n\n_f(1, d)\n",
        # a method other than `__init__`: its callers are not followed
        'class _F:\n    def _go(self, device="cuda"):\n        self.device = device\n\n'
        "    def run(self, d):\n        self._go(d)\n",
    ],
)
def test_other_mentions_keep_the_finding(source: str) -> None:
    assert reported(source), source


def test_a_default_left_alone_leaves_the_others() -> None:
    source = 'def _f(x, device="cuda", map_device="cuda:1"):\n    return device, map_device\n\n\n'
    source += "_f(1, device=d)\n"
    found = check_text(source, "train.py", ruleset_for(["TP101"], None)).findings
    assert [(f.line, f.col) for f in found] == [(1, source.index('"cuda:1"') + 1)]  # 1-based, found
