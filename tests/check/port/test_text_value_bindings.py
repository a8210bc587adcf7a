"""A name bound to text in one place and to a tensor in another is no text (n31aj's class).

Branch n31aj made TP522/TP523 skip a value the text shows is a str: a name every binding of
which is text. The bindings were the assignments of the scope reading the name; a function's
``global w; w = model(x)`` binds the module's ``w`` too, and was not among them: ``w = "a"``
then ``g()`` then ``np.argmax(w)`` (a device tensor into numpy) was said on c56d716d, and not on
be62ecb8 (k31ak). The invariant (``_text_values._assigned``): a name is text only where the
values it is read with are all its bindings there (the semantic model's: another scope's
``global`` assignment, ``with ... as``, ``except ... as``, an import are none of them), each
text; ``s += "x"`` keeps a str one.

The oracle is n31aj's, apart from the port: the program run on the CPU with numpy stubbed says
whether a tensor reaches the sink; the rule reports it there exactly when one does. Near forms
that hold: text rebound to text in a function, augmented text. A tensor bound by ``with
contextlib.nullcontext(out) as w`` was no device value to the flow (silent on c56d716d and
be62ecb8, k31ak's strict xfail): since x31al the target binds the value ``nullcontext`` is
given (``_structure._passed_through``), and TP522 says it; generated over the spelling
(``contextlib.nullcontext``, ``from contextlib import nullcontext``), a tuple target, the
block in a function with ``global w``, and text given instead (no finding).
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")  # before the oracle's module, which imports torch

from tests.check.port.test_n31aj_text_values import _holds_tensor
from torchport.check import check_source

_HEAD = (
    "import numpy as np\nimport torch\n\n"
    "model = torch.nn.Linear(4, 2)\nout = model(torch.ones(2, 4))\n"
)
_G = 'w = "a"\n\ndef g():\n    global w\n'  # (then the function's body, and its call)
FORMS = {
    "a global assignment in a function": _G + "    w = out\n\ng()\n",
    "a global augmented in a function": _G + "    w = out\n    w += 1\n\ng()\n",
    # near forms (text to the end)
    "text rebound to text in a function": _G + '    w = "b"\n\ng()\n',
    "augmented text": 'w = "a"\nw += "b"\n',
    "a local of the same name": 'w = "a"\n\ndef g():\n    w = out\n    return w\n\ng()\n',
}


@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_name_is_text_only_where_every_binding_is(form: str) -> None:
    program = _HEAD + FORMS[form] + "np.argmax(w)\n"
    line = program.count("\n")
    found = [f for f in check_source(program, select=["TP522"]) if f.line == line]
    assert bool(found) == _holds_tensor(program), (program, found)


_WITH = {  # how `w` is bound by a `with` (the value given to nullcontext), then read by numpy
    "contextlib.nullcontext": (
        "import contextlib\nwith contextlib.nullcontext(out) as w:\n    pass\n"
    ),
    "nullcontext imported": "from contextlib import nullcontext\nwith nullcontext(out) as w:\n"
    "    pass\n",
    "a tuple target": "import contextlib\nwith contextlib.nullcontext((out, 1)) as (w, n):\n"
    "    pass\n",
    "in a function, global": "import contextlib\n\ndef g():\n    global w\n"
    "    with contextlib.nullcontext(out) as w:\n        pass\n\ng()\n",
    "text given (near form)": "import contextlib\nwith contextlib.nullcontext('b') as w:\n"
    "    pass\n",
}


@pytest.mark.parametrize("form", sorted(_WITH))
def test_a_value_bound_by_nullcontext_is_what_it_was_given(form: str) -> None:
    program = _HEAD + 'w = "a"\n' + _WITH[form] + "np.argmax(w)\n"
    line = program.count("\n")
    found = [f for f in check_source(program, select=["TP522"]) if f.line == line]
    assert bool(found) == _holds_tensor(program), (program, found)


def test_a_tensor_bound_by_with_is_said() -> None:
    program = (
        _HEAD + 'import contextlib\nw = "a"\nwith contextlib.nullcontext(out) as w:\n    pass\n'
    )
    program += "np.argmax(w)\n"
    assert _holds_tensor(program)
    line = program.count("\n")
    assert [f for f in check_source(program, select=["TP522"]) if f.line == line]
