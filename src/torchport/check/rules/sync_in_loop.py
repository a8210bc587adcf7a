"""TP202 sync-in-loop: ``.item()``, ``.cpu()``, ``.tolist()``, ``print(tensor)`` in loops."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import method_name
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loops import (
    every_iteration,
    not_a_device_value,
    nothing_new_to_wait_for,
    prints_a_tensor_every_iteration,
    read_on_host,
    the_wait_is_needed,
)
from torchport.check.rules._torch_code import binds_torch

_SYNCS = frozenset({"item", "tolist", "cpu"})
# `x.cpu().numpy()` is reported at `.cpu()`; a bare `.numpy()` never waits (TP201's business).
_CHAINED = _SYNCS | {"numpy"}
# Methods that only look at a tensor another way (no kernel runs): `v.detach().cpu()` too.
_VIEWS = frozenset({"detach", "view", "view_as", "flatten", "unflatten", "unsqueeze", "squeeze",
    "permute", "transpose", "t", "expand", "expand_as", "narrow", "select", "movedim"})  # fmt: skip


class SyncInLoop(Rule):
    """## What it does
    Finds host reads of device tensors inside `for`/`while` loops and comprehensions: `.item()`,
    `.tolist()`, `.cpu()` (also before `.numpy()`) and `print(tensor)`. Tensors known to be on
    the CPU already (`.cpu()` results, `torch.tensor(...)` or `torch.linspace(...)` without
    `device=`, NumPy values) are left alone: reading them waits for nothing.

    ## Why is this bad?
    Each of them waits until the device has finished all queued work and copies the value back.
    Inside a training loop that drains the GPU's queue every step, so the GPU idles while Python
    prepares the next step. Keep running sums on the device (`total += loss.detach()`) and read
    them once after the loop, or every N steps (reads under `if step % N == 0:`, `if i == 0:` or
    a `range`/`enumerate` counter among chosen steps, `if i in ckpts:`, also within an `and`,
    are not reported). Nor are reads in an outer loop that runs an inner loop (once per epoch)
    or in loops that queue no device work (no model call, `backward()`, `step()` or torch
    function): only their first read waits. `.cpu()` counts when its result is read or is a
    tensor, not when a module is offloaded (`ae = ae.cpu()`). Not reported where a read per step
    is the point: a value the loop tests (`if token.item() in stop_tokens: break`), a loop that
    ends on what it computes (beam search: `k -= len(done)`, `if k == 0: break`), a generator
    yielding in the loop, an action handed to `envs.step(a.cpu().numpy())`, a copy drawn in the
    same iteration (`cv2.rectangle(img, ...)`, `visualize(img)`), tests, an `.item()` that
    indexes a host container or sizes a range or the next call (`vocab[i.item()]`, `n = m -
    c[i].item()` then `x = gen.sample(n)`). Nor are pandas reads (`row.values.tolist()`), reads
    in a function named for the CPU (`def fill_indices_cpu(...)`), modules importing nothing
    from torch (a gym client's `obs.tolist()`), NumPy a gym or envpool environment's
    `step()`/`reset()` returns, entries a function's own dict holds only as CPU tensors
    (`d[s]["y"] = tensor(y)`).

    ## Why is it off by default?
    Under 90% real over samples A-M (131 of 153); `--extend-select TP202` runs it.
    """

    code = "TP202"
    name = "sync-in-loop"
    intent = Intent.SPEED
    default = False
    message = (
        "accumulate on the device (`total += loss.detach()`) and read once after the loop "
        "instead of syncing every iteration"
    )
    node_types = (ast.Call,)
    call_attrs = _SYNCS | {"print"}  # `print(tensor)` in a loop reads it too
    valid = (
        "import torch\n\n"
        "total = 0\nfor x in xs:\n    total += model(x).sum()\nprint(total.item())\n",
        "import torch\n\nfor k, v in d.items():\n    pass\n",
        "import torch\n\n"
        "for _ in range(n):\n    tok = model(tok)\n    if tok.item() == eos:\n        break\n",
        "import torch\n\n"
        "def stream(x):\n    for _ in range(n):\n        x = model(x)\n        yield x.tolist()\n",
        "import torch\n\n"
        "def test_model(x):\n    for t in model(x):\n        assert model(t).sum().item() > 0\n",
        "import torch\n\nfor _, row in frame.iterrows():\n    out.append(model(x))\n"
        "    rows.append(row.values.tolist())\n",
        "import torch\n\ndef fill_cpu(counts):\n    for i in range(n):\n        y = model(x)\n"
        "        k = counts[i].item()\n",
        "import torch\n\nfor i in range(3):\n    model.cpu()\n",
        "import torch\n\nfor x in xs:\n    words.append(vocab[model(x).argmax().item()])\n",
        "import torch\n\n"
        "for x in xs:\n    i = model(x).argmax().item()\n    words.append(vocab[i])\n",
        "import torch\n\n"
        "for step, x in enumerate(xs):\n    if step % 100 == 0:\n        print(x.sum().item())\n",
        (
            "import torch\n\nfor epoch in range(10):\n    total = 0\n    for x, y in loader:\n"
            "        total += crit(model(x), y).detach()\n    print(total.item())\n"
        ),
        "import torch\n\ndpr = [x.item() for x in torch.linspace(0, 0.1, 12)]\n",
        "import torch\n\nout = model(xs).cpu()\nfor row in out:\n    vals.append(row.tolist())\n",
        "import torch\n\n"
        "for i, x in enumerate(xs):\n    if i == 0:\n        print(model(x).sum().item())\n",
        "import torch\n\nfor epoch in range(n):\n    loss = model(x).sum()\n"
        "    if epoch % 20 == 0 and debug:\n        print(loss.item())\n",
        "import torch\n\nfor x in xs:\n    a = x.numpy()\n",
        "import numpy as np\nimport torch\n\nfor i in range(n):\n    loss = model(x).sum()\n"
        "    if i in np.linspace(0, n, 10, dtype=int):\n        print(loss.cpu().numpy())\n",
        "import torch\n\nvals = [t.tolist() for t in ts]\n",
        'import torch\n\nfor k, v in preds.items():\n    labels = v["labels"].tolist()\n',
        "import torch\n\nwhile opts:\n    y = model(x)\n    ae = ae.cpu()\n",
        "import torch\n\nfor k, v in stats.items():\n    stats[k] = v.detach().cpu().numpy()\n",
        "import torch\n\n"
        "while True:\n    top = model(seqs).topk(k)\n    done.extend(seqs[top.indices].tolist())\n"
        "    k -= len(top.indices)\n    if k == 0:\n        break\n",
        "import torch\n\nfor n in nodes:\n    top = model(n).max().item()\n"
        "    if top < best:\n        best = top\n",
        "import numpy as np\n\n"
        "for _ in range(n):\n    obs = env.step(act)\n    out.append(obs.tolist())\n",
        "import envpool\nimport torch\n\nenvs = envpool.make(name)\nfor _ in range(n):\n"
        "    s, r, d, _ = envs.step(act)\n    obs += s[:, 3].tolist()\n",
        "import torch\n\nfor i in r:\n    n = m - c[i].item()\n    x, y = gen.sample(n, d)\n",
    )
    invalid = (
        Example(
            "import torch\n\n"
            "for x, y in loader:\n    loss = crit(model(x), y)\n    total += loss.item()\n"
        ),
        Example(
            "import torch\n\nfor epoch in range(10):\n    for x, y in loader:\n"
            "        print(model(x).sum().item())\n"
        ),
        Example(
            "import torch\n\nwhile step < n:\n    preds.append(out.argmax(-1).cpu().numpy())\n"
        ),
        Example("import torch\n\nvals = [model(x).argmax(-1).tolist() for x in xs]\n"),
        Example(  # a value tested for membership, not the loop's counter: every iteration
            "import torch\n\nfor i in range(n):\n    loss = model(x).sum()\n"
            "    if label in seen:\n        print(loss.item())\n"
        ),
        Example(
            "import torch\n\nfor step, (x, y) in enumerate(loader):\n"
            "    total += crit(model(x), y).item()\n    global_step = epoch * n + step\n"
            "    if global_step >= max_steps:\n        break\n"
        ),
        Example("import torch\n\nfor p in params:\n    total += p.grad.norm(2).item() ** 2\n"),
        Example(
            "import torch\n\nfor i in range(3):\n    loss = torch.zeros(1) + i\n    print(loss)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if isinstance(func, ast.Attribute):
            value = _value_read_every_iteration(node, func, ctx)
            if value is None or not_a_device_value(value, ctx):
                return
            if nothing_new_to_wait_for(node, value, ctx):
                return  # reads of results already computed: only the first one waits
            if the_wait_is_needed(node, func.attr, ctx):
                return
            if not binds_torch(ctx):  # late: it builds the scope analysis
                return  # no torch in the module: its `.tolist()` reads another library's values
            from torchport.check.rules._host_entries import on_the_host  # (rarely reached)

            if on_the_host(value, ctx):  # last: it may build the scope analysis
                return  # already on the CPU (NumPy from `envs.step()`): nothing to wait for
            yield ctx.finding(self, node, message=_read_message(func.attr))
        elif prints_a_tensor_every_iteration(node, func, ctx):
            message = "`print(tensor)` in a loop waits for the device; print every N steps"
            yield ctx.finding(self, node, message=message)


def _value_read_every_iteration(
    node: ast.Call, func: ast.Attribute, ctx: Context
) -> ast.expr | None:
    """The value a sync (``.item()``, ``.tolist()``, ``.cpu()``) reads in each iteration, views
    looked through (``v.detach().item()`` reads ``v``); None when the call is no such read."""
    method = func.attr
    if method not in _SYNCS or (method != "cpu" and (node.args or node.keywords)):
        return None
    receiver = func.value
    if isinstance(receiver, ast.Call) and method_name(receiver) in _CHAINED:
        return None  # `x.cpu().tolist()`: reported once, at the inner call
    if method == "cpu" and not read_on_host(node, receiver, ctx):
        return None  # `ae = ae.cpu()`: offloading a module, not reading a tensor
    if not every_iteration(node, ctx):
        return None
    while (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr in _VIEWS
    ):
        receiver = receiver.func.value  # `v.detach()`: the value read is `v`
    return receiver


def _read_message(method: str) -> str:
    return f"`.{method}()` in a loop waits for the device every iteration; " + (
        "accumulate on the device and read once after the loop"
        if method == "item"
        else "collect on the device (`torch.stack`) and copy once after the loop"
    )
