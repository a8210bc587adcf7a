"""TP121 cpu-device-argument: ``train(device="cpu")`` where ``train`` moves its work there.

The invariant: **the CPU handed to a parameter that its function's body places work on pins
that work to the CPU**, whether a call hands it (``train(device="cpu")``) or the parameter's
own default does, for every call that leaves it out (``def __init__(self, net, device="cpu"):
self.net = net.to(device)``, trackastra, held-out recall round 5f). What places is
``port/_device_parameters.placing_parameters_of``'s answer for both.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import is_cpu_target
from torchport.check._rule import Example, Finding, FixSafety, Intent, Rule
from torchport.check.rules._test_code import benchmark_code, collected_by_a_test_runner

_TRAIN = "import torch\n\n\ndef train(model, data, device):\n    model.to(device)\n\n\n"
# An enclosing test that picks among devices: the CPU is then one choice among others.
_CHOOSING = re.compile(r"cuda|gpu|device|cpu|backend|accelerat|mps|xpu", re.IGNORECASE)


class CpuDeviceArgument(Rule):
    """## What it does
    Finds the CPU handed as a device to one of the project's own functions whose body
    places its work on the device it is handed, by a call or by the parameter's default
    (`def __init__(self, net, device="cpu"): self.net = net.to(device)`; not a parameter
    whose name says CPU, `cpu_device="cpu"`) (`.to(device)`, `device=device`,
    also through `d = torch.device(device)`; not `map_location=`): `train_gnn(device="cpu",
    args=args)`, or `run(model, "cpu")` at that parameter's position, for a function
    of the file itself, one imported from the project's own modules, or
    `module.run(...)` after `import module` (the project view's modules). Left alone:
    test code, benchmark code, a call inside a branch that tests a device (`if
    args.cpu:`), and a file with a flag that picks the device (`--device`, `--cuda`).

    ## Why is this bad?
    The function would run on any device, but this call pins it to the CPU: on a
    machine with CUDA, MPS or XPU the model and data it moves stay on the CPU. Pass
    the device picked once from `torch.accelerator` (the CPU where there is none).
    Reported without a fix: where the device should come from is the caller's.

    ## Why is it off by default?
    New (held-out recall round 5e), and not yet judged on a precision sample: a CPU
    chosen on purpose (a small model, a debugging entry) reads the same.
    `--extend-select TP121` runs it.
    """

    code = "TP121"
    name = "cpu-device-argument"
    intent = Intent.DEVICE
    default = False
    message = (
        "pick the accelerator when there is one: this call pins a device-placing function "
        "to the CPU"
    )
    fix_safety = FixSafety.NONE
    node_types = (ast.Call, ast.FunctionDef, ast.AsyncFunctionDef)
    valid = (
        _TRAIN + "train(net, batch, device=torch.device('cuda'))\n",
        _TRAIN + "if args.cpu:\n    train(net, batch, device='cpu')\n",
        "import torch\n\n\ndef show(x, device):\n    print(device)\n\n\nshow(x, device='cpu')\n",
        "x = y.to('cpu')\n",
        "import torch\n\n\ndef show(x, device='cpu'):\n    print(device)\n",
        "import torch\n\n\ndef run(net, cpu_device='cpu'):\n    return net.to(cpu_device)\n",
        "import torch\n\n\ndef load(path, device='cpu'):\n"
        "    return torch.load(path, map_location=device)\n",
    )
    invalid = (
        Example(_TRAIN + "train(net, batch, device='cpu')\n"),
        Example(_TRAIN + "def main():\n    train(net, batch, torch.device('cpu'))\n"),
        Example(
            "import torch\n\n\nclass Tracker:\n"
            "    def __init__(self, net, device='cpu'):\n        self.net = net.to(device)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from self._defaults(node, ctx)
            return
        assert isinstance(node, ast.Call)
        cpu_at = {i for i, a in enumerate(node.args) if is_cpu_target(a, ctx)}
        cpu_named = {k.arg for k in node.keywords if k.arg and is_cpu_target(k.value, ctx)}
        if not (cpu_at or cpu_named) or not isinstance(node.func, (ast.Name, ast.Attribute)):
            return
        from torchport.check.port._device_parameters import placing_parameters  # first use

        placing = placing_parameters(node, ctx)
        hit = [n for i, n in placing if n in cpu_named or (i >= 0 and i in cpu_at)]
        if not hit or _chosen(ctx) or collected_by_a_test_runner(ctx) or benchmark_code(ctx):
            return
        name = ctx.segment(node.func)
        said = f"{self.message} (`{name}` places its work on `{hit[0]}`)"
        yield ctx.finding(self, node, message=said)

    def _defaults(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, ctx: Context
    ) -> Iterator[Finding]:
        """The CPU as the default of a parameter ``func``'s own body places work on."""
        a = func.args
        positional = [*a.posonlyargs, *a.args]
        pairs = [*zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True)]
        pairs += [(p, d) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
        # a name that says CPU (`cpu_device="cpu"`) is the CPU on purpose, as TP507 reads it
        cpu = [(p.arg, d) for p, d in pairs if "cpu" not in p.arg.lower() and is_cpu_target(d, ctx)]
        if not cpu or collected_by_a_test_runner(ctx) or benchmark_code(ctx):
            return
        from torchport.check.port._device_parameters import placing_parameters_of

        placing = {n for _, n in placing_parameters_of(func)}
        for name, default in cpu:
            if name in placing and not _chosen(ctx):
                said = (
                    "pick the accelerator when there is one: this default pins the work "
                    f"`{func.name}` places on `{name}` to the CPU"
                )
                yield ctx.finding(self, default, message=said)


def _chosen(ctx: Context) -> bool:
    """Inside a branch that tests a device, or in a file with a device flag: a choice."""
    from torchport.check.port._choices import device_option  # on first use

    for outer in ctx.ancestors:
        if isinstance(outer, (ast.If, ast.IfExp, ast.While)) and _CHOOSING.search(
            ctx.segment(outer.test)
        ):
            return True
    return device_option(ctx)
