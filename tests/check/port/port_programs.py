"""Hypothesis strategies for small programs that stress what ``port`` and ``fix --unsafe`` check.

Each program records what it computes with ``OUT.append(...)`` (``OUT`` is a list
the runner provides), so an original and its ported or fixed version can be run
side by side. The fragments are drawn from the ways a port used to break
working code or leave data on the CPU:

* function parameters that are floats, strings, booleans, classes, ``None``
  defaults, tensors, or unknown (a function nobody in the file calls, as a
  test's pytest parameters);
* loops over strings, floats, ``range``, a ``DataLoader``, ``enumerate`` and
  ``zip`` of loaders, a tensor's rows, and over something the port cannot see;
* typed constructors (``torch.LongTensor([...])``, ``Variable(...)``), tensors
  made in a function and returned, ``torch.load``, numpy arrays from a
  scikit-learn-like transform, a library that returns a CPU tensor;
* a model loaded with placement or quantization options (a fake
  ``transformers`` whose placed models refuse ``.to()``, as 8-bit ones do), an
  optimizer subclass and a module that make tensors in ``step``/``forward``;
* parenthesised and compound ``.numpy()`` receivers, ``torch.cuda.amp`` calls
  with a string ``device``;
* models trained by hand (raw ``requires_grad`` tensors, ``nn.Parameter``), a
  helper that returns a numpy-built mask, tensors captured by a lambda or a
  closure, a cast chained to a new tensor, sparse inputs, a deliberate CPU
  constant and a device flag;
* plain classes whose methods meet the model's output, called through instances
  (bound here, an attribute of another object, an annotated parameter, a receiver
  whose class cannot be known), and a function given the output that makes a tensor;
* modules with no torch at all (which ``port`` must leave byte for byte).

Programs use ``T`` for torch's name in the fragments; the header decides what
``T`` is. Every ``{k}`` becomes a per-fragment number so names do not collide.
The fake libraries live in :data:`FAKE_MODULES` (the runner installs them).
"""

from __future__ import annotations

import re
import types
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

__all__ = ["FAKE_MODULES", "NO_TORCH", "programs"]


# ---------------------------------------------------------------- fake libraries


class _StandardScaler:
    """scikit-learn's shape: numpy in, numpy out."""

    def fit_transform(self, a: Any) -> np.ndarray:
        arr = np.asarray(a, dtype=np.float32)
        return (arr - arr.mean()) / (arr.std() + 1.0)

    transform = fit_transform


def _load_image() -> torch.Tensor:
    return torch.ones(1, 4)  # a library's tensor: on the CPU


class _Placed(torch.nn.Linear):
    """A model its loader placed or quantized: ``.to()`` refuses, as an 8-bit model does."""

    def to(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        raise ValueError("`.to` is not supported for placed or quantized models")


class _AutoModel:
    @staticmethod
    def from_pretrained(name: str, **options: Any) -> torch.nn.Module:
        torch.manual_seed(0)
        placed = any(
            options.get(k) not in (None, False)
            for k in ("device_map", "load_in_8bit", "load_in_4bit", "quantization_config")
        )
        if not placed:
            return torch.nn.Linear(4, 2)
        model = _Placed(4, 2)
        if torch.accelerator.is_available():  # device_map="auto": on the accelerator
            target = torch.accelerator.current_accelerator()
            torch.nn.Module.to(model, target)
        return model


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


FAKE_MODULES = {
    "fakelib": _module("fakelib", StandardScaler=_StandardScaler, load_image=_load_image),
    "transformers": _module(
        "transformers", AutoModel=_AutoModel, BitsAndBytesConfig=lambda **kw: dict(kw)
    ),
}

# ---------------------------------------------------------------- programs


def _lines(*lines: str) -> str:
    return "\n".join(lines)


HEADERS = {
    "plain": "import torch\n",
    "alias": "import torch as th\n",
    "nn": "import torch\nimport torch.nn as nn\n",
    "from_only": "from torch import nn\nimport torch\n",
    "data": "import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n",
}
ALIASES = {"alias": "th"}
MODELS = (
    "T.manual_seed(0)\nmodel = T.nn.Linear(4, 2)\n",
    _lines(
        "T.manual_seed(0)",
        "model = T.nn.Sequential(T.nn.Linear(4, 3), T.nn.ReLU(), T.nn.Linear(3, 2))\n",
    ),
    "class Net(T.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = T.nn.Linear(4, 2)\n"
    "    def forward(self, x):\n"
    "        bias = T.zeros(2)\n"
    "        return self.fc(x) + bias\n"
    "T.manual_seed(0)\nmodel = Net()\n",
    # a module built and a `.numpy()` read inside forward
    "class Late(T.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.fc = T.nn.Linear(4, 2)\n"
    "    def forward(self, x):\n"
    "        h = self.fc(x)\n"
    "        norm = T.nn.LayerNorm(2)\n"
    "        peak = float(h.detach().numpy().max())\n"
    "        return norm(h) + peak * 0\n"
    "T.manual_seed(0)\nmodel = Late()\n",
)
_LOADER = (
    "from torch.utils.data import DataLoader, TensorDataset\n"
    "loader{k} = DataLoader(TensorDataset(T.arange(16.0).view(4, 4), T.arange(4)), batch_size=2)\n"
)

FRAGMENTS = [
    # tensors made here, typed constructors, Variable
    "x{k} = T.arange(8.0).view(2, 4)\nOUT.append(model(x{k}).detach())",
    "x{k} = T.FloatTensor([[1.0, 2.0, 3.0, 4.0]])\nOUT.append(model(x{k}).detach())",
    "from torch.autograd import Variable\n"
    "v{k} = Variable(T.FloatTensor([[0.5, 1.0, 1.5, 2.0]]))\nOUT.append(model(v{k}).detach())",
    _lines(
        "ids{k} = T.LongTensor([0, 1, 1])",
        "OUT.append((model(T.ones(3, 4)).argmax(1) == ids{k}).tolist())",
    ),
    # a whole batch handed to an object's method, or taken apart by `*`: may be a list
    _LOADER
    + _lines(
        "class Runner{k}:",
        "    def step(self, net, batch):",
        "        return net(batch[0]).detach()",
        "def pair{k}(net, xb, yb):",
        "    return (net(xb).argmax(1) == yb).tolist()",
        "for batch{k} in loader{k}:",
        "    OUT.append(Runner{k}().step(model, batch{k}))",
        "    OUT.append(pair{k}(model, *batch{k}))",
    ),
    # a CPU tensor type held by a name, converted to after the tensor is made
    _lines(
        "dtype{k} = T.FloatTensor",
        "x{k} = T.randn(2, 4).type(dtype{k})",
        "y{k} = T.ones(2, 4)",
        "y{k} = y{k}.type(dtype{k})",
        "OUT.append((model(x{k}) + model(y{k})).detach())",
    ),
    # parameters: floats, strings, booleans, classes, None defaults, tensors
    "def scale{k}(net, gamma):\n    return net(T.ones(1, 4) * gamma)\n"
    "OUT.append(scale{k}(model, 0.5).detach())",
    "def named{k}(net, name, flag=False):\n    OUT.append((name, flag))\n"
    "    return net(T.zeros(1, 4))\n"
    + _lines(
        "OUT.append(named{k}(model, 'relu', True).detach())",
        "OUT.append(named{k}(model, 'tanh').detach())",
    ),
    "def typed{k}(net, cls):\n    return net(T.ones(2, 4)).shape[0], cls.__name__\n"
    "OUT.append(typed{k}(model, int))",
    _lines(
        "def given{k}(net, x, mask=None):",
        "    out = net(x)",
        "    return out if mask is None else out * mask",
        "OUT.append(given{k}(model, T.randn(2, 4)).detach())",
    ),
    "def annotated{k}(net, x: T.Tensor) -> T.Tensor:\n    return net(x)\n"
    "OUT.append(annotated{k}(model, T.ones(1, 4)).detach())",
    # a function nobody here calls (a test with pytest parameters): reported, never moved
    "def test_forward{k}(model, x, n_steps):\n    for _ in range(n_steps):\n        x = model(x)\n"
    "    return x\nOUT.append(test_forward{k}.__name__)",
    # loops over things that are not tensors
    "for name{k} in ['a', 'b']:\n    OUT.append((name{k}, model(T.ones(1, 4)).shape))",
    "for w{k} in [0.5, 1.5]:\n    OUT.append(model(T.ones(1, 4) * w{k}).detach())",
    "for i{k}, flag{k} in enumerate([True, False]):\n"
    "    OUT.append((i{k}, flag{k}, model(T.ones(1, 4)).sum().item() > -100))",
    # loops over loaders, their batches unpacked, indexed, enumerated, zipped
    _LOADER
    + "for xb{k}, yb{k} in loader{k}:\n    OUT.append((model(xb{k}).argmax(1) == yb{k}).tolist())",
    _LOADER + "for i{k}, data{k} in enumerate(loader{k}):\n    inputs{k}, labels{k} = data{k}\n"
    "    OUT.append((i{k}, model(inputs{k}).detach(), labels{k}))",
    _LOADER
    + _lines(
        "for batch{k} in loader{k}:",
        "    OUT.append(model(batch{k}[0]).detach() - batch{k}[1][:, None])",
    ),
    _LOADER + "xs{k}, ys{k} = next(iter(loader{k}))\nOUT.append(model(xs{k}).detach())",
    # a whole batch handed to a step function that unpacks or indexes it (the batch is a list)
    _LOADER
    + _lines(
        "def step{k}(net, batch):",
        "    xb, yb = batch",
        "    return (net(xb).argmax(1) == yb).tolist()",
        "def check{k}(net, batch):",
        "    return net(batch[0]).detach() - batch[1][:, None]",
        "for batch{k} in loader{k}:",
        "    OUT.append(step{k}(model, batch{k}))",
        "    OUT.append(check{k}(net=model, batch=batch{k}))",
    ),
    _LOADER + "for (a{k}, b{k}), (c{k}, d{k}) in zip(loader{k}, loader{k}):\n"
    "    OUT.append(model(a{k} + c{k}).detach())",
    _lines(
        "rows{k} = T.arange(8.0).view(2, 4)",
        "for row{k} in rows{k}:",
        "    OUT.append(model(row{k}).detach())",
    ),
    # tensors the port cannot follow: reported
    "def make{k}():\n    return T.randn(2, 4)\nOUT.append(model(make{k}()).detach())",
    "import io\nbuf{k} = io.BytesIO()\nT.save(T.ones(2, 4), buf{k})\nbuf{k}.seek(0)\n"
    "loaded{k} = T.load(buf{k}, weights_only=True)\nOUT.append(model(loaded{k}).detach())",
    "class Holder{k}:\n    def __init__(self):\n        self.data = T.ones(1, 4)\n"
    "h{k} = Holder{k}()\nOUT.append(model(h{k}.data).detach())",
    # batches taken in a comprehension: fed to the model there (reported), or to a step
    # function of the file that moves them itself
    _LOADER + "OUT.append([model(xc{k}).detach() for xc{k}, _ in loader{k}])",
    _LOADER
    + _lines(
        "def feed{k}(net, xb, yb):",
        "    return (net(xb).argmax(1) == yb).tolist()",
        "OUT.append([feed{k}(model, xb, yb) for xb, yb in loader{k}])",
    ),
    # data a dataset or a loader keeps, read straight from it: on the CPU, reported
    _LOADER
    + _lines(
        "OUT.append(model(loader{k}.dataset.tensors[0]).detach())",
        "first{k}, label{k} = loader{k}.dataset[0]",
        "OUT.append((model(first{k}).detach(), label{k}))",
    ),
    _lines(
        "from torch.utils.data import Dataset",
        "class Rows{k}(Dataset):",
        "    def __init__(self):",
        "        self.x = T.ones(3, 4)",
        "    def __len__(self):",
        "        return 3",
        "    def __getitem__(self, i):",
        "        return self.x[i]",
        "rows{k} = Rows{k}()",
        "OUT.append((model(rows{k}.x).detach(), model(rows{k}[1]).detach(), len(rows{k})))",
    ),
    # class attributes read through the class: a tensor (reported), a number (left alone)
    _lines(
        "class Cfg{k}:",
        "    scale = 0.5",
        "    probe = T.ones(1, 4)",
        "OUT.append((model(Cfg{k}.probe) * Cfg{k}.scale).detach())",
    ),
    # other libraries: numpy through a transform, a library's own tensor
    "import numpy as np\nimport fakelib\n"
    "X{k} = fakelib.StandardScaler().fit_transform(np.arange(8).reshape(2, 4))\n"
    "OUT.append(model(T.tensor(X{k})).detach())",
    "import fakelib\nOUT.append(model(fakelib.load_image()).detach())",
    # models placed by their loader
    "from transformers import AutoModel\n"
    "placed{k} = AutoModel.from_pretrained('tiny', device_map='auto')\n"
    "OUT.append(placed{k}.out_features)",
    "from transformers import AutoModel\n"
    "plain{k} = AutoModel.from_pretrained('tiny')\nOUT.append(plain{k}(T.ones(1, 4)).detach())",
    # library internals: an optimizer's step, a module's forward
    "class Sgd{k}(T.optim.Optimizer):\n"
    "    def __init__(self, params):\n        super().__init__(params, dict(lr=0.1))\n"
    "    def step(self, closure=None):\n"
    "        for group in self.param_groups:\n"
    "            for p in group['params']:\n"
    "                if p.grad is not None:\n"
    "                    p.data.add_(p.grad, alpha=-group['lr'])\n"
    "opt{k} = Sgd{k}(model.parameters())\nmodel(T.ones(1, 4)).sum().backward()\nopt{k}.step()\n"
    "OUT.append([p.detach().clone() for p in model.parameters()])",
    # a module method that makes a tensor and hands a name (not a tensor) to another method
    _lines(
        "class Adapter{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = T.nn.Linear(4, 2)",
        "        self.names = []",
        "    def register(self, name):",
        "        self.names.append(name)",
        "    def forward(self, x):",
        "        return self.fc(x)",
        "    def add(self, name):",
        "        self.register(name)",
        "        return T.ones(2) * len(self.names)",
        "adapter{k} = Adapter{k}()",
        "OUT.append(adapter{k}.add('lora').tolist())",
        "OUT.append(adapter{k}(T.ones(1, 4)).detach())",
    ),
    # a module's plain tensor attributes: sizes (not 0-dim values), arithmetic, methods
    _lines(
        "class Scaled{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = T.nn.Linear(4, 2)",
        "        self.scale = T.ones(2) * 2",
        "        self.shift = T.zeros(1)",
        "        self.steps = T.arange(2).float()",
        "    def forward(self, x):",
        "        return self.fc(x) * self.scale + self.shift + self.steps",
        "scaled{k} = Scaled{k}()",
        "OUT.append(scaled{k}(T.ones(1, 4)).detach())",
    ),
    # receivers of .numpy(): parenthesised and compound
    "idx{k} = T.arange(3)\nOUT.append(((10 - idx{k}).numpy()).tolist())",
    "out{k} = model(T.ones(1, 4))\nOUT.append((out{k} + 1).detach().numpy().tolist())",
    "out{k} = model(T.ones(1, 4))\nOUT.append(((out{k} * 2)).detach().numpy().tolist())",
    # a tensor moved later next to another one: its first use still needs the device
    _lines(
        "x{k} = T.randn(2, 4)",
        "out{k} = model(x{k})",
        "y{k} = x{k}.to(out{k}.device)",
        "OUT.append((out{k}.detach(), y{k}.sum().item()))",
    ),
    _lines(
        "x{k} = T.ones(2, 4)",
        "out{k} = model(x{k})",
        "w{k} = T.ones(2, 2, device=out{k}.device)",
        "OUT.append((out{k} * w{k}).detach())",
    ),
    # items of a list beside a device value: each meets it
    "out{k} = model(T.ones(1, 4))\nOUT.append(T.cat([out{k}, T.zeros(1, 2)]).detach())",
    "out{k} = model(T.ones(1, 4))\nOUT.append(T.stack((T.ones(1, 2) * 2, out{k})).detach())",
    # a module-level name a function rebinds through `global`
    _lines(
        "g{k} = None",
        "def setup{k}():",
        "    global g{k}",
        "    g{k} = T.ones(1, 4)",
        "setup{k}()",
        "OUT.append(model(g{k}).detach())",
    ),
    # a function's name a nested function rebinds through `nonlocal`
    _lines(
        "def outer{k}():",
        "    x = None",
        "    def setup():",
        "        nonlocal x",
        "        x = T.ones(1, 4)",
        "    setup()",
        "    return model(x)",
        "OUT.append(outer{k}().detach())",
    ),
    # the model handed to a method of the file's own class
    _lines(
        "class Job{k}:",
        "    def run(self, m):",
        "        return m(T.ones(1, 4))",
        "OUT.append(Job{k}().run(model).detach())",
    ),
    # a method name several classes define (each fragment brings its own class)
    _lines(
        "class Step{k}:",
        "    def run(self, m):",
        "        return m(T.zeros(1, 4))",
        "step{k} = Step{k}()",
        "OUT.append(step{k}.run(model).detach())",
    ),
    # plain classes whose methods meet the model's output, called through instances: one
    # bound here, one held as another object's attribute, one a parameter annotated with
    # its class, one whose class the port cannot know (two classes define the method)
    _lines(
        "class Agent{k}:",
        "    def __init__(self):",
        "        self.w = T.ones(2)",
        "    def step(self, y):",
        "        return y * self.w",
        "agent{k} = Agent{k}()",
        "OUT.append(agent{k}.step(model(T.ones(1, 4))).detach())",
    ),
    _lines(
        "class Scorer{k}:",
        "    def score(self, y):",
        "        return y + T.zeros(2)",
        "class Trainer{k}:",
        "    def __init__(self):",
        "        self.scorer = Scorer{k}()",
        "    def run(self, x):",
        "        return self.scorer.score(model(x))",
        "OUT.append(Trainer{k}().run(T.ones(1, 4)).detach())",
    ),
    _lines(
        "class Buf{k}:",
        "    def __init__(self):",
        "        self.base = T.ones(2)",
        "    def add(self, y):",
        "        return self.sub(y, self.base)",
        "    def sub(self, y, b):",
        "        return y - b",
        "def use{k}(buf: Buf{k}, x):",
        "    return buf.add(model(x))",
        "OUT.append(use{k}(Buf{k}(), T.ones(1, 4)).detach())",
    ),
    _lines(
        "class Left{k}:",
        "    def apply(self, y):",
        "        return y * T.ones(2)",
        "class Right{k}:",
        "    def apply(self, y):",
        "        return y + T.ones(2)",
        "def through{k}(obj, x):",
        "    return obj.apply(model(x))",
        "OUT.append(through{k}(Left{k}(), T.ones(1, 4)).detach())",
        "OUT.append(through{k}(Right{k}(), T.zeros(1, 4)).detach())",
    ),
    # a function of the file given the model's output, making the tensor it meets
    _lines(
        "def shift{k}(y):",
        "    return y + T.ones(2)",
        "OUT.append(shift{k}(model(T.ones(1, 4))).detach())",
    ),
    # the model put where the port cannot follow it: a list, a dict, a partial
    "for m{k} in [model]:\n    OUT.append(m{k}(T.ones(1, 4)).detach())",
    "models{k} = {'a': model}\nOUT.append(models{k}['a'](T.zeros(1, 4)).detach())",
    "import functools\ndef call{k}(m, x):\n    return m(x)\n"
    "f{k} = functools.partial(call{k}, model)\nOUT.append(f{k}(T.ones(1, 4)).detach())",
    # the code's own placements on the CPU: an output moved back, a parameter's default
    "pred{k} = model(T.ones(1, 4)).to('cpu')\nOUT.append((pred{k} - T.zeros(1, 2)).tolist())",
    "def run{k}(net, dev='cpu'):\n    return net(T.ones(1, 4).to(dev))\n"
    "OUT.append(run{k}(model).detach())",
    # a random tensor the program optimizes: still a leaf after its move
    _lines(
        "z{k} = T.randn(1, 4, requires_grad=True)",
        "opt{k} = T.optim.SGD([z{k}], lr=0.1)",
        "model(z{k}).sum().backward()",
        "opt{k}.step()",
        "OUT.append(z{k}.grad is not None)",
    ),
    # a model trained by hand: raw tensors with requires_grad, no nn.Module
    _lines(
        "w{k} = T.randn(4, 2, requires_grad=True)",
        "b{k} = T.zeros(2, requires_grad=True)",
        "opt{k} = T.optim.SGD([w{k}, b{k}], lr=0.1)",
        "x{k} = T.arange(8.0).view(2, 4)",
        "loss{k} = ((x{k} @ w{k} + b{k}) ** 2).mean()",
        "loss{k}.backward()",
        "opt{k}.step()",
        "OUT.append(round(loss{k}.item(), 4))",
    ),
    _lines(
        "p{k} = T.nn.Parameter(T.ones(4, 2))",
        "OUT.append((T.ones(3, 4) @ p{k}).sum().item())",
    ),
    # a helper of the file that returns a CPU tensor (a numpy-built mask)
    _lines(
        "import numpy as np",
        "def make_mask{k}(n):",
        "    return T.from_numpy(np.tril(np.ones((n, 2), dtype=np.float32)))",
        "OUT.append((model(T.ones(3, 4)) * make_mask{k}(3)).detach())",
    ),
    # tensors captured by a lambda or a closure that is given the model's output
    _lines(
        "scale{k} = T.full((2,), 0.5)",
        "f{k} = lambda t: t * scale{k}",
        "OUT.append(f{k}(model(T.ones(1, 4))).detach())",
    ),
    _lines(
        "shift{k} = T.ones(2)",
        "def g{k}(t):",
        "    return t + shift{k}",
        "OUT.append(g{k}(model(T.ones(1, 4))).detach())",
    ),
    _lines(
        "head{k} = lambda t: model(t) * 2",
        "OUT.append(head{k}(T.ones(1, 4)).detach())",
    ),
    # a cast where the tensor is made: moved after the cast
    _lines(
        "import numpy as np",
        "a{k} = T.from_numpy(np.ones((2, 4))).float()",
        "OUT.append(model(a{k}).detach())",
    ),
    # a sparse input: densified before the model, or multiplied by its output
    _lines(
        "i{k} = T.tensor([[0, 1], [1, 2]])",
        "s{k} = T.sparse_coo_tensor(i{k}, T.tensor([1.0, 2.0]), (2, 4))",
        "OUT.append(model(s{k}.to_dense()).detach())",
    ),
    _lines(
        "adj{k} = T.sparse_coo_tensor(T.tensor([[0, 1], [1, 0]]), T.tensor([1.0, 1.0]), (2, 2))",
        "OUT.append(T.sparse.mm(adj{k}, model(T.ones(2, 4))).detach())",
    ),
    # a deliberate CPU choice and a device flag: left as they are
    _lines(
        "CPU_DEVICE{k} = T.device('cpu')",
        "OUT.append(model(T.ones(1, 4)).to(CPU_DEVICE{k}).detach())",
    ),
    _lines(
        "import argparse",
        "parser{k} = argparse.ArgumentParser()",
        "parser{k}.add_argument('--no-accel', action='store_true')",
        "args{k} = parser{k}.parse_args([])",
        "OUT.append(model(T.ones(1, 4)).detach())",
    ),
    # a packed sequence (hunkim 13_4_pack_pad): an embedding of a host-built index tensor,
    # lengths through `.cpu().numpy()`; the packed batch_sizes stay on the CPU by torch's rule
    _lines(
        "from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence",
        "T.manual_seed(1)",
        "emb{k} = T.nn.Embedding(6, 4)",
        "rnn{k} = T.nn.LSTM(4, 3)",
        "lens{k} = T.LongTensor([3, 2])",
        "seq{k} = T.zeros((2, 3)).long()",
        "for row{k}, n{k} in enumerate(lens{k}):",
        "    seq{k}[row{k}, :n{k}] = T.LongTensor([1, 2, 3][: int(n{k})])",
        "packed{k} = pack_padded_sequence(emb{k}(seq{k}.transpose(0, 1)), lens{k}.cpu().numpy())",
        "po{k}, (h{k}, c{k}) = rnn{k}(packed{k})",
        "OUT.append(pad_packed_sequence(po{k})[0].detach())",
        "OUT.append(h{k}[-1].detach())",
    ),
    # a name the flow knows as a device value, bound elsewhere to a CPU factory
    # (PyTorch_Practice lesson1/autograd.py, machine-learning-book ch15's manual RNN)
    _lines(
        "a{k} = model(T.ones(1, 4))",
        "OUT.append(a{k}.detach())",
        "a{k} = T.ones(1, 2)",
        "OUT.append((a{k} + model(T.zeros(1, 4))).detach())",
    ),
    _lines(
        "outs{k} = []",
        "for t{k} in range(3):",
        "    if t{k} > 0:",
        "        prev{k} = outs{k}[t{k} - 1]",
        "    else:",
        "        prev{k} = T.zeros((1, 2))",
        "    outs{k}.append(T.tanh(model(T.ones(1, 4)) + prev{k}))",
        "OUT.append(outs{k}[-1].detach())",
    ),
    # settings argparse makes (numbers: no tensor), and one whose `type=` makes a CPU tensor
    _lines(
        "import argparse",
        "parser{k} = argparse.ArgumentParser()",
        "parser{k}.add_argument('--gamma', type=float, default=0.5)",
        "parser{k}.add_argument('--n-step', type=int, default=2)",
        "parser{k}.add_argument('--scale', type=lambda s: T.full((2,), float(s)), default='2')",
        "args{k} = parser{k}.parse_args([])",
        "OUT.append((model(T.ones(1, 4)) * args{k}.gamma ** args{k}.n_step).detach())",
        "OUT.append((model(T.ones(1, 4)) * args{k}.scale).detach())",
    ),
    # an object that makes its tensors on the device it is given, and one it keeps on the CPU
    _lines(
        "class Holder{k}:",
        "    def __init__(self, dev):",
        "        self.net = model",
        "        self.device = dev",
        "        self.support = T.linspace(0, 1, 2).to(device=dev)",
        "        self.steps = T.tensor([1.0, 0.5], device=self.device)",
        "        self.scale = T.ones(2)",
        "    def act(self, x):",
        "        return self.net(x) * self.support * self.steps",
        "    def scaled(self, x):",
        "        return self.net(x) * self.scale",
        "holder{k} = Holder{k}(next(model.parameters()).device)",
        "OUT.append(holder{k}.act(T.ones(1, 4)).detach())",
        "OUT.append(holder{k}.scaled(T.ones(1, 4)).detach())",
    ),
    # settings named after a model (`lr_actor`, `policy_noise`), a model parameter too
    _lines(
        "def make_opt{k}(actor, lr_actor, policy_noise=0.2):",
        "    groups = [{'params': actor.parameters(), 'lr': lr_actor}]",
        "    return T.optim.SGD(groups), policy_noise",
        "opt{k}, noise{k} = make_opt{k}(model, 0.1)",
        "OUT.append((model(T.ones(1, 4)) * noise{k}).detach())",
    ),
    # a closure over its function's own model, and a function returning the model's output
    # whose caller meets it with a CPU tensor (spinningup's pg_math: both were silent)
    _lines(
        "def train{k}():",
        "    net{k} = T.nn.Linear(4, 2)",
        "    def policy{k}(obs):",
        "        return net{k}(obs)",
        "    def loss{k}(obs, w):",
        "        return (policy{k}(obs) * w).sum()",
        "    return loss{k}(T.ones(1, 4), T.ones(1, 2))",
        "OUT.append(train{k}().detach())",
    ),
    _lines(
        "def policy{k}(obs):",
        "    return model(obs) * 2",
        "def loss{k}(obs, w):",
        "    return T.cat([policy{k}(obs), w], 1).sum()",
        "OUT.append(loss{k}(T.ones(1, 4), T.zeros(1, 3)).detach())",
    ),
    # a model factory of the program (in a function or under an `if` when wrapped): its
    # model is moved where it is built, its input where the model meets it
    _lines(
        "def build{k}():",
        "    T.manual_seed(1)",
        "    return T.nn.Linear(4, 2)",
        "net{k} = build{k}()",
        "OUT.append(net{k}(T.ones(1, 4)).detach())",
    ),
    # a number kept on an object, reset from outside with a number (A2C's `agent.I = 1`)
    _lines(
        "class Disc{k}:",
        "    def __init__(self):",
        "        self.I = 1",
        "    def learn(self, x):",
        "        out = model(x) * self.I",
        "        self.I *= 0.5",
        "        return out",
        "disc{k} = Disc{k}()",
        "OUT.append(disc{k}.learn(T.ones(1, 4)).detach())",
        "disc{k}.I = 1",
        "OUT.append(disc{k}.learn(T.ones(1, 4)).detach())",
    ),
    # a settings object of the program's own class (Pytorch-DPPO's `params = Params()`):
    # numbers only, nothing to move; the second one carries a CPU tensor, a real leftover
    _lines(
        "class Params{k}:",
        "    def __init__(self):",
        "        self.gamma = 0.5",
        "        self.num = 4",
        "        self.update = self.num - 1",
        "params{k} = Params{k}()",
        "out{k} = model(T.ones(1, 4)) * params{k}.gamma",
        "OUT.append((out{k}.clamp(1 - params{k}.gamma, params{k}.update)).detach())",
    ),
    _lines(
        "class Hold{k}:",
        "    def __init__(self):",
        "        self.gamma = 0.5",
        "        self.scale = T.full((1,), 2.0)",
        "hold{k} = Hold{k}()",
        "OUT.append((model(T.ones(1, 4)) * hold{k}.gamma * hold{k}.scale).detach())",
    ),
    # numpy buffers kept on `self` (spinningup's PPOBuffer: `self.rew_buf = np.zeros(n)`,
    # `np.append(self.rew_buf[...], last_val)`): numpy, no tensor; what the buffer hands
    # back through `torch.as_tensor` is a CPU tensor, a real leftover where it meets the model
    _lines(
        "import numpy as np",
        "class NBuf{k}:",
        "    def __init__(self, n=3, gamma=0.5):",
        "        self.rew = np.zeros(n, dtype=np.float32)",
        "        self.val = np.zeros(n, dtype=np.float32)",
        "        self.gamma = gamma",
        "    def store(self, i, r, v):",
        "        self.rew[i] = r",
        "        self.val[i] = v",
        "    def finish(self, last=0.0):",
        "        rews = np.append(self.rew[0:3], last)",
        "        vals = np.append(self.val[0:3], last)",
        "        return rews[:-1] + self.gamma * vals[1:] - vals[:-1]",
        "class AC{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.v = T.nn.Linear(4, 1)",
        "    def step(self, obs):",
        "        with T.no_grad():",
        "            return self.v(obs).numpy()[0, 0]",
        "T.manual_seed(2)",
        "ac{k} = AC{k}()",
        "nb{k} = NBuf{k}()",
        "for i{k} in range(3):",
        "    nb{k}.store(i{k}, 0.5 * i{k}, ac{k}.step(T.ones(1, 4) * i{k}))",
        "OUT.append(nb{k}.finish(ac{k}.step(T.ones(1, 4))).tolist())",
        "OUT.append((model(T.ones(1, 4)) * T.as_tensor(nb{k}.finish()).sum()).detach())",
    ),
    # a tensor made from a method's argument whose callers are not all in the file (the
    # bound method handed on), shaped by `torch.unsqueeze(data, 0)` (DRL-code's
    # `choose_action`): moved where it is made
    _lines(
        "import numpy as np",
        "class Agent{k}:",
        "    def __init__(self):",
        "        self.policy = model",
        "    def choose(self, s):",
        "        s = T.unsqueeze(T.tensor(s, dtype=T.float), 0)",
        "        return self.policy(s).detach()",
        "agent{k} = Agent{k}()",
        "act{k} = agent{k}.choose",
        "OUT.append(act{k}(np.ones(4, dtype=np.float32)))",
    ),
    # a model whose forward makes its own tensor of a numpy input, rebinding the name
    # (Actor-Critic-PyTorch): made where the model's parameters are
    _lines(
        "import numpy as np",
        "class Conv{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = T.nn.Linear(4, 2)",
        "    def forward(self, state):",
        "        state = T.from_numpy(state).float()",
        "        return self.fc(state)",
        "T.manual_seed(3)",
        "conv{k} = Conv{k}()",
        "OUT.append(conv{k}(np.ones((1, 4), dtype=np.float32) * 0.5).detach())",
    ),
    # the model placed under the program's own CUDA-or-CPU flag (mazzamani/LSTM_pytorch):
    # on an accelerator that is not CUDA it stays on the CPU; no second device for batches
    _LOADER
    + _lines(
        "use_cuda{k} = T.cuda.is_available()",
        "if use_cuda{k}:",
        "    model.cuda()",
        "for xb{k}, yb{k} in loader{k}:",
        "    OUT.append(model(xb{k}).detach())",
    ),
    # each arm builds the model, one moves it to CUDA (cs230-stanford/cs230-code-examples):
    # the CPU arm is the program's, not the port's
    _LOADER
    + _lines(
        "T.manual_seed(1)",
        "net{k} = T.nn.Linear(4, 2).cuda() if T.cuda.is_available() else T.nn.Linear(4, 2)",
        "for xb{k}, yb{k} in loader{k}:",
        "    OUT.append(net{k}(xb{k}).detach())",
    ),
    # a function of the file whose CPU tensor forward uses (External-Attention's
    # CrissCrossAttention `INF`), and one whose every return is a CPU tensor (moved at the call)
    _lines(
        "def inf{k}(n):",
        '    return -T.diag(T.tensor(float("inf")).repeat(n), 0)',
        "def offset{k}(n):",
        "    return T.arange(n).float()",
        "class Cross{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.fc = T.nn.Linear(4, 4)",
        "    def forward(self, x):",
        "        return self.fc(x) + inf{k}(4)[0].clamp(min=-1.0) + offset{k}(4)",
        "T.manual_seed(2)",
        "cross{k} = Cross{k}()",
        "OUT.append(cross{k}(T.ones(2, 4)).detach())",
    ),
    # modules in a plain list or dict attribute (mlp_mixer): not the module's children
    _lines(
        "class Listed{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        "        self.blocks = [T.nn.Linear(4, 4) for _ in range(2)]",
        "        self.more = []",
        "        self.more.append(T.nn.Linear(4, 4))",
        "        self.heads = {'out': T.nn.Linear(4, 2)}",
        "    def forward(self, x):",
        "        for block in self.blocks + self.more:",
        "            x = block(x)",
        "        return self.heads['out'](x)",
        "T.manual_seed(2)",
        "listed{k} = Listed{k}()",
        "OUT.append(listed{k}(T.ones(2, 4)).detach())",
    ),
    # a module's own CUDA-or-CPU device (issue 31, item 2): the CPU on MPS or XPU
    _lines(
        "class Own{k}(T.nn.Module):",
        "    def __init__(self):",
        "        super().__init__()",
        '        self.device = T.device("cuda" if T.cuda.is_available() else "cpu")',
        "        self.fc = T.nn.Linear(4, 2)",
        "    def forward(self, x):",
        "        return self.fc(x) + T.zeros(2, device=self.device)",
        "own{k} = Own{k}()",
        "OUT.append(own{k}(T.ones(1, 4)).detach())",
    ),
    # lengths handed to pack_padded_sequence through a plain function of the file
    _lines(
        "from torch.nn.utils.rnn import pack_padded_sequence",
        "T.manual_seed(1)",
        "emb{k} = T.nn.Embedding(6, 3)",
        "def packed{k}(net, ids, lengths):",
        "    packed = pack_padded_sequence(",
        "        net(ids), lengths, batch_first=True, enforce_sorted=False",
        "    )",
        "    return packed.data.sum(0)",
        "ids{k} = T.tensor([[1, 2, 3], [4, 5, 0]])",
        "OUT.append(packed{k}(emb{k}, ids{k}, T.tensor([3, 2])).detach())",
    ),
    # torch.cuda.amp with a string device
    'device = "cuda" if T.cuda.is_available() else "cpu"\n'
    "with T.cuda.amp.autocast(False):\n    OUT.append(model(T.ones(1, 4)).detach())",
]

# Modules with no torch in them: `port` must leave them exactly as they are.
NO_TORCH = [
    "def build(net, gamma):\n    return net(gamma)\nOUT.append(build(lambda g: g * 2, 0.5))",
    "for name in ['a', 'b']:\n    OUT.append(name.upper())",
    "def model(x):\n    return x + 1\nfor x in [1.0, 2.0]:\n    OUT.append(model(x))",
    "class Cfg:\n    device = 'cuda'\ndef run(model, cfg):\n    return model(cfg.device)\n"
    "OUT.append(run(len, Cfg()))",
    "import os\nOUT.append(os.sep)\nitems = [3, 1, 2]\nOUT.append(sorted(items))",
]

WRAPPERS = ("module", "function", "if")
_T = re.compile(r"\bT\.")


def _indent(text: str, by: str = "    ") -> str:
    return "".join(by + line if line.strip() else line for line in text.splitlines(True))


def _wrap(body: str, k: int, wrapper: str) -> str:
    # Imports stay at module level: the walk's import table (Context.qualname) knows a
    # nested import only once the walk has entered it, and the port's facts are made
    # before that. The scope model that replaces the table will lift this.
    if "import " in body:
        return body
    if wrapper == "function" and "class " not in body:
        return f"def main{k}():\n{_indent(body)}main{k}()\n"
    if wrapper == "if":
        return f"if OUT is not None:\n{_indent(body)}"
    return body


@st.composite
def programs(draw: st.DrawFn) -> str:
    """One program: a torch header, a model and fragments, or a module with no torch."""
    if draw(st.integers(0, 9)) == 0:
        chosen = draw(st.lists(st.sampled_from(NO_TORCH), min_size=1, max_size=3))
        wrapped = [
            _wrap(body + "\n", k, draw(st.sampled_from(WRAPPERS))) for k, body in enumerate(chosen)
        ]
        return "\n".join(wrapped)
    header = draw(st.sampled_from(sorted(HEADERS)))
    alias = ALIASES.get(header, "torch")
    parts = [HEADERS[header], _T.sub(f"{alias}.", draw(st.sampled_from(MODELS)))]
    chosen = draw(st.lists(st.integers(0, len(FRAGMENTS) - 1), min_size=1, max_size=4))
    for k, index in enumerate(chosen):
        body = _T.sub(f"{alias}.", FRAGMENTS[index].replace("{k}", str(k))) + "\n"
        parts.append(_wrap(body, k, draw(st.sampled_from(WRAPPERS))))
    return "\n".join(parts)
