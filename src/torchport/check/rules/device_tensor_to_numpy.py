"""TP522 device-tensor-to-numpy: a device value handed to numpy (or to matplotlib or a host library
such as scikit-learn, which read it through numpy), or compared with an array."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._legacy_constructors import refused_on_device
from torchport.check.rules._plot_axes import TEXT_TAKERS, on_axes
from torchport.check.rules._port import (
    PortFacts,
    array_beside_device,
    host_library,
    port_facts,
    surely_on_device,
)

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortScope

_HEAD = "import numpy as np\nimport torch\n\nmodel = torch.nn.Linear(4, 2)\n"


class DeviceTensorToNumpy(Rule):
    """## What it does
    Reports device values (a model's output, a tensor made on the device, and
    values computed from them) passed to a numpy function (`np.argmax(out)`,
    `np.allclose(pred, expected)`) or to a matplotlib one (`plt.plot(xs, out)`,
    `ax.plot(out)` of `fig, ax = plt.subplots()`, `axes[0].imshow(out)`:
    matplotlib reads its data with numpy) or to a host library that reads it
    with numpy (scikit-learn's `accuracy_score(y, pred)`, scipy, pandas,
    seaborn: the line where the device value meets it), or compared with a numpy array
    (`pred == labels_np`); a list (or a dict of lists) they were put in
    (`accs.append(acc)`, `accs[epoch] += acc`, then `plt.plot(accs)`) too, also
    where a function fills a list or dict of the module (`history["loss"]`) and
    another reads it. A title, a label or a text (`ax.set_title(f"{loss:.3f}")`)
    is not reported: matplotlib formats it, as a device tensor allows. So is a
    device value given to a legacy CPU constructor (`torch.FloatTensor(x_test)`
    of a split of moved data), which raises there ("expected TensorOptions(...
    device=cpu ...)"). So is a numpy array that meets a device value in an
    operator (`out * mask` of `mask = np.ones(4)`, `model.weight[0] * x` of a
    parameter `x` given `np.ones(4)`): torch reads the array as a CPU tensor
    there; a numpy scalar (`np.sqrt(2.0)`, `a.sum()`) is fine and not reported.

    ## Why is this bad?
    On the CPU, numpy reads a tensor's memory directly. Once the model runs
    on an accelerator, the tensor is in device memory: numpy raises ("can't
    convert cuda:0 device type tensor to numpy"), and a comparison with an
    array fails on mismatched devices. The port does not guess where the
    host copy should be made; call `.cpu()` (and `.detach()`) first.
    """

    code = "TP522"
    name = "device-tensor-to-numpy"
    intent = Intent.PORT
    default = False
    message = "call `.detach().cpu()` on the device value before numpy reads it"
    node_types = (ast.Call, ast.Compare, ast.BinOp, ast.AugAssign)
    valid = (
        _HEAD + "out = model(x)\nbest = np.argmax(out.detach().cpu())\n",
        _HEAD + "a = np.ones(3)\nb = np.argmax(a)\n",
        _HEAD + "out = model(x)\ny = out * np.sqrt(2.0)\n",
    )
    invalid = (
        Example(_HEAD + "out = model(x)\nbest = np.argmax(out, axis=1)\n"),
        Example(
            _HEAD + "import matplotlib.pyplot as plt\nout = model(x)\nplt.plot(out.detach())\n"
        ),
        Example(
            _HEAD + "import matplotlib.pyplot as plt\naccs = []\n"
            "for x in xs:\n    accs.append((model(x) > 0).sum())\nplt.plot(accs)\n"
        ),
        Example(
            _HEAD + "from sklearn.metrics import accuracy_score\n"
            "pred = model(x).argmax(1)\nacc = accuracy_score(y, pred)\n"
        ),
        Example(_HEAD + "out = model(x)\nlabels = torch.LongTensor(out.argmax(1))\n"),
        Example(
            _HEAD + "labels = np.array([1, 0])\n"
            "pred = model(x).argmax(1)\n"
            "hits = (pred == labels).sum()\n"
        ),
        Example(_HEAD + "mask = np.ones(2)\nout = model(x)\ny = out * mask\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        facts = port_facts(ctx)
        scope = facts.scope_of.get(id(node))
        if scope is None or scope.internal:
            return
        if isinstance(node, ast.Call):
            built = refused_on_device(node, ctx, lambda e: surely_on_device(e, scope, facts))
            if built is not None:
                yield ctx.finding(self, node, message=built)
                return
            given = _numpy_given_a_device_tensor(node, scope, facts, ctx)
            if given is not None:
                yield ctx.finding(self, node, message=_read_message(given, scope, facts))
            return
        met = array_beside_device(node, scope, facts)  # `pred == labels`, `out * mask`
        if met is not None:
            yield ctx.finding(self, node, message=met)


def _made_by_numpy(value: ast.AST, ctx: Context) -> bool:
    return isinstance(value, ast.Call) and (ctx.qualname(value.func) or "").startswith("numpy.")


def _reads_through_numpy(call: ast.Call, scope: PortScope, facts: PortFacts, ctx: Context) -> bool:
    """A matplotlib function (``plt.plot(xs, ys)``, ``scatter``, ``hist``) or an Axes' method
    (``ax.plot``, ``axes[0].imshow``): it reads its data with numpy (``np.asarray``), which
    refuses a device tensor as ``np.argmax`` does. Not one taking a text (``plt.title``)."""
    name = ctx.qualname(call.func) or ""
    if name.startswith("matplotlib."):
        return name.rpartition(".")[2] not in TEXT_TAKERS
    return on_axes(call, scope, facts, ctx)


def _numpy_given_a_device_tensor(
    node: ast.Call, scope: PortScope, facts: PortFacts, ctx: Context
) -> ast.expr | None:
    """The argument on the device of ``np.mean(out)``, ``plt.plot(accs)``; None if none. Not
    one the program's text shows is a string or a list of them (``_text_values``)."""
    from torchport.check.port._text_values import evidently_text  # on first use

    args = [*node.args, *(k.value for k in node.keywords)]
    if host_library(ctx.qualname(node.func) or ""):
        # (a name also bound to host data, `X` of `np.arange` and of a later batch loop, is
        # the array there as often as not: only a value on the device by every binding)
        return next(
            (
                a
                for a in args
                if surely_on_device(a, scope, facts) and not evidently_text(a, scope, facts)
            ),
            None,
        )
    if not (_made_by_numpy(node, ctx) or _reads_through_numpy(node, scope, facts, ctx)):
        return None
    items = [i for a in args for i in _items(a)]
    on = (a for a in items if facts.on_device(a, scope) and not _host(a, facts))
    return next((a for a in on if not evidently_text(a, scope, facts)), None)


def _items(arg: ast.expr) -> list[ast.expr]:
    """A list written at the read (``np.concatenate([a, b])``) is made there and handed over
    at once, so numpy reads its items: each is asked, not the list (whose name-blind flow
    marks it a device value when one name in it has a device binding elsewhere). A list
    with a starred item is asked whole."""
    if isinstance(arg, ast.List) and not any(isinstance(e, ast.Starred) for e in arg.elts):
        return [i for e in arg.elts for i in _items(e)]
    return [arg]


def _host(expr: ast.expr, facts: PortFacts) -> bool:
    """Host data by every binding that may reach this read (``_host_values``): the flow
    marks a name a device value wherever one of its bindings is one."""
    from torchport.check.port._host_values import surely_host  # on first use

    return surely_host(expr, facts)


_CONTAINERS = (ast.List, ast.Dict, ast.ListComp, ast.DictComp)


def _read_message(given: ast.expr, scope: PortScope, facts: PortFacts) -> str:
    """What to do, naming what numpy is given: a list the device values were collected in
    (``accs``, ``acc[name]``: each value before it goes in), or the value itself."""
    holder = given.value if isinstance(given, ast.Subscript) else given
    if isinstance(holder, ast.Name):
        bound = facts.bindings(holder.id, scope) or []
        if bound and all(_a_container(v) for v in bound):
            return (
                f"call `.item()` (or `.detach().cpu()`) on each tensor put in `{holder.id}`: "
                "it holds device values, which numpy refuses"
            )
    text = ast.unparse(given)
    named = f"`{text}`" if len(text) <= 40 else "the device value"
    return f"call `.detach().cpu()` on {named} before numpy reads it: it is on the device"


def _a_container(value: ast.expr) -> bool:
    """A list or dict made in place (``[]``, ``{}``, a comprehension, ``defaultdict(list)``)."""
    if isinstance(value, ast.Call):
        func = value.func
        return (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")) in (
            "defaultdict", "OrderedDict", "dict", "list")  # fmt: skip
    if isinstance(value, ast.BinOp):  # `[0] * epochs`
        return isinstance(value.left, ast.List) or isinstance(value.right, ast.List)
    return isinstance(value, _CONTAINERS)
