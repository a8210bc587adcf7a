"""Context: names through the scopes, values, loops, positions and the device definition."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import cast

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check import _context, fix_source
from torchport.check._context import Context, loop_heads, written_as_loop_target
from torchport.check._rule import Edit


def probe(
    source: str, pick: Callable[[ast.AST], bool], look: Callable[[ast.AST, Context], object]
) -> list[object]:
    """Walk like the engine (rules first, then enter, children, leave) and look at picked nodes."""
    tree = ast.parse(source)
    ctx = Context(source, "<t>", tree)
    seen: list[object] = []

    def visit(node: ast.AST) -> None:
        if pick(node):
            seen.append(look(node, ctx))
        ctx.enter(node)
        for child in ast.iter_child_nodes(node):
            visit(child)
        ctx.leave(node)

    visit(tree)
    assert ctx.ancestors == []
    return seen


def calls_named(name: str) -> Callable[[ast.AST], bool]:
    return lambda n: (
        isinstance(n, ast.Call)
        and (getattr(n.func, "attr", None) == name or getattr(n.func, "id", None) == name)
    )


def called_name(node: ast.AST, ctx: Context) -> str | None:
    assert isinstance(node, ast.Call)
    return ctx.qualname(node.func)


def value_of_argument(node: ast.AST, ctx: Context) -> ast.expr | None:
    assert isinstance(node, ast.Call) and isinstance(node.args[0], ast.Name)
    return ctx.value_of(node.args[0])


def apply(source: str, edits: tuple[Edit, ...]) -> str:
    for edit in sorted(edits, reverse=True):
        source = source[: edit.start] + edit.text + source[edit.end :]
    return source


@pytest.mark.parametrize(
    ("imports", "expr", "expected"),
    [
        ("import torch as th", "th.cuda.synchronize", "torch.cuda.synchronize"),
        ("from torch.cuda import amp", "amp.autocast", "torch.cuda.amp.autocast"),
        ("from torch import nn", "nn.DataParallel", "torch.nn.DataParallel"),
        (
            "import torch.distributed as dist",
            "dist.init_process_group",
            "torch.distributed.init_process_group",
        ),
        ("import torch.nn", "torch.nn.Linear", "torch.nn.Linear"),
        ("from . import torch", "torch.load", None),
        ("import numpy", "torch.load", None),
    ],
)
def test_qualname_through_aliases(imports: str, expr: str, expected: str | None) -> None:
    source = f"{imports}\n\ndef f():\n    {expr}()\n"
    last = expr.rsplit(".", 1)[1]
    assert probe(source, calls_named(last), called_name) == [expected]


def test_function_level_import_is_known_after_it() -> None:
    source = "def f():\n    import torch as T\n    T.cuda.synchronize()\n"
    seen = probe(source, calls_named("synchronize"), called_name)
    assert seen == ["torch.cuda.synchronize"]


def test_binding_is_the_value_before_this_point() -> None:
    source = (
        "x = 1\n"
        "x = torch.zeros(3)\n"
        "go(x)\n"
        "x = x.cuda()\n"
        "def f(x):\n"
        "    go(x)\n"
        "class C:\n"
        "    x = 5\n"
        "    def m(self):\n"
        "        go(x)\n"
    )
    seen = probe(source, calls_named("go"), value_of_argument)
    assert [ast.unparse(v) if v is not None else None for v in seen] == [  # type: ignore[arg-type]
        "torch.zeros(3)",
        None,  # a parameter shadows it
        "x.cuda()",  # methods skip the class scope and see the module's
    ]


def test_binding_while_the_assignment_value_is_checked_is_the_old_one() -> None:
    seen = probe("x = 1\nx = go(x)\n", calls_named("go"), value_of_argument)
    assert ast.unparse(seen[0]) == "1"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("for a in go():\n    pass\n", [False]),
        ("for a in b:\n    go()\nelse:\n    go()\n", [True, False]),
        ("while go():\n    go()\n", [True, True]),
        ("[go() for a in go() if go()]\n", [True, False, True]),
        ("for a in b:\n    def f():\n        go()\n    g = lambda: go()\n", [False, False]),
        ("for a in b:\n    for c in go():\n        pass\n", [True]),
        ("go()\n", [False]),
    ],
)
def test_in_loop(source: str, expected: list[bool]) -> None:
    assert probe(source, calls_named("go"), lambda n, c: c.in_loop(n)) == expected


def test_offsets_are_characters_not_bytes() -> None:
    source = "s = 'é€'; x = go()\n"
    seen = probe(source, calls_named("go"), lambda n, c: (c.segment(n), c.start(n)))
    assert seen == [("go()", source.index("go()"))]
    finding_cols = probe(
        source,
        calls_named("go"),
        lambda n, c: c.finding(_Fake(), n).col,  # type: ignore[arg-type]
    )
    assert finding_cols == [source.index("go()") + 1]


class _Fake:
    code = "TP999"
    name = "fake"
    message = "do the thing"


@given(st.text(alphabet="aé€😀 _x", min_size=0, max_size=8), st.integers(0, 3))
def test_offset_matches_ast_segment(prefix: str, lines: int) -> None:
    source = "\n" * lines + f"s = {prefix!r}; y = go(1)\n"
    seen = probe(
        source, calls_named("go"), lambda n, c: (c.segment(n), ast.get_source_segment(source, n))
    )
    assert seen == [("go(1)", "go(1)")]


def device_of(source: str) -> tuple[str, str]:
    """The name device_at gives at the first `go()` and the source with its edits."""
    seen = probe(source, calls_named("go"), lambda n, c: c.device_at(n))
    name, edits = cast("tuple[str, tuple[Edit, ...]]", seen[0])
    return name, apply(source, edits)


DEF = (
    "device = torch.accelerator.current_accelerator() "
    'if torch.accelerator.is_available() else torch.device("cpu")\n'
)


def test_device_defined_after_docstring_future_and_imports() -> None:
    source = (
        "#!/usr/bin/env python\n"
        '"""Doc."""\n'
        "from __future__ import annotations\n\nimport os\nimport torch\n\ngo()\n"
    )
    name, out = device_of(source)
    assert name == "device"
    assert out == source.replace("import torch\n", "import torch\n\n" + DEF)


@pytest.mark.parametrize(
    "value",
    [
        'torch.device("cuda")',
        '"cuda"',
        'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        DEF.split(" = ", 1)[1].strip(),
    ],
)
def test_existing_module_device_meaning_the_accelerator_is_reused(value: str) -> None:
    source = f"import torch\n\ndevice = {value}\n\ndef f():\n    go()\n"
    assert device_of(source) == ("device", source)


@pytest.mark.parametrize("value", ["pick()", '"cpu"', 'torch.device("cuda:1")', "args.device"])
def test_existing_module_device_with_another_meaning_is_not_reused(value: str) -> None:
    source = f"import torch\n\ndevice = {value}\n\ndef f():\n    go()\n"
    name, out = device_of(source)
    assert name == "_device"
    assert out.count("_device = torch.accelerator") == 1


def test_device_bound_to_something_else_gets_another_name() -> None:
    source = "import torch\n\ndef device():\n    pass\n\ngo()\n"
    name, out = device_of(source)
    assert name == "_device"
    assert "_device = torch.accelerator" in out


def test_module_device_defined_later_is_not_used_early() -> None:
    source = "import torch\n\ngo()\ndevice = pick()\n"
    assert device_of(source)[0] == "_device"


def test_function_local_device_assigned_later_is_avoided() -> None:
    source = "import torch\n\ndef f():\n    go()\n    device = 3\n"
    assert device_of(source)[0] == "_device"


def test_parameter_named_device_is_not_ours() -> None:
    source = "import torch\n\ndef f(x, device):\n    go()\n"
    assert device_of(source)[0] == "_device"


def test_local_device_meaning_the_accelerator_is_reused_when_bound_on_every_path() -> None:
    source = 'import torch\n\ndef f(x):\n    device = torch.device("cuda")\n    go()\n'
    assert device_of(source) == ("device", source)
    sibling = (
        "import torch\n\ndef f(x, mps):\n    if mps:\n"
        '        device = torch.device("cuda")\n    else:\n        go()\n'
    )
    assert device_of(sibling)[0] == "_device"


def test_import_torch_added_when_missing_and_alias_respected() -> None:
    _, out = device_of("import numpy as np\n\ngo()\n")
    assert out == "import torch\nimport numpy as np\n\n" + DEF + "\ngo()\n"
    _, out = device_of("import torch as th\n\ngo()\n")
    assert "device = th.accelerator.current_accelerator() if th.accelerator.is_available()" in out
    _, out = device_of("go()\n")
    assert out == "import torch\n" + DEF + "\ngo()\n"


def test_import_after_path_setup_keeps_torch_before_use() -> None:
    source = "import sys\nsys.path.insert(0, '.')\nimport torch\n\ngo()\n"
    _, out = device_of(source)
    assert out.index("import torch") < out.index("device = ")


def test_fix_keeps_crlf_comments_and_one_definition() -> None:
    source = (
        "# -*- coding: utf-8 -*-\r\nimport torch\r\n\r\n"
        "a = torch.ones(1).cuda()  # keep\r\nb = torch.zeros(1).cuda()\r\n"
    )
    out = fix_source(source, select=["TP101"])
    assert out.count("device = ") == 1
    assert "\n" not in out.replace("\r\n", "")
    assert out.startswith("# -*- coding: utf-8 -*-\r\nimport torch\r\n\r\ndevice = ")
    assert "a = torch.ones(1).to(device)  # keep\r\n" in out


def test_owns_lines_and_indent() -> None:
    source = "if x:\n    go()  # c\n    a = 1; go()\nif y:\n\tgo()\n"
    seen = probe(
        source,
        lambda n: isinstance(n, ast.Expr),
        lambda n, c: (c.owns_lines(cast(ast.stmt, n)), c.indent_of(n)),
    )
    assert seen == [(True, "    "), (False, "    "), (True, "\t")]


_VALUES = [
    "import torch\nkw = dict(a=1)\ndef f(**kwargs):\n    return g(**kwargs, **kw)\n",
    "x: int = 3\ny: int\nprint(x, y)\na = b = [1]\nc, d = 1, 2\nprint(a, b, c, d)\n",
    "if (n := len(s)) > 2:\n    print(n)\nprint(n)\n",
    "def f(p=1):\n    for i in p:\n        q = i\n    return q, p\n",
    "class C:\n    z = 1\n    w = z\n",
]


@pytest.mark.parametrize("source", _VALUES)
def test_value_of_agrees_with_the_scope_map_on_every_read(source: str) -> None:
    # Context.value_of answers None without a scope pass for names no `x = v` binds;
    # the oracle is the scope map's own answer, asked of a second, separate context.
    tree = ast.parse(source)
    fast, full = Context(source, "m.py", tree), Context(source, "m.py", tree)
    reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    assert reads
    for name in reads:
        assert fast.value_of(name) is full.scopes.value_of(name), ast.unparse(name)


_STATEMENTS = ["x = 1", "x: int = 2", "x += 1", "y = x", "del x", "(x := 3)",
               "for x in y: pass", "def x(): pass", "import x", "print(x)"]  # fmt: skip


@given(st.lists(st.sampled_from(_STATEMENTS), min_size=1, max_size=8))
def test_value_of_agrees_on_generated_modules(lines: list[str]) -> None:
    source = "\n".join(lines) + "\nprint(x, y if 0 else 1)\n"
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    fast, full = Context(source, "m.py", tree), Context(source, "m.py", tree)
    for name in ast.walk(tree):
        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Load):
            assert fast.value_of(name) is full.scopes.value_of(name)


# Pieces of text around `for`: runs of spaces, brackets, line joins and comments (cut
# anywhere), names that are and are not whole words, other code, text ends.
_PIECES = ["for", "for ", " ", "\t", "\n", "\r\n", "(", "[", "\\", "\\\n", "#", "# ",
           "# x", "#for x", "x", "xy", "y_", "torch", "_t", "in", ",", ":", "1", "f", "or",
           ".", "="]  # fmt: skip
_NAMES = ["x", "xy", "y", "y_", "torch", "t", "_t", "in", "f", "or", "for"]


@given(st.lists(st.sampled_from(_PIECES), max_size=14), st.sampled_from(_NAMES))
@example(["for", "# ", "\n", "xy"], "x")  # a run's comment, then a longer head word
@example(["for", " ", "#for x", "\n", "y_"], "x")  # a `for` inside the run's comment
def test_loop_targets_from_one_scan_match_the_search_name_by_name(
    pieces: list[str], name: str
) -> None:
    """``may_hold_a_value``'s text test, answered from one scan of the file, is the search
    of ``for``, then spaces, brackets, line joins or comments, then the name (a word end).
    """
    text = "".join(pieces)
    expected = re.search(rf"\bfor\b(?:[\s(\\]|#[^\r\n]*)*{re.escape(name)}\b", text)
    assert written_as_loop_target(loop_heads(text), name) is (expected is not None)


def _loop_heads_by_finditer(source: str) -> tuple[frozenset[str], tuple[str, ...]]:
    """The oracle: ``\\bfor\\b`` and its run, by ``re.finditer`` over the whole text."""
    heads, comments = set(), []
    for match in re.finditer(r"\bfor\b((?:[\s(\\]|#[^\r\n]*)*)", source):
        word = re.compile(r"\w+").match(source, match.end())
        if word is not None:
            heads.add(word.group())
        if "#" in match.group(1):
            comments.append(source[match.start(1) : match.end()])
    return frozenset(heads), tuple(comments)


@given(st.lists(st.sampled_from([*_PIECES, "é", "\uff46", "_", "2"]), max_size=16))
@example(["x", "for", " ", "#for x", "\n", "y"])  # a `for` in the run of a non-word `for`
@example(["é", "for", " ", "x"])  # a word character that is no ASCII letter
def test_loop_heads_are_the_scan_of_every_word_for(pieces: list[str]) -> None:
    """The scan jumps from one literal ``for`` to the next and tests the word start
    itself (a pattern starting with ``\\b`` is tried at every character: 15x slower on
    real trees); what it finds is what ``\\bfor\\b`` finds."""
    text = "".join(pieces)
    assert loop_heads(text) == _loop_heads_by_finditer(text)
    assert _context._FOR_RUN.pattern.startswith("for")
