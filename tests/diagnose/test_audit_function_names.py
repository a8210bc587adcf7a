"""Every audit entry names the program's function, not torchport's trampoline.

The audit forwards each watched torch call through a one-line trampoline made with the
caller's file and line (``diagnose/_at_caller.py``), so torch's warnings name the
program's line. An entry charged at a trampoline's frame (a ``.to(device)``, an ``.item()``,
the copy ``torch.save`` makes: ``s.py:7 in _forward``) had the right line and the
trampoline's name. Found running a CIFAR-10 training script with ``torchport run --device
sim --audit``.

Invariant: an entry's ``function`` is the name of the program's function whose code
holds the entry's line (an oracle written apart: the program's own ``ast``).
"""

from __future__ import annotations

import ast
import json
from typing import Any

from tests.sim.isolated import run_isolated

_PROGRAM = """\
import os
import tempfile

import torch


def keep(model, folder):
    torch.save(
        model.state_dict(),
        os.path.join(folder, "a.pt"),
    )
    torch.save(model.state_dict(), os.path.join(folder, "b.pt"))


def step(model, x):
    loss = model(x).sum()
    loss.backward()
    return loss.item()


def prog(dev):
    model = torch.nn.Linear(4, 2).to(dev)
    x = torch.ones(3, 4).to(dev)
    step(model, x)
    keep(model, tempfile.mkdtemp())
"""

_CHILD = """
import os, tempfile, linecache
import torchport as tp
sim = simulate_accelerator()
folder = tempfile.mkdtemp()
path = os.path.join(folder, "prog.py")
with open(path, "w") as f:
    f.write({source!r})
linecache.checkcache(path)
scope = {{"__name__": "prog"}}
exec(compile({source!r}, path, "exec"), scope)
with tp.audit() as report:
    scope["prog"](sim)
print(json.dumps([[e.line, e.function, e.label] for e in report.entries if e.file == path]))
"""


def _functions_by_line(source: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef):
            for line in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                found[line] = node.name
    return found


def test_each_entry_names_the_function_that_holds_its_line() -> None:
    entries: list[Any] = run_isolated(_CHILD.format(source=_PROGRAM))
    names = _functions_by_line(_PROGRAM)
    assert {label for _, _, label in entries} >= {"copy (torch.save of tensors on the device)"}
    assert [(line, function) for line, function, _ in entries] == [
        (line, names[line]) for line, _, _ in entries
    ], json.dumps(entries)
