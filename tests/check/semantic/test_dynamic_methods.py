"""The text gate of ``_dynamic_methods``: a file it lets pass unread gives no device method.

``_patterns.MAY_GIVE_METHODS`` decides whether a file's tree is walked for device methods given
at run time (and whether ``_receivers`` imports the module at all). It must be a superset: for
every program in which :func:`_read` finds a method given, the gate matches. Programs are drawn
from the forms the module reads (attribute stores, tuple and loop targets, ``setattr``,
``type(name, bases, namespace)``) and from near forms that give nothing (calls, reads), in
several spellings (spaces around the dot, a line continuation); the oracle is the module's own
walk, which the gate only shortcuts.
"""

from __future__ import annotations

import ast

from hypothesis import example, given
from hypothesis import strategies as st

from torchport.check import fix_source
from torchport.check._patterns import MAY_GIVE_METHODS, may_give_methods
from torchport.check.semantic._dynamic_methods import DYNAMIC_METHODS, _read

_METHODS = sorted(DYNAMIC_METHODS)
_FORMS = (
    "{r}.{m} = f",
    "{r} . {m} = f",
    "{r}.{m}: object = f",
    "({r}.{m}, y) = f, 1",
    "for {r}.{m} in [f]:\n    pass",
    "with open(__file__) as {r}.{m}:\n    pass",
    "setattr({r}, '{m}', f)",
    'setattr ( {r} , "{m}" , f )',
    "Box = type('Box', (), {{'{m}': f}})",
    "Box = type ('Box', (), dict({m}=f))",
    "Box = type\\\n    ('Box', (), {{'{m}': f}})",
    "{r}.{m}(x)",  # near forms: a call and a read give nothing
    "{r} .{m} (x)",
    "y = {r}.{m}",
    "{r}.\\\n    {m} = f",
)
_RECEIVERS = ("Box", "self", "obj.inner", "type(x)", "torch.Tensor")


@given(
    st.lists(
        st.tuples(st.sampled_from(_FORMS), st.sampled_from(_METHODS), st.sampled_from(_RECEIVERS)),
        min_size=1,
        max_size=4,
    )
)
def test_the_gate_passes_every_text_that_gives_a_method(
    parts: list[tuple[str, str, str]],
) -> None:
    source = "class Box:\n    pass\n\n\n" + "\n".join(form.format(r=r, m=m) for form, m, r in parts)
    tree = ast.parse(source)
    if _read(tree).anywhere:
        assert MAY_GIVE_METHODS.search(source), source


def test_a_plain_move_is_not_let_through() -> None:
    """The gate's point: the usual file, which only calls the methods, is not walked."""
    source = "import torch\nx = torch.zeros(3).cuda()\ny = x.to('cpu').contiguous()\n"
    assert not _read(ast.parse(source)).anywhere
    assert not MAY_GIVE_METHODS.search(source)


def test_a_store_on_self_gives_the_method_to_its_class_alone() -> None:
    """``self.cuda = flag`` (fairseq's ``Trainer``) gives ``cuda`` to that class's instances;
    a torch tensor's ``.cuda()`` in the file is still torch's. In a nested class, or where the
    first parameter may not be the instance (a decorated method), any object may have it."""
    source = (
        "class Trainer:\n"
        "    def __init__(self, cfg):\n"
        "        self.cuda = cfg.cuda\n"
        "        def inner(self):\n"
        "            self.to = 1\n"
        "    @staticmethod\n"
        "    def make(box):\n"
        "        box.cpu = 2\n"
    )
    found = _read(ast.parse(source))
    assert found.by_name == {"Trainer": frozenset({"cuda"})}
    assert found.unowned == {"to", "cpu"}
    assert found.anywhere == {"cuda", "to", "cpu"}


def test_fix_keeps_a_tensors_move_beside_a_flag_named_cuda() -> None:
    flag = (
        "import torch\n\n\nclass Trainer:\n    def __init__(self, use):\n        self.cuda = use\n"
    )
    moved = flag + "\n\nx = torch.zeros(1).cuda()\n"
    assert "torch.zeros(1).to(device)" in fix_source(moved, select=["TP101"], unsafe=True)
    own = flag.replace("use\n", "lambda: 'mine'\n").replace("Trainer:", "Trainer(torch.nn.Module):")
    kept = own + "\n\nprint(Trainer(None).cuda())\n"
    assert fix_source(kept, select=["TP101"], unsafe=True) == kept


_PIECES = (".", " ", "\\\n", "\\\r\n", "\n", "(", "setattr", "type", "xtype", "typed", "to", "cuda",
           "pin_memory", "share_memory_", "tox", "_", "a", "=", "setattr_")  # fmt: skip


@given(
    st.lists(
        st.one_of(
            st.sampled_from(_PIECES),
            st.tuples(st.sampled_from(_FORMS), st.sampled_from(_METHODS)).map(
                lambda fm: fm[0].format(r="Box", m=fm[1])
            ),
        ),
        max_size=12,
    )
)
@example(["Box = type ('Box', (), {})"])  # each alternative alone, spelled apart
@example(["x = type\\\n(1)"])
@example(["setattr (Box, 'x', f)"])
@example(["Box .\\\n cuda = f"])
@example(["typed(1); set_attr(x); Box.cuda(1)"])
def test_the_split_gate_answers_as_the_pattern(parts: list[str]) -> None:
    """``may_give_methods`` (each alternative apart, two gated on their word) is the pattern's
    search, on texts of the forms and of their pieces run together."""
    text = "".join(parts)
    assert may_give_methods(text) is (MAY_GIVE_METHODS.search(text) is not None), text
