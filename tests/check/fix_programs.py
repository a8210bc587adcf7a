"""Hypothesis strategies for small PyTorch programs that stress what ``fix`` must get right.

Each program records what it computes with ``OUT.append(...)`` (``OUT`` is a list
the runner provides), so an original and its fixed version can be run side by
side and compared. The fragments are drawn from the ways fixes used to break
working code: functions, nested functions, lambdas, classes and
comprehensions; defaults and decorators evaluated in the enclosing scope; a
local ``device`` in a sibling branch or assigned later; a module-level
``device`` with another meaning, one from a star import, and one bound after a
function that is already called; optional and ``TYPE_CHECKING`` imports; a
one-line ``import torch; ...``; ``device="cuda"`` given to calls that are not
torch's; guards (``torch.cuda.is_available()``, ``device_count()``) and the
code they protect; ``x = x[...]`` rebinding; globals moved inside functions.

Programs use ``T`` for torch's name in the fragments below; the header decides
what ``T`` is (``torch`` or an alias). Every ``{k}`` becomes a per-fragment
number so names do not collide.
"""

from __future__ import annotations

import re

from hypothesis import strategies as st

__all__ = ["STAR_MODULE", "programs"]

# What `from fuzzcfg import *` provides (the runner installs it as a module).
STAR_MODULE = {"device": "cpu", "scale": 2}

HEADERS = {
    "plain": "import torch\n",
    "alias": "import torch as th\n",
    "nn": "import torch\nimport torch.nn as nn\n",
    "type_checking": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import torch\n"
        "import os\n"
        "OUT.append(os.sep)\n"
        "import torch\n"
    ),
    "optional": "try:\n    import torch\nexcept ImportError:\n    torch = None\n",
    "one_line": "import torch; x0 = torch.ones(1).cuda(); OUT.append(x0)\n",
    "docstring": '"""A module."""\nfrom __future__ import annotations\n\nimport torch\n',
    "from_only": "from torch import nn\nimport math\n",
    "torch_star": "from torch import *\nimport torch\nOUT.append(device)\n",
    "late_import": "import os\nOUT.append(os.sep)\nimport torch\n",
}
ALIASES = {"alias": "th"}

FRAGMENTS = [
    # TP101 .cuda(), "cuda" strings, torch.device("cuda"), an index
    "OUT.append(T.ones(2).cuda())",
    'OUT.append(T.zeros(3, device="cuda"))',
    'OUT.append(T.arange(4).to("cuda"))',
    'OUT.append(T.arange(4).to("cuda:0"))',
    'd{k} = T.device("cuda")\nOUT.append(T.ones(1).to(d{k}))',
    # defaults and decorators run in the enclosing scope
    'def f{k}(x, device=T.device("cuda")):\n    return x.to(device)\nOUT.append(f{k}(T.ones(2)))',
    "def deco{k}(fn):\n    return fn\n@deco{k}\ndef g{k}(x):\n    return x.cuda()\n"
    "OUT.append(g{k}(T.ones(2)))",
    # an enclosing function's local `device` seen by a lambda
    'def h{k}():\n    device = "cpu"\n    mv = lambda t: t.cuda()\n'
    "    return mv(T.ones(2)), device\n"
    "OUT.append(h{k}())",
    # a local `device` in a sibling branch, and one assigned later
    'def s{k}(flag):\n    if flag:\n        device = T.device("cpu")\n'
    "        return T.ones(1).to(device)\n    else:\n        return T.ones(1).cuda()\n"
    "OUT.append(s{k}(False))",
    'def l{k}():\n    y = T.ones(2).cuda()\n    device = "cpu"\n    return y, device\n'
    "OUT.append(l{k}())",
    # a parameter named device with another meaning
    'def p{k}(x, device="cpu"):\n    return x.cuda(), device\nOUT.append(p{k}(T.ones(1)))',
    # comprehensions and classes
    "OUT.append([T.ones(1).cuda() for _ in range(2)])",
    "class M{k}(T.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.lin = T.nn.Linear(2, 2)\n    def forward(self, x):\n"
    "        return self.lin(x.cuda())\nT.manual_seed(0)\nm{k} = M{k}().cuda()\n"
    "OUT.append(m{k}(T.ones(1, 2)).detach())",
    # calls that are not torch's, with device=
    'cfg{k} = dict(device="cuda")\nOUT.append(cfg{k})',
    'def same{k}(t, device="cuda"):\n    return device.upper()\n'
    'OUT.append(same{k}(T.ones(1), device="cuda"))',
    # a module-level function called before a later module-level `device = ...`
    'def early{k}():\n    return T.ones(1).cuda()\nOUT.append(early{k}())\ndevice = "cpu"\n'
    "OUT.append(device)",
    # seeds, synchronize, random factories (unsafe fixes that say what they change)
    "T.cuda.manual_seed_all(0)\nOUT.append(T.rand(2))",
    "T.cuda.manual_seed(0)\nOUT.append(T.rand(2))",
    "T.cuda.synchronize()\nOUT.append(1)",
    "T.manual_seed(1)\nOUT.append(T.randn(3).cuda())",
    # a discarded move on a global, inside a function (TP107 --unsafe)
    "buf{k} = T.ones(2)\ndef save{k}():\n    buf{k}.cpu()\n    return buf{k}\n"
    "OUT.append(save{k}())",
    # a discarded move on a local: the fix assigns it back
    "def mv{k}():\n    t = T.ones(2)\n    t.cpu()\n    return t\nOUT.append(mv{k}())",
    # x = x[...] rebinding read in a loop (TP202/TP107 lookups)
    "x{k} = T.ones(3)\nx{k} = x{k}[1:]\nfor _ in range(2):\n    OUT.append(x{k}.sum().item())",
    # legacy constructors, amp, numpy
    "OUT.append(T.cuda.FloatTensor(2, 3).zero_())",
    "with T.cuda.amp.autocast(enabled=False):\n    OUT.append(T.ones(2) * 2)",
    "OUT.append(T.ones(2).cuda().numpy().tolist())",
    # guards and what they protect
    "n{k} = T.cuda.device_count()\nOUT.append(n{k})",
    "if T.cuda.is_available():\n    OUT.append(T.ones(1).cuda())\n"
    "else:\n    OUT.append(T.zeros(1))",
    'cuda{k} = T.cuda.is_available()\nOUT.append(T.ones(1) if cuda{k} else "cpu")',
    'dev{k} = "cuda" if T.cuda.is_available() else "cpu"\nOUT.append(T.ones(1).to(dev{k}))',
    # walrus, global, nonlocal
    "if (z{k} := T.ones(2).cuda()) is not None:\n    OUT.append(z{k})",
    'def gl{k}():\n    global gdev{k}\n    gdev{k} = "cpu"\n    return T.ones(1).cuda()\n'
    "OUT.append(gl{k}())",
    'def outer{k}():\n    device = "cpu"\n    def inner():\n        nonlocal device\n'
    "        return T.ones(1).cuda(), device\n    return inner()\nOUT.append(outer{k}())",
    # a checkpoint round trip (TP301)
    "import io\nbuf{k} = io.BytesIO()\nT.save(T.ones(2), buf{k})\nbuf{k}.seek(0)\n"
    "OUT.append(T.load(buf{k}, weights_only=True))",
    # an existing device that means the accelerator choice
    'device = T.device("cuda" if T.cuda.is_available() else "cpu")\nOUT.append(T.ones(1).cuda())',
    # `device` bound by `global`, in a class body, by a comprehension; a torch submodule alias
    'def gd{k}():\n    global device\n    device = "cpu"\n    return T.ones(1).cuda()\n'
    "OUT.append(gd{k}())",
    'class C{k}:\n    device = "cpu"\n    x = T.ones(1).cuda()\n    def get(self):\n'
    "        return self.x.cuda(), self.device\nOUT.append(C{k}().get())",
    'OUT.append([t.cuda() for device in ["cpu"] for t in [T.ones(1)]])',
    "from torch import cuda as cu{k}\ncu{k}.manual_seed(0)\nOUT.append(T.rand(1))",
    # torch imported only inside a function
    "def lazy{k}():\n    import torch as tt\n    return tt.ones(1).cuda()\nOUT.append(lazy{k}())",
]

WRAPPERS = ("module", "function", "if")
_T = re.compile(r"\bT\.")


def _indent(text: str, by: str = "    ") -> str:
    return "".join(by + line if line.strip() else line for line in text.splitlines(True))


@st.composite
def programs(draw: st.DrawFn) -> str:
    """One program: a header, maybe a star import or a `device` with another meaning, fragments."""
    header = draw(st.sampled_from(sorted(HEADERS)))
    alias = ALIASES.get(header, "torch")
    parts = [HEADERS[header]]
    if header == "from_only":
        parts.append("import torch\n")  # fragments need torch; `from torch` comes first
    if draw(st.booleans()):
        parts.append("from fuzzcfg import *\nOUT.append(device)\n")
    if draw(st.booleans()):
        parts.append('device = "cpu"\nOUT.append(device)\n')
    chosen = draw(st.lists(st.integers(0, len(FRAGMENTS) - 1), min_size=1, max_size=4))
    for k, index in enumerate(chosen):
        body = _T.sub(f"{alias}.", FRAGMENTS[index].replace("{k}", str(k))) + "\n"
        wrapper = draw(st.sampled_from(WRAPPERS))
        if wrapper == "function" and "global" not in body and "import io" not in body:
            body = f"def main{k}():\n{_indent(body)}main{k}()\n"
        elif wrapper == "if":
            body = f"if OUT is not None:\n{_indent(body)}"
        parts.append(body)
    return "\n".join(parts)
