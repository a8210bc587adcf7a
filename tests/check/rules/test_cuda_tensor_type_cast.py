"""TP111's cast to another tensor's legacy type name: ``x.type(y.type())``.

Held-out recall round 5h (ComfyUI-AdvancedLivePortrait's ``DenseMotionNetwork``:
``torch.zeros(...).type(heatmap.type()).to(heatmap.device)``, which MPS refuses, fixed upstream
as ``.type(heatmap.dtype)``). The oracle is written apart from the rule: the shape is reported
in a module that imports torch when neither ``.type`` can be a method of the program's own (an
instance of a class of the file that defines ``type``, or any receiver in a file where a class
defines ``type``); the fix is offered only where ``.to(y.device)`` follows on the same ``y``,
a name or attribute chain; and the fixed program, run on the CPU, computes the same values
with the same dtypes on the same devices.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source, fix_source

# (how torch is imported, its name)
IMPORTS = (("import torch", "torch"), ("import torch as th", "th"))
# (the receiver made before the cast)
RECEIVERS = ("{T}.zeros(2, 3)", "base", "{T}.arange(6).view(2, 3)")
# (the other tensor's expression, whether a fix may read it twice)
OTHERS = (("h", True), ("box.h", True), ("pick(h)", False))
# (what follows the cast, whether it moves to the other tensor's device)
AFTER = ((".to({o}.device)", True), ("", False), (".to(dev)", False), (".float()", False))
DTYPES = ("float64", "float16", "int64", "bool")
# A class of the file that defines `type` makes every unknown receiver possibly its own.
OWN = (
    ("", False),
    ("class Node:\n    def type(self, kind=None):\n        return kind\n\n\n", True),
)


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from(IMPORTS),
    st.sampled_from(RECEIVERS),
    st.sampled_from(OTHERS),
    st.sampled_from(AFTER),
    st.sampled_from(DTYPES),
    st.sampled_from(OWN),
)
def test_a_cast_to_another_tensors_type_name_is_reported_and_fixed_where_safe(
    imp: tuple[str, str],
    receiver: str,
    other: tuple[str, bool],
    after: tuple[str, bool],
    dtype: str,
    own: tuple[str, bool],
) -> None:
    t = imp[1]
    setup = (
        f"{imp[0]}\n\n\n{own[0]}"
        f"class Box:\n    pass\n\n\ndef pick(x):\n    return x\n\n\n"
        f"h = {t}.ones(2, 3, dtype={t}.{dtype})\nbox = Box()\nbox.h = h\n"
        f"base = {t}.full((2, 3), 2.5)\ndev = h.device\n"
    )
    line = f"out = {receiver.format(T=t)}.type({other[0]}.type()){after[0].format(o=other[0])}\n"
    source = setup + line
    found = [f for f in check_source(source, select=["TP111"])]
    # Where a class of the file defines `type`, only values known to be torch's (made by a
    # torch call, directly or through a name bound to one) may be torch's `.type()`: every
    # receiver here is, of the other tensors only `h` (`box.h` is an attribute of the
    # program's object, `pick(h)` a call of its function).
    known = not own[1] or other[0] == "h"
    assert len(found) == known, source
    if not known:
        return
    (finding,) = found
    fixable = other[1] and after[1]
    assert (finding.fix is not None) == fixable, source
    fixed = fix_source(source, select=["TP111"])
    assert (fixed != source) == fixable
    if fixable:
        assert f".type({other[0]}.dtype)" in fixed and f".type({other[0]}.type())" not in fixed
        _same_results(source, fixed)


def _same_results(source: str, fixed: str) -> None:
    """Both programs run on the CPU to the same tensor: values, dtype and device."""
    import torch  # here: the rest of this module runs where only the checker is installed

    outs = []
    for program in (source, fixed):
        space: dict[str, object] = {}
        exec(compile(program, "<fuzz>", "exec"), space)  # a generated test program
        out = space["out"]
        assert isinstance(out, torch.Tensor)
        outs.append(out)
    before, later = outs
    assert (later.dtype, later.device) == (before.dtype, before.device)
    assert torch.equal(later, before)


LOOKALIKES = (
    # a node class of the file with its own `.type()`
    "import torch\n\n\nclass Node:\n    def type(self, kind=None):\n        return kind\n\n\n"
    "k = Node().type(Node().type())\n",
    # a receiver of unknown origin in a file whose class defines `type`
    "import torch\n\n\nclass Spec:\n    def type(self, kind=None):\n        return kind\n\n\n"
    "def f(a, b):\n    return a.type(b.type())\n",
    # no torch in the module
    "def f(a, b):\n    return a.type(b.type())\n",
    # not the shape: an argument to `y.type`, the method itself, a keyword
    "import torch\n\nx = a.type(b.type(c))\ny = a.type(b.type)\nz = a.type(dtype=b.type())\n",
    # already ported: the dtype, a branch on the device type
    "import torch\n\nx = a.type(b.dtype).to(b.device)\n",
    "import torch\n\nif b.device.type == 'cuda':\n    x = a.type(b.type())\n",
)


def test_look_alikes_stay_unreported() -> None:
    for source in LOOKALIKES:
        assert check_source(source, select=["TP111"]) == [], source
