"""Edits after receivers and arguments apply to the whole expression, parentheses included.

The oracle parses the edited text and compares syntax trees: the method added to
``(<expr>).numpy()`` must take the whole original receiver as its own receiver,
whatever operators, parentheses, comments and line breaks the receiver holds.
"""

from __future__ import annotations

import ast

from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source, fix_source
from torchport.check._source import SourceText
from torchport.check.port import port_source

ATOMS = ("x", "idx", "out", "t[0]", "t.data", "f(x)", "10", "2.5", "model(x)")
BINARY = (" + ", " - ", " * ", " @ ", " / ", " ** ", " // ")


@st.composite
def expressions(draw: st.DrawFn, depth: int = 0) -> str:
    """Source text of an expression, often compound and parenthesised in odd ways."""
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(ATOMS))
    kind = draw(st.integers(0, 4))
    left = draw(expressions(depth + 1))
    right = draw(expressions(depth + 1))
    if kind == 0:
        text = f"{left}{draw(st.sampled_from(BINARY))}{right}"
    elif kind == 1:
        text = f"-{left}"
    elif kind == 2:
        text = f"{left} if {right} else {left}"
    elif kind == 3:
        text = f"({left}  # why\n {draw(st.sampled_from(BINARY)).strip()} {right})"
    else:
        text = f"{left} == {right}"
    return draw(st.sampled_from([f"({text})", f"( {text} )", f"((\n{text}\n))"]))


def receivers() -> st.SearchStrategy[str]:
    """Expressions that may stand before ``.numpy()`` as written (not a bare number)."""
    return expressions().filter(lambda e: not e[0].isdigit())


def _receiver(source: str) -> ast.expr:
    call = next(
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        if n.func.attr == "numpy"
    )
    assert isinstance(call.func, ast.Attribute)
    return call.func.value


@given(receivers())
def test_text_at_receiver_end_applies_to_the_whole_receiver(expr: str) -> None:
    source = f"y = {expr}.numpy()\n"
    tree = ast.parse(source)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "numpy")
    at = SourceText(source).receiver_end(call)
    edited = source[:at] + ".cpu()" + source[at:]
    receiver = _receiver(edited)
    assert isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute)
    assert receiver.func.attr == "cpu"
    assert ast.dump(receiver.func.value) == ast.dump(_receiver(source))


@given(expressions())
def test_append_call_wraps_compound_expressions(expr: str) -> None:
    source = f"y = {expr}\n"
    tree = ast.parse(source)
    stmt = tree.body[0]
    assert isinstance(stmt, ast.Assign)
    text = SourceText(source)
    edits = sorted(text.append_call(stmt.value, ".to(d)"), reverse=True)
    edited = source
    for e in edits:
        edited = edited[: e.start] + e.text + edited[e.end :]
    new = ast.parse(edited).body[0]
    assert isinstance(new, ast.Assign) and isinstance(new.value, ast.Call)
    moved = new.value.func
    assert isinstance(moved, ast.Attribute) and moved.attr == "to"
    assert ast.dump(moved.value) == ast.dump(stmt.value)


@given(receivers())
def test_port_wraps_numpy_receivers_and_is_idempotent(expr: str) -> None:
    source = (
        "import torch\n\n"
        "model = torch.nn.Linear(3, 3)\n"
        "x = torch.ones(3)\n"
        "t = [x]\n"
        "idx = torch.arange(3)\n"
        "out = model(x)\n"
        "def f(v):\n    return v\n"
        f"print({expr}.numpy())\n"
    )
    ported = port_source(source)
    assert port_source(ported) == ported
    receiver = _receiver(ported)
    assert isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute)
    assert receiver.func.attr == "cpu"  # every receiver here may be on the device
    # `.cpu()` (after `.detach()`) takes the whole original receiver.
    while isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute):
        if receiver.func.attr not in ("cpu", "detach"):
            break
        receiver = receiver.func.value
    assert ast.dump(receiver) == ast.dump(_receiver(source))


def test_keyword_goes_after_a_parenthesised_last_argument() -> None:
    source = (
        "import torch\n\nnoise = torch.ones((3)).to('cuda')\nmask = torch.ones((2), (3),).cuda()\n"
    )
    fixed = fix_source(source, select=["TP905"], unsafe=True)  # TP106's, made once
    ast.parse(fixed)
    assert "torch.ones((3), device='cuda')" in fixed
    assert 'torch.ones((2), (3), device="cuda",)' in fixed


def test_numpy_of_a_parenthesised_receiver_is_fixed_not_a_rule_failure() -> None:
    source = (
        "import torch\n\n"
        'x = torch.ones(2, device="cuda")\n'
        "print((x + 1).numpy())\n"
        "print(((x * 2)).numpy())\n"
    )
    assert [f.code for f in check_source(source, select=["TP201"])] == ["TP201", "TP201"]
    fixed = fix_source(source, select=["TP201"])
    assert "print((x + 1).detach().cpu().numpy())" in fixed
    assert "print(((x * 2)).detach().cpu().numpy())" in fixed
    assert fix_source(fixed, select=["TP201"]) == fixed


@given(receivers())
def test_every_rule_that_rewrites_a_receiver_keeps_it_whole(expr: str) -> None:
    """TP101 (`.cuda()`), TP106 (create-then-move) and TP508 (`.item()`) on compound receivers."""
    source = (
        "import torch\n\n"
        "x = torch.ones(3)\nidx = torch.arange(3)\nt = [x]\nout = x\n"
        "def f(v):\n    return v\n"
        "model = lambda v: v\n"
        f"y = ({expr}).cuda()\n"
        "z = (torch.ones(3)).to('cuda')\n"
        "correct = 0\n"
        "for _ in range(2):\n    correct += ((x == x).sum()).item()\n"
        "print(correct)\n"
    )
    fixed = fix_source(source, unsafe=True, select=["ALL"], ignore=["TP5"])
    assert fix_source(fixed, unsafe=True, select=["ALL"], ignore=["TP5"]) == fixed
    tree = ast.parse(fixed)
    moved = next(
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "y"
    )
    assert isinstance(moved, ast.Call) and isinstance(moved.func, ast.Attribute)
    assert moved.func.attr == "to"
    original = ast.parse(f"({expr})", mode="eval").body
    assert ast.dump(moved.func.value) == ast.dump(original)


@given(st.lists(st.sampled_from(["x", "ab", "\n", "\r\n", "\r", "\n\n", " ", "é"]), max_size=20))
def test_line_starts_are_the_offsets_after_each_line_end(pieces: list[str]) -> None:
    """Line ``n`` starts after the ``n - 1``-th line end (``\\r\\n``, ``\\r`` or ``\\n``),
    counted here by hand, with or without ``\\r`` in the text.
    """
    text = "".join(pieces)
    expected = [0, 0]
    i = 0
    while i < len(text):
        if text[i] == "\r" and text[i + 1 : i + 2] == "\n":
            i += 2
            expected.append(i)
            continue
        i += 1
        if text[i - 1] in "\r\n":
            expected.append(i)
    assert SourceText(text)._line_starts() == expected
