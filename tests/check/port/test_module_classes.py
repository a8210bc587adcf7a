"""Which of a file's classes are ``nn.Module`` subclasses (``_models.module_classes``).

Each base is read once and the classes found through the file's own names are
their closure; the oracle is the search it replaced (rounds over every class and
base until one adds nothing), kept here. Class hierarchies are generated: bases
that are torch.nn's, named ``...Module``, other classes of the file (before or
after, repeated names, cycles), or nothing the port knows.
"""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._context import Context
from torchport.check.port._models import QualName, module_classes

NAMES = ("A", "B", "C", "D", "E")
BASES = (*NAMES, "nn.Module", "nn.Linear", "nn.functional", "torch.nn.Conv2d", "LightningModule",
         "object", "Base", "pl.LightningModule", "mod.Thing", "nn.init")  # fmt: skip


def _old_module_classes(classes: list[ast.ClassDef], qualname: QualName) -> set[str]:
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls in classes:
            if cls.name in found:
                continue
            for base in cls.bases:
                name = qualname(base) or ""
                tail = base.attr if isinstance(base, ast.Attribute) else getattr(base, "id", "")
                if (
                    (name.startswith("torch.nn.") and name.rsplit(".", 1)[1][:1].isupper())
                    or tail.endswith("Module")
                    or (isinstance(base, ast.Name) and base.id in found)
                ):
                    found.add(cls.name)
                    changed = True
                    break
    return found


hierarchies = st.lists(
    st.tuples(st.sampled_from(NAMES), st.lists(st.sampled_from(BASES), max_size=3)),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None)
@given(hierarchies)
def test_module_classes_agree_with_the_round_by_round_search(
    classes: list[tuple[str, list[str]]],
) -> None:
    lines = ["import torch", "import torch.nn as nn", "import pytorch_lightning as pl"]
    for name, bases in classes:
        lines.append(f"class {name}({', '.join(bases)}):\n    pass")
    source = "\n".join(lines) + "\n"
    tree = ast.parse(source)
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    ctx = Context(source, "<string>", tree)
    assert module_classes(defs, ctx.qualname) == _old_module_classes(defs, ctx.qualname)


def test_a_class_is_a_module_through_a_later_one_and_not_through_a_cycle() -> None:
    source = (
        "import torch.nn as nn\nclass A(B):\n    pass\nclass B(C):\n    pass\n"
        "class C(nn.Module):\n    pass\nclass D(E):\n    pass\nclass E(D):\n    pass\n"
    )
    tree = ast.parse(source)
    defs = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    ctx = Context(source, "<string>", tree)
    assert module_classes(defs, ctx.qualname) == {"A", "B", "C"}
