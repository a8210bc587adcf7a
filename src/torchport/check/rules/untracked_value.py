"""TP523 untracked-value: a value meets the model and the port cannot tell where it lives."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule

_HEAD = "import torch\n\nmodel = torch.nn.Linear(4, 2)\n"


class UntrackedValue(Rule):
    """## What it does
    Reports values that meet the model (or its outputs) which the port
    neither moves nor can tell are on the device: the result of a function
    of the file (`x = make_inputs()`), `torch.load(...)`, an attribute
    (`self.data`, `args.x`), a `with` target. Batches, arguments and loop
    variables of unknown kind are TP520's; values from other libraries are
    TP521's. It reports a model put into a container or a
    `functools.partial` too (`for m in [model]:` with `m` handed on): its
    forwards there are out of the port's sight (a literal the code only takes
    the model back out of to call it, `models["a"](x)`, is followed instead; a
    worker process's `args=(model, ...)` whose function only reads or writes the
    model's weights, `shared.state_dict()`, meets nothing there),
    and a value the code itself puts on the CPU
    (`x.to("cpu")`, `device="cpu"` in a function's parameters) that meets
    the model: the port does not overrule the author's placement. A device
    value handed to a method several classes of the file define, on an object
    whose class the code does not say (`obj.apply(model(x))`), is reported too:
    which `apply` runs, and what the value meets there, the port cannot tell; so is
    one handed to a method of a class another module of the project defines
    (`Agent().step(model(x))` with `Agent` imported): that module is ported on its own. A sparse
    tensor that meets the model is reported too: whether the accelerator runs
    sparse layouts (MPS does not) only a run can tell. So is a `sys.path` entry
    the port cannot read from the code (`sys.path.append(os.environ["LIB"])`)
    when the file imports modules it cannot find: they may be the project's. So is a
    call of a name another project module binds twice (`Net` imported, then rebound) or
    through a module `__getattr__`, where one of those may be a model class, and
    so is a read of a registry the file keeps its model classes in
    (`@register("net") class Net` filling `REGISTRY`, then `REGISTRY[name]()`), and
    a `with` target of a context manager of the file handed a device value
    (`with pair(model(x)) as (c, d)`).

    ## Why is this bad?
    `torchport port` moves only what it knows is a tensor: a guess would put
    `.to(device)` on a float or a string one day and break a program that
    worked. A value it cannot follow may still be a tensor on the CPU, and
    once the model is on the accelerator the first operation mixing the two
    fails. So the port says so, rather than report "0 findings left" with
    data on the CPU: move it to `device` where it is made, or make it there.
    """

    code = "TP523"
    name = "untracked-value"
    intent = Intent.PORT
    default = False
    message = "move this value to `device` yourself: the port cannot tell where it lives"
    node_types = (ast.Module,)  # the operands are found once per file
    valid = (
        _HEAD + "x = torch.zeros(2, 4)\nout = model(x)\n",
        _HEAD + "def scale(t):\n    return t * 2\n\nout = model(scale(torch.ones(2, 4))) * 0.5\n",
        _HEAD
        + "class Config:\n    lr = 0.1\n\ncfg = Config()\nout = model(torch.ones(2, 4)) * cfg.lr\n",
        # taken back out only to be called: a forward the port follows, its input moved
        _HEAD + "models = {'a': model}\nout = models['a'](torch.ones(2, 4))\n",
    )
    invalid = (
        Example(
            _HEAD + "def make_inputs():\n    data = {'x': torch.randn(2, 4)}\n"
            "    return data['x']\n\nout = model(make_inputs())\n"
        ),
        Example(_HEAD + "x = torch.load('x.pt')\nout = model(x)\n"),
        Example(  # the attribute is named, not the class that holds it
            _HEAD + "class Data:\n    x = torch.load('x.pt')\n\nd = Data()\nout = model(d.x)\n"
        ),
        Example(_HEAD + "class Job:\n    def run(self):\n        return model(self.data)\n"),
        Example(
            _HEAD + "models = {'a': model}\nouts = [m(torch.ones(2, 4)) for m in models.values()]\n"
        ),
        Example(_HEAD + "def run(x, dev='cpu'):\n    return model(x.to(dev))\n"),
        Example(
            _HEAD + "i = torch.tensor([[0, 1], [1, 2]], device=device)\n"
            "s = torch.sparse_coo_tensor(i, torch.ones(2, device=device), (2, 4))\n"
            "out = model(s.to_dense())\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        from torchport.check.port._escapes import (
            cpu_placements,
            device_escapes,
            model_escapes,
            sparse_inputs,
        )
        from torchport.check.port._facts import port_facts
        from torchport.check.port._kinds import value_kinds
        from torchport.check.port._origins import origins
        from torchport.check.port._text_values import evidently_text
        from torchport.check.port._unsure_calls import dynamic_calls, unsure_calls

        facts = port_facts(ctx)

        named: set[int] = set()  # one finding per origin: `s, a, r = memory.sample(n)` is one
        for operand, found in origins(ctx).operands():
            untracked = [o for o in found if not o.library]
            held = facts.scope_of.get(id(operand))
            if untracked and evidently_text(operand, held, facts, value_kinds(facts).callers):
                continue  # a string, or a list of them: no tensor to move (issue 31)
            if untracked and not {id(o.node) for o in untracked} <= named:
                named.update(id(o.node) for o in untracked)
                message = (
                    f"move this value to `device` yourself: it is made by {untracked[0].what}, "
                    "which the port cannot follow, so it may be a tensor on the CPU"
                )
                if _host_copy(untracked[0].node):  # the port knows where it is: say so
                    message = (
                        f"move this value to `device` yourself: {untracked[0].what} copies it "
                        "to the CPU, and here it meets the model or what the model gave"
                    )
                yield ctx.finding(self, operand, message=message)
        for model, where in model_escapes(port_facts(ctx)):
            message = (
                f"move what meets this model to `device` yourself: it goes into {where}, "
                "where the port cannot follow it to its forwards"
            )
            yield ctx.finding(self, model, message=message)
        for value, method, why in device_escapes(port_facts(ctx)):
            message = (
                f"check what this value meets in {method} yourself: {why}, so the "
                "tensors it meets there may be on the CPU"
            )
            yield ctx.finding(self, value, message=message)
        for call in sparse_inputs(port_facts(ctx)):
            message = (
                "check this sparse tensor on the accelerator: the port moves what it is made "
                "from, but sparse layouts are not supported everywhere (MPS has none)"
            )
            yield ctx.finding(self, call, message=message)
        from torchport.check.port._script_path import unread_path_entries

        for call, modules in unread_path_entries(ctx) if port_facts(ctx).active else ():
            names = ", ".join(f"`{m}`" for m in modules)
            message = (
                f"check where {names} come from: this `sys.path` entry is not read from the "
                "code alone, so the port cannot find the modules it adds nor place their models"
            )
            yield ctx.finding(self, call, message=message)
        for call in unsure_calls(ctx):
            message = (
                f"check what `{ast.unparse(call.func)[:40]}` is: the project binds it more than "
                "once, dynamically or through a module the port cannot read, so if it is a "
                "model the port cannot place it nor what it meets"
            )
            yield ctx.finding(self, call, message=message)
        for call in dynamic_calls(ctx, bool(facts.known.classes)):
            message = (
                f"check what `{ast.unparse(call.func)[:40]}` calls: the port could not follow "
                "a class looked up by a computed name, so if it is a model the port cannot "
                "place it nor what it meets"
            )
            yield ctx.finding(self, call, message=message)
        from torchport.check.port._registries import registry_reads

        for read in registry_reads(facts):
            message = (
                f"check which class `{ast.unparse(read)[:40]}` gives and move what it makes: "
                "the file keeps model classes in this registry, and which one a read gives "
                "only a run tells"
            )
            yield ctx.finding(self, read, message=message)
        from torchport.check.port._entered_values import entered_device_values

        for target in entered_device_values(facts, origins(ctx).kinds.of):
            message = (
                f"check what `{ast.unparse(target)[:40]}` holds and move it to `device`: a "
                "context manager of the file is handed a device value here, and what it gives "
                "back the port cannot follow"
            )
            yield ctx.finding(self, target, message=message)
        for call in cpu_placements(port_facts(ctx)):
            message = (
                "the code puts this value on the CPU and it meets the model: make it on "
                "`device`, or move it there before the model sees it"
            )
            yield ctx.finding(self, call, message=message)


def _host_copy(node: ast.AST) -> bool:
    """``x.cpu()``: a copy the code makes on the CPU on purpose."""
    if not isinstance(node, ast.Call) or node.args:
        return False
    return isinstance(node.func, ast.Attribute) and node.func.attr == "cpu"
