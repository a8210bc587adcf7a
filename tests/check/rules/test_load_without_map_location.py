"""TP301 stays quiet where a load stands in for a plain object, and only there.

Each program builds, on one path, an instance of a generated class (its bases and
what it stores vary) and, on the other, loads the same name with ``torch.load``
and no ``map_location``; the class is defined in the file or in a sibling module
of the project that the file imports. The oracle, written here apart from the
rule, knows what it generated: the load restores a plain object (nothing to map)
exactly when no class on the chain is an ``nn.Module`` or an unknown library's
class and none stores a value made by torch; otherwise the load is reported.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (the line in __init__, whether the object then holds something torch made)
STORES = {
    "dict": ("self.ids = {w: i for i, w in enumerate(words)}", False),
    "list": ("self.words = list(words)", False),
    "count": ("self.n = len(words)", False),
    "tensor": ("self.table = torch.zeros(len(words))", True),
    "parameter": ("self.w = nn.Parameter(torch.ones(2))", True),
    "tensor in a dict": ("self.cache['t'] = torch.tensor([1])", True),
    "local only": ("t = torch.ones(2)\n        self.shape = tuple(t.shape)", False),
}
# (the bases text, whether they keep the class plain when the parent is plain)
BASES = {"none": ("", True), "object": ("(object)", True), "module": ("(nn.Module)", False)}
# How the load and the alternative share a name: (program lines, with {make} for `C(words)`)
SHAPES = {
    "if/else": "if args.fresh:\n    enc = {make}\nelse:\n    enc = torch.load(args.path)\n",
    "conditional expression": "enc = {make} if args.fresh else torch.load(args.path)\n",
    "copied into one name": (
        "built = {make}\nloaded = torch.load(args.path)\n"
        "enc = built\nif args.trust:\n    enc = loaded\n"
    ),
}


def class_text(name: str, bases: str, store: str, parent: str | None) -> str:
    head = f"class {name}({parent}):\n" if parent else f"class {name}{bases}:\n"
    return head + f"    def __init__(self, words):\n        self.cache = {{}}\n        {store}\n"


@settings(deadline=None, max_examples=60)
@given(
    store=st.sampled_from(sorted(STORES)),
    bases=st.sampled_from(sorted(BASES)),
    inherit=st.booleans(),
    shape=st.sampled_from(sorted(SHAPES)),
    where=st.sampled_from(["this file", "sibling module", "relative import"]),
)
def test_a_load_standing_for_a_plain_object_is_left(
    store: str, bases: str, inherit: bool, shape: str, where: str
) -> None:
    store_line, holds_torch = STORES[store]
    bases_text, plain_bases = BASES[bases]
    classes = class_text("Base", bases_text, store_line, None)
    if inherit:  # the class made is a subclass of the generated one, adding nothing
        classes += "\n\nclass Vocab(Base):\n    kind = 'words'\n"
    else:
        classes = classes.replace("class Base", "class Vocab")
    header = "import torch\nimport torch.nn as nn\n\n"
    program = SHAPES[shape].format(make="Vocab(words)")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if where == "this file":
            source = header + classes + "\n\n" + program
        else:
            package = root / "pkg" if where == "relative import" else root
            package.mkdir(exist_ok=True)
            (package / "__init__.py").write_text("")
            (package / "vocab.py").write_text(header + classes)
            spelled = ".vocab" if where == "relative import" else "vocab"
            source = header + f"from {spelled} import Vocab\n\n" + program
        main = (root / "pkg" if where == "relative import" else root) / "main.py"
        main.write_text(source)
        found = check_source(source, str(main), select=["TP301"])
    plain = plain_bases and not holds_torch
    assert bool(found) is not plain, source


def test_what_is_not_known_to_be_plain_is_still_reported() -> None:
    source = (
        "import torch\nfrom somelib import Vocab\n\n"  # not in the project: unknown
        "def make(words):\n    return Vocab(words)\n\n"
        "if fresh:\n    a = Vocab(words)\nelse:\n    a = torch.load(p)\n"
        "if fresh:\n    b = make(words)\nelse:\n    b = torch.load(p)\n"  # a function's result
    )
    assert [f.line for f in check_source(source, select=["TP301"])] == [10, 14]


def test_a_name_read_often_still_finds_its_other_arm() -> None:
    # The copies (`use = loaded`) are followed only for names read a few times (the work
    # per load stays bounded); the arms that bind the name itself always are.
    reads = "".join(f"print(enc, {i})\n" for i in range(60))
    plain = "class Vocab:\n    def __init__(self, words):\n        self.ids = dict(words)\n\n"
    arms = "if fresh:\n    enc = Vocab(words)\nelse:\n    enc = torch.load(path)\n"
    assert check_source("import torch\n\n" + plain + arms + reads, select=["TP301"]) == []
    holds = plain.replace("dict(words)", "torch.tensor(words)")
    found = check_source("import torch\n\n" + holds + arms + reads, select=["TP301"])
    assert [f.line for f in found] == [10]
