"""Operand mixes CUDA's device rules decide on, and a recorder of what a device does with each.

``python -m tests.sim.device_rule_cases DEVICE OUT.json`` evaluates every case on
``DEVICE`` (``cuda`` on a lent GPU, ``sim`` for the simulated accelerator) and
writes ``{case: null or "ExceptionType"}``. ``benchmarks/gpu_proof.sh`` records it
on CUDA; the record is kept under ``tests/sim/data/`` and
``test_rules_recorded_on_cuda.py`` holds the simulator to it on every CPU run.

Names in a case: ``d`` the device, ``t`` ``torch.ones(3)`` on it, ``u`` a 0-dim
tensor on it, ``b`` a bool mask on it, ``s`` a 0-dim CPU float tensor, ``sb`` a
0-dim CPU bool, ``si`` a 0-dim CPU long, ``c`` a 1-dim CPU float tensor, ``ci``
CPU long indices, ``di`` device long indices.
"""

from __future__ import annotations

import datetime
import itertools
import json
import sys
from pathlib import Path
from typing import Any

import torch


def _cases() -> dict[str, str]:
    cases: dict[str, str] = {}
    binary = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder"]
    binary += ["atan2", "eq", "lt", "hypot", "copysign", "floor_divide", "xlogy", "logical_and"]
    for op in binary:
        for left, right in (("t", "s"), ("s", "t"), ("t", "c"), ("u", "s"), ("s", "u")):
            cases[f"torch.{op}({left}, {right})"] = f"torch.{op}({left}, {right})"
    for op in ("add_", "mul_", "div_", "pow_", "clamp_min_", "copysign_"):
        cases[f"t.{op}(s)"] = f"t.clone().{op}(s)"
        cases[f"s.{op}(u)"] = f"s.clone().{op}(u)"
    for op in ("addcmul", "addcdiv"):
        for first, second, third in itertools.product(("t", "s"), repeat=3):
            cases[f"torch.{op}({first}, {second}, {third})"] = (
                f"torch.{op}({first}, {second}, {third})"
            )
        cases[f"t.{op}_(s, s)"] = f"t.clone().{op}_(s, s)"
    for args in ("t, t, s", "t, s, s", "s, t, t", "t, s, 0.5", "s, t, 0.5", "t, t, u"):
        cases[f"torch.lerp({args})"] = f"torch.lerp({args})"
    for cond, x, y in itertools.product(("b", "sb"), ("t", "s"), ("t", "s")):
        cases[f"torch.where({cond}, {x}, {y})"] = f"torch.where({cond}, {x}, {y})"
    cases["torch.where(b, t, 0.0)"] = "torch.where(b, t, 0.0)"
    for bounds in ("min=s", "max=s", "min=s, max=s", "min=u, max=s", "min=t, max=s"):
        cases[f"torch.clamp(t, {bounds})"] = f"torch.clamp(t, {bounds})"
        cases[f"t.clamp_({bounds})"] = f"t.clone().clamp_({bounds})"
    cases["torch.clamp(s, min=u)"] = "torch.clamp(s, min=u)"
    cases["torch.clamp_min(t, s)"] = "torch.clamp_min(t, s)"
    cases["torch.clamp_max(t, s)"] = "torch.clamp_max(t, s)"
    more = {
        "t.masked_fill(b, s)": "t.masked_fill(b, s)",
        "t.masked_fill(sb, 1.0)": "t.masked_fill(sb, 1.0)",
        "t.masked_fill(c > 0, 1.0)": "t.masked_fill(c > 0, 1.0)",
        "t.fill_(s)": "t.clone().fill_(s)",
        "t.fill_(c[0])": "t.clone().fill_(c[0])",
        "t.copy_(c)": "t.clone().copy_(c)",
        "t.copy_(s)": "t.clone().copy_(s)",
        "c.copy_(t)": "c.clone().copy_(t)",
        "t[si]": "t[si]",
        "t[ci]": "t[ci]",
        "t[c > 0]": "t[c > 0]",
        "c[di]": "c[di]",
        "c[b]": "c[b]",
        "t[ci] = s": "t.clone().__setitem__(ci, s)",
        "t[b] = s": "t.clone().__setitem__(b, s)",
        "t[c > 0] = 1.0": "t.clone().__setitem__(c > 0, 1.0)",
        "t.index_select(0, ci)": "t.index_select(0, ci)",
        "torch.gather(t, 0, ci)": "torch.gather(t, 0, ci)",
        "torch.take(t, ci)": "torch.take(t, ci)",
        "t.scatter_(0, ci, c)": "t.clone().scatter_(0, ci, c)",
        "t.scatter_(0, di, c)": "t.clone().scatter_(0, di, c[:2])",
        "t.index_put_((ci,), s)": "t.clone().index_put_((ci,), s)",
        "t.index_put_((di,), c[:2])": "t.clone().index_put_((di,), c[:2])",
        "t.index_add_(0, ci[:2], t[:2])": "t.clone().index_add_(0, ci[:2], t[:2])",
        "t.index_fill_(0, ci, s)": "t.clone().index_fill_(0, ci, s)",
        "t.index_fill_(0, di, s)": "t.clone().index_fill_(0, di, s)",
        "torch.isin(t, c)": "torch.isin(t, c)",
        "torch.bucketize(t, c)": "torch.bucketize(t, c)",
        "torch.searchsorted(c, t)": "torch.searchsorted(c, t)",
        "torch.dot(t, c)": "torch.dot(t, c)",
        "t @ c": "t @ c",
        "torch.cat([t, c])": "torch.cat([t, c])",
        "torch.cat([t, s.reshape(1)])": "torch.cat([t, s.reshape(1)])",
        "torch.stack([u, s])": "torch.stack([u, s])",
        "torch.equal(t, c)": "torch.equal(t, c)",
        "torch.allclose(t, c)": "torch.allclose(t, c)",
        "F.linear(t, t.expand(2, 3), c[:2])": "F.linear(t, t.expand(2, 3), c[:2])",
        "F.linear(t, t.expand(2, 3), s)": "F.linear(t, t.expand(2, 3), s)",
        "F.cross_entropy(t.expand(2, 3), ci[:2])": "F.cross_entropy(t.expand(2, 3), ci[:2])",
        "F.mse_loss(t, c)": "F.mse_loss(t, c)",
        "F.mse_loss(t, s)": "F.mse_loss(t, s.expand(3))",
        "F.embedding(ci, t.expand(3, 3))": "F.embedding(ci, t.expand(3, 3))",
        "torch.add(u, 1, out=s)": "torch.add(u, 1, out=s.clone())",
        "torch.add(t, s, out=c)": "torch.add(t, s, out=c.clone())",
        "torch.mul(t, 2, out=u)": "torch.mul(u, 2, out=torch.empty((), device=d))",
        "torch.sum(t) + s": "torch.sum(t) + s",
        "s * torch.sum(t)": "s * torch.sum(t)",
        "t.new_full((2,), s)": "t.new_full((2,), s.item())",
        "torch.full_like(t, s)": "torch.full_like(t, s)",
        "t.expand_as(c)": "t.expand_as(c)",
        "torch.polar(t, s)": "torch.polar(t, s)",
        "torch.complex(t, s)": "torch.complex(t, s)",
        "torch.heaviside(t, s)": "torch.heaviside(t, s)",
        "torch.nextafter(t, s)": "torch.nextafter(t, s)",
        "torch.ldexp(t, si)": "torch.ldexp(t, si)",
        "torch.bitwise_and(si, di)": "torch.bitwise_and(si, di)",
        "torch.lt(s, u)": "torch.lt(s, u)",
        "t.sum(dtype=torch.float64) + s": "t.sum(dtype=torch.float64) + s",
    }
    cases.update(more)
    # More of each class the first record drew (2026-11-29, torch 2.11 on an H200): ops
    # whose output is allocated from the first operand, the clamp, lerp, addcmul and
    # masked_fill families, in place and out of place.
    for op in ("logical_or", "logical_xor", "fmax", "fmin", "logaddexp", "float_power"):
        for left, right in (("s", "t"), ("t", "s"), ("s", "u")):
            cases[f"torch.{op}({left}, {right})"] = f"torch.{op}({left}, {right})"
    for op in ("nextafter", "ldexp", "heaviside", "igamma", "true_divide", "rsub"):
        for left, right in (("s", "t"), ("u", "s")):
            cases[f"torch.{op}({left}, {right})"] = f"torch.{op}({left}, {right})"
    for op in ("gcd", "lcm", "bitwise_or", "bitwise_left_shift"):
        for left, right in (("si", "di"), ("di", "si")):
            cases[f"torch.{op}({left}, {right})"] = f"torch.{op}({left}, {right})"
    for call in (
        "floor_divide_(s)",
        "logical_and_(s)",
        "nextafter_(s)",
        "clamp_max_(s)",
        "clip_(min=s)",
        "fmod_(s)",
        "lerp_(t, s)",
        "lerp_(s, 0.5)",
        "addcmul_(t, s)",
        "addcmul_(s, t)",
        "addcdiv_(t, s)",
        "masked_fill_(sb, 1.0)",
        "masked_fill_(b, s)",
        "index_fill_(0, di, u)",
        "copy_(u)",
        "where(b, s)",
    ):
        cases[f"t.{call}"] = f"t.clone().{call}"
    for bounds in ("min=u", "min=c", "max=2.0, min=s", "min=t, max=t"):
        cases[f"torch.clip(t, {bounds})"] = f"torch.clip(t, {bounds})"
    extra = {
        "torch.addcmul(t, t, s, value=2)": "torch.addcmul(t, t, s, value=2)",
        "torch.addcmul(u, t, s)": "torch.addcmul(u, t, s)",
        "torch.addcmul(t, u, s)": "torch.addcmul(t, u, s)",
        "torch.addcdiv(t, u, s)": "torch.addcdiv(t, u, s)",
        "torch.lerp(t, u, s)": "torch.lerp(t, u, s)",
        "torch.lerp(u, t, s)": "torch.lerp(u, t, s)",
        "t.masked_fill(b, u)": "t.masked_fill(b, u)",
        "t.masked_fill(b, c[0])": "t.masked_fill(b, c[0])",
        "torch.masked_select(t, sb)": "torch.masked_select(t, sb)",
        "torch.masked_select(t, b)": "torch.masked_select(t, b)",
        "t.masked_scatter(b, c)": "t.masked_scatter(b, c)",
        "t.index_fill(0, di, 2.0)": "t.index_fill(0, di, 2.0)",
        "torch.where(b, t, si)": "torch.where(b, t, si)",
        "torch.where(sb, u, s)": "torch.where(sb, u, s)",
        "torch.isclose(s, t)": "torch.isclose(s, t)",
        "torch.sub(s, t, alpha=2)": "torch.sub(s, t, alpha=2)",
        "torch.special.xlog1py(s, t)": "torch.special.xlog1py(s, t)",
        "torch.special.zeta(t, s)": "torch.special.zeta(t, s)",
        "torch.special.zeta(s, t)": "torch.special.zeta(s, t)",
        "torch.dist(t, s)": "torch.dist(t, s)",
        "torch.max(t, s)": "torch.max(t, s)",
        "torch.min(s, t)": "torch.min(s, t)",
        "torch.ne(s, t)": "torch.ne(s, t)",
        "torch.bitwise_and(si, si)": "torch.bitwise_and(si, si)",
        "t + s + s": "t + s + s",
        "s + s + t": "s + s + t",
        "torch.mul(s, s) * t": "torch.mul(s, s) * t",
        "F.threshold(t, 0.5, s)": "F.threshold(t, 0.5, s.item())",
        "F.hardtanh(t, -s, 1.0)": "F.hardtanh(t, -s.item(), 1.0)",
        "torch.diff(t, prepend=c[:1])": "torch.diff(t, prepend=c[:1])",
        "torch.cumsum(t, 0, out=c)": "torch.cumsum(t, 0, out=c.clone())",
        "torch.einsum('i,i->', t, c)": "torch.einsum('i,i->', t, c)",
        "torch.tensordot(t, s, 0)": "torch.tensordot(t, s, 0)",
        "torch.outer(t, c)": "torch.outer(t, c)",
        "torch.kron(t, s.reshape(1))": "torch.kron(t, s.reshape(1))",
        "torch.polar(s, t)": "torch.polar(s, t)",
    }
    cases.update(extra)
    # Predicted from the simulator's class rules (torchport/sim/_cpu_scalars.py) before they
    # were recorded, then recorded on the H200 (2026-11-30): out= and in-place forms, ldexp's
    # dtype-dependent paths, a 0-dim host index.
    predicted = {
        "torch.clamp(t, min=s, out=o)": "torch.clamp(t, min=s, out=t.clone())",
        "torch.lerp(t, t, s, out=o)": "torch.lerp(t, t, s, out=t.clone())",
        "torch.addcmul(t, t, s, out=o)": "torch.addcmul(t, t, s, out=t.clone())",
        "torch.logical_and(s, t, out=o)": "torch.logical_and(s, t, out=b.clone())",
        "t.lt_(s)": "t.clone().lt_(s)",
        "t.heaviside_(s)": "t.clone().heaviside_(s)",
        "t.ldexp_(si)": "t.clone().ldexp_(si)",
        "torch.ldexp(t.double(), si)": "torch.ldexp(t.double(), si)",
        "torch.ldexp(t, s)": "torch.ldexp(t, s)",
        "t.index_fill_(0, si, 2.0)": "t.clone().index_fill_(0, si, 2.0)",
        "torch.dist(s, t)": "torch.dist(s, t)",
        "torch.addcdiv(t, t, s, out=o)": "torch.addcdiv(t, t, s, out=t.clone())",
    }
    cases.update(predicted)
    return cases


CASES = _cases()


def record(device: str | torch.device) -> dict[str, str | None]:
    """Each case on ``device``: None where it ran, else the exception's type name."""
    d = torch.device(device)
    names: dict[str, Any] = {
        "torch": torch,
        "F": torch.nn.functional,
        "d": d,
        "s": torch.tensor(2.0),
        "sb": torch.tensor(True),
        "si": torch.tensor(1),
        "c": torch.tensor([1.0, -2.0, 3.0]),
        "ci": torch.tensor([0, 2, 1]),
    }
    found: dict[str, str | None] = {}
    for name, expression in CASES.items():
        scope = dict(names)
        scope.update(
            t=torch.ones(3, device=d),
            u=torch.ones((), device=d),
            b=torch.tensor([True, False, True], device=d),
            di=torch.tensor([0, 2], device=d),
        )
        try:
            eval(expression, scope)  # the cases are ours, fixed above
        except Exception as caught:  # which kind is recorded; whether it raised is the fact
            found[name] = type(caught).__name__
        else:
            found[name] = None
    return found


def main(argv: list[str]) -> int:
    device, out = argv
    if device == "sim":
        from torchport.testing import simulate_accelerator

        device = str(simulate_accelerator())
    facts = {
        "torch": torch.__version__,
        "device": device,
        "recorded": datetime.date.today().isoformat(),
        "cases": record(device),
    }
    if torch.device(device).type == "cuda":
        facts["gpu"] = torch.cuda.get_device_name()
    Path(out).write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    raised = sum(v is not None for v in facts["cases"].values())
    print(f"{raised} of {len(CASES)} raised on {device}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
