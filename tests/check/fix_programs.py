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

Look-alikes that no fix may touch: libraries that use torch's names for their
own things (numba's and CuPy's ``cuda``, JAX and TensorFlow device strings,
``device=`` arguments of functions that are not torch's), imports of them at
module level, inside functions and under ``if``, parameters and attributes
named ``torch``/``cuda``, and an ``amp`` rebound to an object of the program's.
The runner installs recording stand-ins for those libraries
(:func:`lookalike_modules`): every call they get lands in ``OUT``, so a fix that
rewrote one of them changes the output.

Device choices whose fix changes where data lives: the CUDA-or-CPU idiom with
everything moved through it, with a model that is never moved, moved only when
CUDA is there, or held by an object (``self.device``), with the device passed
to a function; the fix must be offered only where everything follows it.

Programs use ``T`` for torch's name in the fragments below; the header decides
what ``T`` is (``torch`` or an alias). Every ``{k}`` becomes a per-fragment
number so names do not collide.
"""

from __future__ import annotations

import importlib.machinery
import re
import types
from typing import Any

from hypothesis import strategies as st

__all__ = [
    "DYNAMIC_FRAGMENTS",
    "DYNAMIC_MODULE",
    "FRAGMENTS",
    "NOT_TORCH",
    "PROJECT_FRAGMENTS",
    "PROJECT_MODULE",
    "STAR_MODULE",
    "lookalike_modules",
    "programs",
    "project_programs",
]

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
    # a cast to another tensor's legacy type name (TP111), moved to its device after or not
    "h{k} = T.ones(2, dtype=T.float64).cuda()\n"
    "OUT.append(T.zeros(2, 1).type(h{k}.type()).to(h{k}.device))",
    "h{k} = T.ones(2).half().cuda()\nOUT.append(T.arange(3).type(h{k}.type()))",
]

# Other libraries' `cuda`, device strings and `device=`, and names that only look like torch's.
LOOKALIKES = [
    # numba's cuda at module level, torch's in one function (the resolver must not mix them)
    "from numba import cuda\ndef helper{k}():\n    from torch import cuda\n"
    "    return cuda.is_available()\ndef kernel_sync{k}():\n    cuda.synchronize()\n"
    "OUT.append(helper{k}())\nkernel_sync{k}()\nOUT.append(cuda.device_count())",
    "import numba.cuda\nnumba.cuda.synchronize()\nOUT.append(numba.cuda.is_available())",
    "from numba import cuda as nbc{k}\nOUT.append(nbc{k}.to_device([1, 2]))\nnbc{k}.synchronize()",
    # CuPy
    "import cupy as cp{k}\nwith cp{k}.cuda.Device(0):\n    OUT.append(cp{k}.asarray([1, 2]))\n"
    "cp{k}.cuda.Stream.null.synchronize()\nOUT.append(cp{k}.cuda.runtime.getDeviceCount())",
    "from cupy import cuda\ncuda.Device(0).use()\nOUT.append(cuda.runtime.getDeviceCount())",
    # JAX and TensorFlow device strings
    'import jax\nOUT.append(jax.devices("cuda"))\nOUT.append(jax.device_put([1.0], device="cuda"))',
    'import tensorflow as tf\nwith tf.device("/GPU:0"):\n    OUT.append(tf.constant(1))\n'
    'OUT.append(tf.config.list_physical_devices("GPU"))',
    'import tensorflow as tf\nwith tf.device("cuda:0"):\n    OUT.append(tf.constant(2))',
    # device= of functions that are not torch's
    'def pipeline{k}(task, device="cuda"):\n    return task, device\n'
    'OUT.append(pipeline{k}("t", device="cuda:0"))\nOUT.append(pipeline{k}("t"))',
    'from types import SimpleNamespace\ncfg{k} = SimpleNamespace(device="cuda", n=2)\n'
    "OUT.append(cfg{k}.device)",
    'import jax\nOUT.append(jax.jit(lambda v: v, device="cuda")(3))',
    # conditional imports of two libraries' cuda
    "if OUT is not None:\n    from numba import cuda\nelse:\n    from torch import cuda\n"
    "cuda.synchronize()\nOUT.append(cuda.is_available())",
    "try:\n    from numba import cuda\nexcept ImportError:\n    cuda = None\n"
    "if cuda is not None:\n    cuda.synchronize()",
    # parameters and attributes named torch / cuda, a local object called amp
    "class FakeCuda{k}:\n    def synchronize(self):\n        OUT.append('own sync')\n"
    "    def is_available(self):\n        return True\n    def device_count(self):\n"
    "        return 5\n    def manual_seed(self, s):\n        OUT.append(('own seed', s))\n"
    "class FakeTorch{k}:\n    cuda = FakeCuda{k}()\n"
    "def step{k}(torch, x):\n    torch.cuda.synchronize()\n    torch.cuda.manual_seed(1)\n"
    "    return torch.cuda.device_count(), x\n"
    "OUT.append(step{k}(FakeTorch{k}(), T.ones(1)))\n"
    "def other{k}(cuda):\n    cuda.synchronize()\n    return cuda.is_available()\n"
    "OUT.append(other{k}(FakeCuda{k}()))\n"
    "class Holder{k}:\n    def __init__(self):\n        self.torch = FakeTorch{k}()\n"
    "        self.cuda = FakeCuda{k}()\n    def go(self):\n        self.cuda.synchronize()\n"
    "        self.torch.cuda.synchronize()\n        return self.torch.cuda.device_count()\n"
    "OUT.append(Holder{k}().go())",
    "import contextlib\nfrom torch.cuda import amp\nclass MyAmp{k}:\n"
    "    def autocast(self, enabled=True):\n        OUT.append(('own autocast', enabled))\n"
    "        return contextlib.nullcontext()\n"
    "    def GradScaler(self):\n        return 'own scaler'\n"
    "amp = MyAmp{k}()\nwith amp.autocast():\n    OUT.append(T.ones(1) * 2)\n"
    "OUT.append(amp.GradScaler())",
    "def lazy_numba{k}():\n    from numba import cuda\n    cuda.synchronize()\n"
    "    return cuda.device_count()\nOUT.append(lazy_numba{k}())",
]

# The CUDA-or-CPU idiom and what meets the device it picks.
DEVICE_CHOICES = [
    # a name `device` that holds no device: never the one a fix moves to
    "def run{k}(x, device=['cpu']):\n    return x.cuda(), device[0]\nOUT.append(run{k}(T.ones(1)))",
    "class Agent{k}:\n    def __init__(self):\n        self.device = None\n"
    "    def act(self, x):\n        return x.cuda()\nOUT.append(Agent{k}().act(T.ones(1)))",
    # everything follows the device
    'dev{k} = T.device("cuda" if T.cuda.is_available() else "cpu")\n'
    "T.manual_seed(0)\nm{k} = T.nn.Linear(2, 2).to(dev{k})\n"
    "OUT.append(m{k}(T.ones(1, 2).to(dev{k})).detach())",
    'dev{k} = "cuda" if T.cuda.is_available() else "cpu"\n'
    "OUT.append(T.zeros(2, device=dev{k}) + T.ones(2).to(dev{k}))\n"
    'OUT.append(dev{k} == "cuda")',
    # the model is never moved: worked on the CPU only, fails once the device changes
    'dev{k} = T.device("cuda" if T.cuda.is_available() else "cpu")\n'
    "T.manual_seed(0)\nm{k} = T.nn.Linear(2, 2)\n"
    "OUT.append(m{k}(T.ones(1, 2).to(dev{k})).detach())",
    # moved only when CUDA is there
    'dev{k} = T.device("cuda" if T.cuda.is_available() else "cpu")\n'
    "T.manual_seed(0)\nm{k} = T.nn.Linear(2, 2)\nif T.cuda.is_available():\n"
    "    m{k}.cuda()\nOUT.append(m{k}(T.ones(1, 2).to(dev{k})).detach())",
    # a tensor made on the CPU meets one moved to the device
    'dev{k} = "cuda" if T.cuda.is_available() else "cpu"\n'
    "mask{k} = T.ones(2)\nOUT.append(T.ones(2).to(dev{k}) * mask{k})",
    # an object holds the device; its model comes from elsewhere and is never moved
    "class Runner{k}:\n    def __init__(self, model):\n"
    '        self.device = "cuda" if T.cuda.is_available() else "cpu"\n'
    "        self.model = model\n    def __call__(self, x):\n"
    "        return self.model(x.to(self.device)).detach()\n"
    "T.manual_seed(0)\nOUT.append(Runner{k}(T.nn.Linear(2, 2))(T.ones(1, 2)))",
    # the device passed to a function, the model to another
    "def train{k}(model, x, device):\n    return model(x.to(device)).detach()\n"
    'dev{k} = T.device("cuda" if T.cuda.is_available() else "cpu")\n'
    "T.manual_seed(0)\nnet{k} = T.nn.Linear(2, 2)\n"
    "OUT.append(train{k}(net{k}, T.ones(1, 2), dev{k}))",
    "def train{k}(model, x, device):\n    return model(x.to(device)).detach()\n"
    'dev{k} = T.device("cuda" if T.cuda.is_available() else "cpu")\n'
    "T.manual_seed(0)\nnet{k} = T.nn.Linear(2, 2).to(dev{k})\n"
    "OUT.append(train{k}(net{k}, T.ones(1, 2), dev{k}))",
    # inline idiom, a helper whose result meets a CPU model
    "def put{k}(x):\n"
    '    return x.to(T.device("cuda" if T.cuda.is_available() else "cpu"))\n'
    "T.manual_seed(0)\nlin{k} = T.nn.Linear(2, 2)\n"
    "OUT.append(lin{k}(put{k}(T.ones(1, 2))).detach())",
    # a checkpoint loaded onto the device: meets a CPU tensor, or only load_state_dict
    "import io\nbuf{k} = io.BytesIO()\nT.save(T.ones(2), buf{k})\nbuf{k}.seek(0)\n"
    "w{k} = T.load(buf{k}, weights_only=True)\nOUT.append(w{k} + T.ones(2))",
    "import io\nT.manual_seed(0)\nlin{k} = T.nn.Linear(2, 2)\nbuf{k} = io.BytesIO()\n"
    "T.save({'net': lin{k}.state_dict()}, buf{k})\nbuf{k}.seek(0)\n"
    "lin{k}.load_state_dict(T.load(buf{k}, weights_only=True)['net'])\n"
    "OUT.append(lin{k}(T.ones(1, 2)).detach())",
    # a tensor's is_cuda decides a branch that names CUDA, or one that does not
    "acc{k} = T.accelerator.current_accelerator() if T.accelerator.is_available() else 'cpu'\n"
    "x{k} = T.ones(2).to(acc{k})\nd{k} = 'cpu'\nif x{k}.is_cuda:\n    d{k} = 'cuda'\n"
    "OUT.append(T.ones(1).to(d{k}))",
    "acc{k} = T.accelerator.current_accelerator() if T.accelerator.is_available() else 'cpu'\n"
    "x{k} = T.ones(2).to(acc{k})\nif x{k}.is_cuda:\n    x{k} = x{k} * 2\nOUT.append(x{k})",
    # the device decides a branch
    'dev{k} = T.device("cuda" if T.cuda.is_available() else "cpu")\n'
    'if dev{k}.type != "cpu":\n    OUT.append(T.ones(1).cuda())\nelse:\n'
    "    OUT.append(T.ones(1).to(dev{k}))",
]

# Calls that are not torch's though they look it (a class of the program with its own
# `.cuda()`/`.to()`, a config whose `.to()` takes a string), CUDA used on purpose to fail
# (a negative test), device values used as data, and torch bound through a compatibility
# module: no fix may change what any of them records.
NOT_TORCH = [
    # a batch class of the same file with its own `.cuda()` and `.to()`
    "class Batch{k}:\n    def __init__(self, x):\n        self.x = x\n"
    "    def cuda(self, non_blocking=False):\n        OUT.append(('own cuda', non_blocking))\n"
    "        return self\n    def to(self, where):\n        OUT.append(('own to', str(where)))\n"
    "        return self\n"
    "b{k} = Batch{k}(T.ones(1)).cuda()\nOUT.append(b{k}.x)\n"
    "b{k} = b{k}.cuda(non_blocking=True)\nOUT.append(Batch{k}(2).to('cuda:0').x)",
    # a subclass of it, and a module subclass overriding `.cuda()`
    "class Base{k}:\n    def cuda(self):\n        OUT.append('base cuda')\n        return self\n"
    "class Sub{k}(Base{k}):\n    pass\ns{k} = Sub{k}()\ns{k}.cuda()",
    "class Net{k}(T.nn.Module):\n    def cuda(self, device=None):\n"
    "        OUT.append('own module cuda')\n        return self\n"
    "n{k} = Net{k}().cuda()\nOUT.append(type(n{k}).__name__)",
    # a node class with its own `.type()` (a type name in, a kind out)
    "class Node{k}:\n    def __init__(self, kind):\n        self.kind = kind\n"
    "    def type(self, kind=None):\n        return self.kind if kind is None else Node{k}(kind)\n"
    "    device = 'cuda'\n    def to(self, where):\n        return self\n"
    "n{k} = Node{k}('conv').type(Node{k}('relu').type())\nOUT.append(n{k}.kind)\n"
    "m{k} = Node{k}('a')\nOUT.append(Node{k}('b').type(m{k}.type()).to(m{k}.device).kind)",
    # a config object whose `.to()` takes a string
    "class Cfg{k}:\n    def to(self, where):\n        return ('cfg', where)\n"
    "OUT.append(Cfg{k}().to('cuda'))\ncfg{k} = Cfg{k}()\nOUT.append(cfg{k}.to('cuda:1'))",
    # a negative test: CUDA used on purpose, expected to fail without it
    "import unittest\ndef neg{k}():\n"
    "    with unittest.TestCase().assertRaises((RuntimeError, AssertionError)):\n"
    "        T.ones(1).cuda()\n    return 'raised'\n"
    "try:\n    OUT.append(neg{k}())\nexcept AssertionError:\n    OUT.append('no raise')",
    "try:\n    OUT.append(T.ones(1, device='cuda').device.type)\n"
    "except (RuntimeError, AssertionError):\n    OUT.append('no cuda')",
    # device values used as data
    "def gld{k}():\n    return T.device('cuda:3')\nassert gld{k}() == T.device('cuda:3')\n"
    "OUT.append(gld{k}() == T.device('cuda:3'))",
    "t{k} = T.ones(1).cuda()\nOUT.append(t{k}.device == T.device('cuda'))",
    "OUT.append(T.device('cuda') in (T.device('cuda'), T.device('cpu')))",
    # torch bound through a compatibility module
    "from fuzzcompat import torch as ct{k}\nOUT.append(ct{k}.ones(1).cuda())",
    # a torch device given to the program's own `.to()`: made by a factory, or a module's override
    "class Box{k}:\n    def to(self, where=None, device=None):\n"
    "        OUT.append(('own to', str(where), str(device)))\n"
    "        return self\ndef make{k}():\n    return Box{k}()\n"
    "make{k}().to(T.device('cuda'))\nb{k} = make{k}()\nb{k} = b{k}.to(device=T.device('cuda'))",
    "class Net{k}(T.nn.Module):\n    def to(self, *a, **kw):\n"
    "        OUT.append(('own module to', [str(v) for v in a]))\n        return self\n"
    "n{k} = Net{k}()\nn{k} = n{k}.to(T.device('cuda'))",
    # device values as data: keys, a lookup, the kinds a test tries
    "names{k} = {T.device('cuda'): 'gpu', T.device('cpu'): 'host'}\n"
    "OUT.append(names{k}[T.device('cuda')])\nOUT.append(len(names{k}))",
    "kinds{k} = [T.device('cpu'), T.device('cuda')]\nOUT.append(sorted(str(d) for d in kinds{k}))",
    "import pytest\n@pytest.mark.parametrize('dev', [T.device('cpu'), T.device('cuda')])\n"
    "def test_kind{k}(dev):\n    return dev\n"
    "OUT.append([str(d) for d in test_kind{k}.pytestmark[0].args[1]])",
    # issue 34: a class SUBCLASSING a base of the program that defines `.cuda()`/`.to(str)`:
    # a mixin before torch's base (its methods come first), a module base of its own, a chain
    # with its own `__init__`, a subclass calling `self.cuda()`, a classmethod making one
    "class Mover{k}:\n    def cuda(self, device=None):\n        OUT.append('mover cuda')\n"
    "        return self\n    def to(self, *a, **kw):\n"
    "        OUT.append(('mover to', [str(v) for v in a]))\n        return self\n"
    "class Net{k}(Mover{k}, T.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.lin = T.nn.Linear(2, 2)\n"
    "n{k} = Net{k}().cuda()\nn{k} = n{k}.to('cuda')\nOUT.append(n{k}.lin.weight.device.type)",
    "class Mover{k}:\n    def cuda(self, device=None):\n        OUT.append('mover cuda')\n"
    "        return self\nclass Mid{k}(Mover{k}):\n    pass\n"
    "class Net{k}(Mid{k}, T.nn.Linear):\n    def __init__(self):\n        super().__init__(2, 2)\n"
    "OUT.append(Net{k}().cuda().weight.device.type)",
    "class Base{k}(T.nn.Module):\n    def cuda(self, device=None):\n"
    "        OUT.append('base module cuda')\n        return self\n"
    "class Sub{k}(Base{k}):\n    def __init__(self):\n        super().__init__()\n"
    "        self.w = T.nn.Parameter(T.ones(1))\n"
    "s{k} = Sub{k}().cuda()\nOUT.append(s{k}.w.device.type)",
    "class Base{k}:\n    def __init__(self, where='cpu'):\n        self.where = where\n"
    "    def to(self, where):\n        OUT.append(('base to', where))\n"
    "        return type(self)(where)\nclass Mid{k}(Base{k}):\n"
    "    def __init__(self, where='cpu'):\n        super().__init__(where)\n"
    "        OUT.append('mid')\nclass Leaf{k}(Mid{k}):\n    pass\n"
    "leaf{k} = Leaf{k}().to('cuda')\nOUT.append(leaf{k}.where)\n"
    "OUT.append(Leaf{k}('x').to('cuda:0').where)",
    "class Base{k}:\n    def cuda(self):\n        OUT.append('own cuda')\n        return self\n"
    "    @classmethod\n    def make(cls):\n        return cls()\n"
    "class Sub{k}(Base{k}):\n    def ready(self):\n        return self.cuda()\n"
    "Sub{k}().ready()\nSub{k}.make().cuda()",
    # a method reached through `functools.partial` or a bound-method alias
    "import functools\nclass Batch{k}:\n    def __init__(self, x=1):\n        self.x = x\n"
    "    def cuda(self, non_blocking=False):\n        OUT.append(('batch cuda', non_blocking))\n"
    "        return self\n    def to(self, where):\n        OUT.append(('batch to', str(where)))\n"
    "        return self\nb{k} = Batch{k}()\nmv{k} = b{k}.cuda\nmv{k}()\n"
    "functools.partial(b{k}.to, 'cuda')()\nmk{k} = functools.partial(Batch{k}, 2)\n"
    "mk{k}().cuda(non_blocking=True)\nOUT.append(mk{k}().to('cuda:0').x)\n"
    "getattr(b{k}, 'cuda')()\nBatch{k}.cuda(b{k})",
    "import functools\nt{k} = T.ones(2)\nmv{k} = t{k}.cuda\nOUT.append(mv{k}())\n"
    "to{k} = functools.partial(t{k}.to, 'cuda')\nOUT.append(to{k}())\n"
    "lin{k} = functools.partial(T.nn.Linear, 2, 2)\n"
    "OUT.append(lin{k}().cuda().weight.device.type)",
    # `typing.cast` and `# type:` hints that name torch's types for an object of the program
    "from typing import cast\nclass Batch{k}:\n    def cuda(self):\n"
    "        OUT.append('batch cuda')\n        return self\n    def to(self, where):\n"
    "        OUT.append(('batch to', where))\n        return self\n"
    "b{k} = cast(T.Tensor, Batch{k}())\nb{k}.cuda()\n"
    "c{k} = Batch{k}()  # type: T.Tensor\nc{k}.to('cuda')\n"
    "d{k}: T.Tensor = Batch{k}()\nd{k}.cuda()\n"
    "def move{k}(x: T.Tensor) -> T.Tensor:\n    return x.to('cuda')\nmove{k}(Batch{k}())\n"
    "e{k} = cast('T.nn.Module', Batch{k}())\ne{k}.cuda()",
    "from typing import cast\nclass Holder{k}:\n    def cuda(self):\n"
    "        OUT.append('holder cuda')\n        return self\n"
    "t{k} = cast(Holder{k}, T.ones(1))\nOUT.append(t{k}.cuda())",
    # issue 34 (c34ag): a device method given to a class or an object after its definition:
    # `type(...)` with one in its namespace, `Cls.cuda = f`, `setattr(Cls, "cuda", f)` on a
    # module subclass, an instance's own, a decorator's `cls.cuda = f`
    "def cu{k}(self, *a, **kw):\n    OUT.append('given cuda')\n    return self\n"
    "Box{k} = type('Box{k}', (), {'cuda': cu{k}})\nb{k} = Box{k}()\nb{k}.cuda()\n"
    "OUT.append(type(Box{k}().cuda()).__name__)",
    "class Net{k}(T.nn.Module):\n    pass\n"
    "def cu{k}(self, *a, **kw):\n    OUT.append('patched cuda')\n    return self\n"
    "Net{k}.cuda = cu{k}\nn{k} = Net{k}().cuda()\nOUT.append(type(n{k}).__name__)",
    "class Head{k}(T.nn.Linear):\n    pass\n"
    "def to{k}(self, *a, **kw):\n    OUT.append(('set to', [str(v) for v in a]))\n"
    "    return self\nsetattr(Head{k}, 'to', to{k})\nh{k} = Head{k}(2, 2)\n"
    "h{k} = h{k}.cuda()\nh{k}.to('cuda')\nOUT.append(h{k}.weight.device.type)",
    "m{k} = T.nn.Linear(2, 2)\n"
    "m{k}.cuda = lambda *a, **kw: OUT.append('instance cuda') or m{k}\n"
    "OUT.append(m{k}.cuda().weight.device.type)",
    "def movable{k}(cls):\n    def cu(self, *a, **kw):\n        OUT.append('decorated cuda')\n"
    "        return self\n    cls.cuda = cu\n    return cls\n"
    "@movable{k}\nclass Net{k}(T.nn.Module):\n    pass\n"
    "OUT.append(type(Net{k}().cuda()).__name__)",
]

# issue 34: a second module of the project (``fuzzproj.py`` beside the program, installed as
# a module when it runs) whose classes have their own `.cuda()`/`.to(str)` and whose
# functions return them, or torch's objects; the program is fixed as a file of that project.
PROJECT_MODULE = (
    "import torch\n\n\nclass Batch:\n    def __init__(self, x=None):\n        self.x = x\n\n"
    "    def cuda(self, non_blocking=False):\n        OUT.append(('proj cuda', non_blocking))\n"
    "        return self\n\n    def to(self, where):\n        OUT.append(('proj to', str(where)))\n"
    "        return self\n\n\nclass Mover:\n    def cuda(self, device=None):\n"
    "        OUT.append('proj mover cuda')\n        return self\n\n\n"
    "class Plain:\n    pass\n\n\nclass SubBatch(Batch):\n    pass\n\n\n"
    "def make_batch():\n    return Batch(torch.ones(1))\n\n\n"
    "def make_sub():\n    return SubBatch()\n\n\n"
    "def make_tensor():\n    return torch.ones(2)\n\n\n"
    "def make_model():\n    return torch.nn.Linear(2, 2)\n\n\n"
    "batch = Batch()\n"
)
# issue 34 (c34ag): a module of the project giving device methods at run time (``fuzzdyn.py``)
DYNAMIC_MODULE = (
    "import torch\n\n\ndef _cuda(self, *a, **kw):\n"
    "    OUT.append('dyn cuda')\n    return self\n\n\n"
    "Box = type('Box', (), {'cuda': _cuda})\n\n\n"
    "class Net(torch.nn.Module):\n    pass\n\n\nNet.cuda = _cuda\n\n\n"
    "class Plain:\n    pass\n\n\nsetattr(Plain, 'cuda', _cuda)\n\n\n"
    "def make_box():\n    return Box()\n\n\ndef make_plain():\n    return Plain()\n\n\n"
    "def make_net():\n    return Net()\n"
)
DYNAMIC_FRAGMENTS = [
    "from fuzzdyn import Box, Net\nb{k} = Box()\nb{k}.cuda()\n"
    "OUT.append(type(Net().cuda()).__name__)",
    "from fuzzdyn import make_box, make_plain, make_net\nmake_box().cuda()\n"
    "p{k} = make_plain()\np{k}.cuda()\nOUT.append(type(make_net().cuda()).__name__)",
    "import fuzzdyn\nfuzzdyn.Box().cuda()\nfuzzdyn.Plain().cuda()\n"
    "n{k} = fuzzdyn.Net()\nn{k} = n{k}.cuda()\nOUT.append(type(n{k}).__name__)",
    "from fuzzdyn import Net\nclass Sub{k}(Net):\n    pass\n"
    "OUT.append(type(Sub{k}().cuda()).__name__)",
]
PROJECT_FRAGMENTS = [
    # instances of the other module's classes, made there or here
    "from fuzzproj import make_batch\nb{k} = make_batch()\nb{k}.cuda()\nb{k} = b{k}.to('cuda')\n"
    "make_batch().cuda(non_blocking=True)\nOUT.append(b{k}.x)",
    "import fuzzproj\nfuzzproj.make_batch().to('cuda:0')\nfuzzproj.make_sub().cuda()\n"
    "fuzzproj.batch.cuda()\nfuzzproj.Batch(1).to(T.device('cuda'))",
    "from fuzzproj import SubBatch, make_sub\ns{k} = make_sub()\ns{k}.to('cuda')\n"
    "SubBatch(2).cuda()",
    # torch's objects that the other module's functions return
    "from fuzzproj import make_tensor, make_model\nt{k} = make_tensor()\nt{k} = t{k}.to('cuda')\n"
    "OUT.append(t{k})\nOUT.append(make_tensor().cuda())\n"
    "m{k} = make_model().cuda()\nOUT.append(m{k}.weight.device.type)",
    # a class of the program subclassing the other module's: alone, or beside torch's base
    "from fuzzproj import Batch, Mover\nclass Leaf{k}(Batch):\n    pass\n"
    "Leaf{k}().cuda()\nLeaf{k}(3).to('cuda')\nclass Net{k}(Mover, T.nn.Module):\n    pass\n"
    "OUT.append(type(Net{k}().cuda()).__name__)",
    "from fuzzproj import Plain\nclass Net{k}(Plain, T.nn.Module):\n"
    "    def __init__(self):\n        super().__init__()\n"
    "        self.w = T.nn.Parameter(T.ones(1))\n"
    "OUT.append(Net{k}().cuda().w.device.type)",
    # a parameter hinted as torch's that gets the other module's object
    "from typing import cast\nfrom fuzzproj import make_batch\n"
    "def move{k}(x: T.Tensor) -> T.Tensor:\n    return x.cuda()\nmove{k}(make_batch())\n"
    "c{k} = cast(T.Tensor, make_batch())\nc{k}.to('cuda')",
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
    chosen = draw(st.lists(st.sampled_from(ALL_FRAGMENTS), min_size=1, max_size=4))
    for k, fragment in enumerate(chosen):
        body = _T.sub(f"{alias}.", fragment.replace("{k}", str(k))) + "\n"
        wrapper = draw(st.sampled_from(WRAPPERS))
        if wrapper == "function" and "global" not in body and "import" not in body:
            body = f"def main{k}():\n{_indent(body)}main{k}()\n"
        elif wrapper == "if":
            body = f"if OUT is not None:\n{_indent(body)}"
        parts.append(body)
    return "\n".join(parts)


ALL_FRAGMENTS = FRAGMENTS + LOOKALIKES + DEVICE_CHOICES + NOT_TORCH


@st.composite
def project_programs(draw: st.DrawFn) -> tuple[str, dict[str, str]]:
    """A program of a project (:data:`PROJECT_MODULE` beside it): fragments of that module's
    objects, maybe with the ones of one file; the program and the project's other modules."""
    chosen = draw(st.lists(st.sampled_from(PROJECT_FRAGMENTS), min_size=1, max_size=3))
    dynamic = draw(st.lists(st.sampled_from(DYNAMIC_FRAGMENTS), max_size=2))
    chosen += dynamic + draw(st.lists(st.sampled_from(ALL_FRAGMENTS), max_size=2))
    parts = ["import torch\n"]
    for k, fragment in enumerate(chosen):
        body = _T.sub("torch.", fragment.replace("{k}", str(k))) + "\n"
        if draw(st.booleans()) and "global" not in body:
            body = f"def main{k}():\n{_indent(body)}main{k}()\n"
        parts.append(body)
    modules = {"fuzzproj": PROJECT_MODULE} | ({"fuzzdyn": DYNAMIC_MODULE} if dynamic else {})
    return "\n".join(parts), modules


class _Recorder:
    """A stand-in for another library's object: every call lands in ``out``, named by its path."""

    def __init__(self, path: str, out: list[Any]) -> None:
        self._path, self._out = path, out

    def __getattr__(self, name: str) -> _Recorder:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Recorder(f"{self._path}.{name}", self._out)

    def __call__(self, *args: Any, **kwargs: Any) -> _Recorder:
        shown = [_stable(a) for a in args]
        named = sorted((k, _stable(v)) for k, v in kwargs.items())
        self._out.append((self._path, repr(shown), repr(named)))
        if self._path.endswith(".jit"):
            return lambda *a, **k: a[0] if a else None  # type: ignore[return-value]
        return _Recorder(f"{self._path}()", self._out)

    def __enter__(self) -> _Recorder:
        self._out.append((self._path, "enter"))
        return self

    def __exit__(self, *exc: object) -> None:
        self._out.append((self._path, "exit"))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Recorder) and other._path == self._path

    def __hash__(self) -> int:
        return hash(self._path)

    def __repr__(self) -> str:
        return f"<{self._path}>"


# What each stand-in module has: only what the fragments use. Anything else is an
# AttributeError, as torch (which probes `sys.modules` for some of these) expects.
def _stable(value: Any) -> Any:
    """What a recorded argument is, without addresses (a lambda differs from run to run)."""
    return "<callable>" if callable(value) and not isinstance(value, _Recorder) else value


_LOOKALIKE_MODULES = {
    "numba": ("cuda",),
    "numba.cuda": ("synchronize", "is_available", "device_count", "to_device", "jit"),
    "cupy": ("cuda", "asarray"),
    "cupy.cuda": ("Device", "Stream", "runtime"),
    "jax": ("devices", "device_put", "jit"),
    "tensorflow": ("device", "constant", "config"),
}


def lookalike_modules(out: list[Any]) -> dict[str, types.ModuleType]:
    """Modules standing in for numba, CuPy, JAX and TensorFlow, recording their calls in ``out``."""
    modules: dict[str, types.ModuleType] = {}
    for name, attrs in _LOOKALIKE_MODULES.items():
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)  # others ask find_spec
        for attr in attrs:
            setattr(module, attr, _Recorder(f"{name}.{attr}", out))
        modules[name] = module
    for name, module in modules.items():
        head, _, tail = name.rpartition(".")
        if head:
            setattr(modules[head], tail, module)
    return modules


# ------------------------------------------------------ device choices and what meets them

_CHOICES = (
    'dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    'dev = "cuda" if torch.cuda.is_available() else "cpu"',
    'dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")',
)
_MODELS = (
    "m = torch.nn.Linear(2, 2)",
    "m = torch.nn.Linear(2, 2).to(dev)",
    "m = torch.nn.Linear(2, 2)\nm.to(dev)",
    "m = torch.nn.Linear(2, 2)\nm = m.to(dev)",
    "m = torch.nn.Linear(2, 2)\nif torch.cuda.is_available():\n    m = m.cuda()",
    "m = torch.nn.Linear(2, 2, device=dev)",
    "m = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()).eval().to(dev)",
)
_INPUTS = (
    "x = torch.ones(1, 2)",
    "x = torch.ones(1, 2).to(dev)",
    "x = torch.ones(1, 2)\nx = x.to(dev)",
    "x = torch.ones(1, 2, device=dev)",
)
_USES = (
    "y = m(x)",
    "y = m(x.to(dev))",
    "def run(model, inp, device):\n    return model(inp.to(device))\ny = run(m, x, dev)",
    "def put(t):\n    return t.to(dev)\ny = m(put(x))",
    "class Runner:\n    def __init__(self, model):\n        self.model = model\n"
    "    def __call__(self, t):\n        return self.model(t.to(dev))\ny = Runner(m)(x)",
    "y = m(x)\nb = torch.zeros(2)\ny = y + b",
    "y = m(x)\nb = torch.zeros(2).to(dev)\ny = y + b",
)
_SHOWS = (
    "OUT.append(y.detach())",
    'OUT.append((y.detach(), dev == "cuda"))',
    'OUT.append(y.sum().item() if str(dev) != "cpu" else 0)',
    'OUT.append(f"on {dev}")\nOUT.append(y.shape)',
    'OUT.append(y.detach() if dev != "cuda" else None)',
)


@st.composite
def device_programs(draw: st.DrawFn) -> str:
    """A CUDA-or-CPU choice, a model, an input, how they meet, and what is recorded.

    Whatever the combination, ``fix --unsafe`` may rewrite the choice only where
    the program then still runs on a machine with another accelerator.
    """
    parts = [
        draw(st.sampled_from(_CHOICES)),
        "torch.manual_seed(0)",
        draw(st.sampled_from(_MODELS)),
        draw(st.sampled_from(_INPUTS)),
        draw(st.sampled_from(_USES)),
        draw(st.sampled_from(_SHOWS)),
    ]
    body = "\n".join(parts) + "\n"
    if draw(st.booleans()):
        body = f"def main():\n{_indent(body)}main()\n"
    return "import torch\n" + body
