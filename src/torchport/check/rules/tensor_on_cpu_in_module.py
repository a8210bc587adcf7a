"""TP504 tensor-on-cpu-in-module: a module method makes a tensor with no ``device=``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import RANDOM_FACTORIES, add_keyword, keyword, move_after
from torchport.check._rule import Edit, Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._made_where_handed import OUT_LEFT, made_where_handed, out_left
from torchport.check.rules._module_lambdas import class_lambda, held_lambda, module_lambda
from torchport.check.rules._module_tensors import (
    CPU_DEFAULT,
    HELD_APART,
    OPTIMIZER_STATE,
    builds_the_module,
    cpu_default_of_a_method,
    device_of_the_inputs,
    held_apart,
    method_of_a_module,
    moved_or_kept_on_the_cpu,
    subclasses_optimizer,
    zero_dim,
)
from torchport.check.rules._port import creators, port_facts

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortScope

_MOVE_AFTER = RANDOM_FACTORIES | {"torch.from_numpy"}  # drawn or made on the host: moved after


class TensorOnCpuInModule(Rule):
    """## What it does
    Finds tensors created without `device=` inside the methods of an
    `nn.Module` (other than `__init__`): `torch.zeros(...)` for an initial
    hidden state, `torch.arange(T)` for positions, a causal mask.

    ## Why is this bad?
    `model.to(device)` moves the module's parameters and buffers, not the
    tensors its methods create on each call, nor a method's parameter default
    (`def forward(self, x, w=torch.empty(0))`, reported without a fix): those
    stay on the CPU and the forward fails on an accelerator. The fix creates them
    on the device of the method's input (`device=x.device`), or of the module's
    parameters when no input tensor is at hand, so it works wherever it is. Not
    the parameters' device where the module may have none yet: in a method
    `__init__` calls, or when `__init__` builds no weights (reported, no fix).

    A tensor made by a lambda `__init__` keeps on an attribute (`self.f = lambda n:
    torch.zeros(n)`) is made on the module's parameters' device when the lambda runs
    (`device=next(self.parameters()).device`), or reported where they may not be there yet.

    A tensor that `__init__` keeps in a plain attribute (`self.scale =
    torch.tensor([2.0])`, or a torch function of one: `torch.sqrt(torch.FloatTensor([d]))`,
    not a parameter or buffer) and another method reads
    is not moved by `model.to(device)` either: it is reported without a fix
    (registering it as a buffer changes what the module holds and saves).
    So is a tensor an optimizer's method makes on the CPU (`state["v"] =
    torch.zeros(p.shape)`): the parameters it meets are on the device once the
    model is; the port does not rewrite optimizers, it names them.
    Also reported: a function (or a lambda bound to a name) of the file that makes a CPU
    tensor a method uses, by name or as `self.f = f` (a function's moved at the call,
    `f(n).to(x.device)`, when its every return is one), modules kept in a plain list or
    dict attribute (not children: `nn.ModuleList` would change the state_dict's keys), and a
    module's own CUDA-or-CPU `self.device` read in the class (the CPU on MPS or XPU).
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
            "class Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.rnn = nn.RNN(8, 8)\n\n"
            "    def forward(self, x):\n"
            "        h0 = torch.zeros(1, x.size(0), 8)\n"
            "        return self.rnn(x, h0)\n"
            "\n"
            "    def init_hidden(self, n):\n"
            "        return torch.randn(1, n, 8)\n",
            fixed="import torch\nfrom torch import nn\n\n"
            "class Net(nn.Module):\n    def __init__(self):\n"
            "        super().__init__()\n        self.rnn = nn.RNN(8, 8)\n\n"
            "    def forward(self, x):\n"
            "        h0 = torch.zeros(1, x.size(0), 8, device=x.device)\n"
            "        return self.rnn(x, h0)\n"
            "\n"
            "    def init_hidden(self, n):\n"
            "        return torch.randn(1, n, 8).to(next(self.parameters()).device)\n",
            count=2,
        ),
        Example(  # a name handed to a method is no tensor: the parameters' device
            "import torch\nfrom torch import nn\n\n"
            "class Adapter(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.ones(4))\n\n"
            "    def add(self, name):\n"
            "        self.reset(name)\n"
            "        return torch.ones(4)\n",
            fixed="import torch\nfrom torch import nn\n\n"
            "class Adapter(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n"
            "        self.w = nn.Parameter(torch.ones(4))\n\n"
            "    def add(self, name):\n"
            "        self.reset(name)\n"
            "        return torch.ones(4, device=next(self.parameters()).device)\n",
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        name = _creator_without_device(node, ctx)
        if name is None:  # what a method uses that `model.to` leaves, made elsewhere
            from torchport.check.rules._module_leftovers import module_leftovers

            for at, message, edits in module_leftovers(node, ctx):
                fix = None if edits is None else Fix(edits, FixSafety.SAFE)
                yield ctx.finding(self, at, message=message, fix=fix)
            return
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        if _in_an_optimizer(scope, ctx):
            if not zero_dim(node, name):  # a 0-dim tensor mixes with any device
                yield ctx.finding(self, node, message=OPTIMIZER_STATE)
            return
        method = method_of_a_module(scope)
        if scope is None or method is None:
            if cpu_default_of_a_method(node, name, facts, ctx):  # `def f(self, w=torch.ones(2))`
                yield ctx.finding(self, node, message=CPU_DEFAULT)
            elif said := class_lambda(node, name, ctx) or module_lambda(node, name, ctx):
                yield ctx.finding(self, node, message=said)  # `act = lambda t: ...` they use
            return
        if builds_the_module(method, scope.cls, ctx):  # `__init__`, or only it calls it
            held = held_apart(node, name, method, facts.parents, ctx.qualname)
            if held is not None:
                yield ctx.finding(self, node, message=HELD_APART.format(name=held))
            elif lam := held_lambda(node, name, ctx):  # `self.f = lambda n: torch.zeros(n)`
                fix = Fix(_placing(node, name, lam[1], ctx), FixSafety.SAFE) if lam[1] else None
                yield ctx.finding(self, node, message=lam[0], fix=fix)
            return
        if moved_or_kept_on_the_cpu(node, scope.nodes, facts, ctx):
            return
        device = device_of_the_inputs(method, scope.nodes, facts, scope.cls)
        if device is None or out_left(node, ctx.qualname):  # `__init__` calls it; unknown `out=`
            yield ctx.finding(self, node, message=OUT_LEFT if device else None)
            return
        yield ctx.finding(self, node, fix=Fix(_placing(node, name, device, ctx), FixSafety.SAFE))


def _creator_without_device(node: ast.Call, ctx: Context) -> str | None:
    """The creator's name (``torch.zeros``, ``torch.FloatTensor``) if it gets no ``device=``."""
    made_by, typed = creators()
    name = ctx.qualname(node.func)
    if (name not in made_by and name not in typed) or keyword(node, "device") is not None:
        return None
    return None if made_where_handed(node, name, ctx.qualname) else name  # `normal(mu, s)`


def _in_an_optimizer(scope: PortScope | None, ctx: Context) -> bool:
    """A method of a class that subclasses an optimizer: its state follows the parameters."""
    return scope is not None and scope.cls is not None and subclasses_optimizer(scope.cls, ctx)


def _placing(node: ast.Call, name: str, device: str, ctx: Context) -> tuple[Edit, ...]:
    """The edits that create the tensor on ``device``: ``device=``, or ``.to(device)`` after."""
    from torchport.check.port._calls import TYPED_CONSTRUCTORS  # on first use
    from torchport.check.port._chains import drawn

    if (chain := drawn(node, port_facts(ctx).parents)) is not None:  # `.normal_()` after it
        return ctx.append_call(chain, f".to({device})")  # drawn by the CPU's generator
    if name in _MOVE_AFTER or name in TYPED_CONSTRUCTORS:  # typed ones take no device=
        return move_after(node, device, ctx)
    return (add_keyword(node, f"device={device}", ctx),)
