"""TP504 tensor-on-cpu-in-module: a module method makes a tensor with no ``device=``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, keyword
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.port._calls import CREATORS, TYPED, is_move
from torchport.check.port._facts import port_facts
from torchport.check.rules._module_tensors import held_apart, subclasses_optimizer

# Uses of a parameter that show it is a tensor.
_TENSOR_USES = frozenset(
    {"size", "shape", "device", "dim", "view", "reshape", "unsqueeze", "permute", "transpose",
     "contiguous", "float", "long", "masked_fill", "new_zeros", "new_ones", "expand"}
)  # fmt: skip
_MOVE_AFTER = frozenset(
    f"torch.{n}"
    for n in ("from_numpy", "randn", "rand", "randint", "randperm", "normal", "bernoulli")
)
_CPU_ONLY = "torch.nn.utils.rnn."  # pack_padded_sequence wants its lengths on the CPU


class TensorOnCpuInModule(Rule):
    """## What it does
    Finds tensors created without `device=` inside the methods of an
    `nn.Module` (other than `__init__`): `torch.zeros(...)` for an initial
    hidden state, `torch.arange(T)` for positions, a causal mask.

    ## Why is this bad?
    `model.to(device)` moves the module's parameters and buffers, not the
    tensors its methods create on each call: those stay on the CPU and the
    forward fails on an accelerator. The fix creates them on the device of
    the method's input (`device=x.device`), or of the module's parameters
    when no input tensor is at hand, so the module works wherever it is.

    A tensor that `__init__` keeps in a plain attribute (`self.scale =
    torch.tensor([2.0])`, not a parameter or buffer) and another method reads
    is not moved by `model.to(device)` either: it is reported without a fix
    (registering it as a buffer changes what the module holds and saves).
    So is a tensor an optimizer's method makes on the CPU (`state["v"] =
    torch.zeros(p.shape)`): the parameters it meets are on the device once the
    model is; the port does not rewrite optimizers, it names them.
    """

    code = "TP504"
    name = "tensor-on-cpu-in-module"
    intent = Intent.PORT
    default = False
    message = "create the tensor on the input's device: pass `device=x.device`"
    fix_safety = FixSafety.SAFE
    node_types = (ast.Call,)
    valid = (
        "import torch\nfrom torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.register_buffer('pos', torch.arange(8))\n",
        "import torch\nfrom torch import nn\n\n"
        "class Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x + torch.zeros(3, device=x.device)\n",
    )
    invalid = (
        Example(
            "import torch\n\n\nclass Sgdm(torch.optim.Optimizer):\n"
            "    def step(self, closure=None):\n        for group in self.param_groups:\n"
            "            for p in group['params']:\n"
            "                state = self.state[p]\n"
            "                state['v'] = torch.zeros(p.shape)\n"
            "                state['step'] = torch.tensor(0.0)\n"
        ),
        Example(
            "import torch\nfrom torch import nn\n\n"
            "class Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        h0 = torch.zeros(1, x.size(0), 8)\n"
            "        return self.rnn(x, h0)\n"
            "\n"
            "    def init_hidden(self, n):\n"
            "        return torch.randn(1, n, 8)\n",
            fixed="import torch\nfrom torch import nn\n\n"
            "class Net(nn.Module):\n"
            "    def forward(self, x):\n"
            "        h0 = torch.zeros(1, x.size(0), 8, device=x.device)\n"
            "        return self.rnn(x, h0)\n"
            "\n"
            "    def init_hidden(self, n):\n"
            "        return torch.randn(1, n, 8).to(next(self.parameters()).device)\n",
            count=2,
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        name = ctx.qualname(node.func)
        if (name not in CREATORS and name not in TYPED) or keyword(node, "device") is not None:
            return
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        method = scope.node if scope is not None else None
        if scope is not None and scope.cls is not None and subclasses_optimizer(scope.cls, ctx):
            if not (node.args and isinstance(node.args[0], ast.Constant)):  # 0-dim: any device
                yield ctx.finding(self, node, message=_OPTIMIZER)
            return
        if scope is None or not scope.module_method or not isinstance(method, ast.FunctionDef):
            return
        params = [p.arg for p in (*method.args.posonlyargs, *method.args.args)]
        if not params or params[0] != "self":
            return
        if method.name == "__init__":
            held = held_apart(node, method, facts.parents)
            if held is not None:
                yield ctx.finding(self, node, message=_HELD.format(name=held))
            return
        parents = facts.parents
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and is_move(parents.get(id(parent), parent)):
            return
        if any(k.arg is None for k in node.keywords) or self._cpu_only(node, scope.nodes, ctx):
            return
        device = self._device(params[1:], scope.nodes, parents)
        if name in TYPED or name in _MOVE_AFTER:
            at = ctx.end(node)
            edit = Edit(at, at, f".to({device})")
        else:
            edit = add_keyword(node, f"device={device}", ctx)
        yield ctx.finding(self, node, fix=Fix((edit,), FixSafety.SAFE))

    @staticmethod
    def _device(params: list[str], nodes: list[ast.AST], parents: dict[int, ast.AST]) -> str:
        """``x.device`` for the first parameter used as a tensor, else the parameters' device."""
        for param in params:
            for n in nodes:
                if not (isinstance(n, ast.Name) and n.id == param):
                    continue
                parent = parents.get(id(n))
                if isinstance(parent, ast.Attribute) and parent.attr in _TENSOR_USES:
                    return f"{param}.device"
                if (
                    isinstance(parent, ast.Call)
                    and isinstance(parent.func, ast.Attribute)
                    and isinstance(parent.func.value, ast.Name)
                    and parent.func.value.id == "self"
                    and n in parent.args
                ):
                    return f"{param}.device"  # passed to a submodule: a tensor
        return "next(self.parameters()).device"

    @staticmethod
    def _cpu_only(node: ast.Call, nodes: list[ast.AST], ctx: Context) -> bool:
        """Whether the tensor feeds an API that wants it on the CPU (packed sequence lengths)."""
        parents_names: set[str] = set()
        for n in nodes:
            if isinstance(n, ast.Assign) and n.value is node:
                parents_names.update(t.id for t in n.targets if isinstance(t, ast.Name))
        for n in nodes:
            if isinstance(n, ast.Call) and (ctx.qualname(n.func) or "").startswith(_CPU_ONLY):
                for arg in (*n.args, *(k.value for k in n.keywords)):
                    if arg is node or (isinstance(arg, ast.Name) and arg.id in parents_names):
                        return True
        return False


_HELD = (
    "`model.to(device)` does not move the plain tensor attribute `self.{name}`: register it "
    "with `self.register_buffer({name!r}, ..., persistent=False)` or make it on the input's "
    "device where it is used"
)


_OPTIMIZER = (
    "make the optimizer's tensor on its parameter's device (`device=p.device`, or "
    "`torch.zeros_like(p)`): once the model is on the accelerator, a CPU state meets device "
    "parameters and gradients (no automatic fix: the port leaves optimizers to their authors)"
)
