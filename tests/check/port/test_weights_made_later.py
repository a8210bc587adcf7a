"""A raw weight made to require grad by a later statement, whatever made its tensor.

``w = torch.Tensor([1.0])`` then ``w.requires_grad = True`` (or ``w.requires_grad_()``),
trained by hand: the port knew such a weight only when a torch factory it lists made it
(``torch.randn(2)``, ``torch.zeros(2).float()``); made by a typed constructor, scaled
(``torch.randn(2) / 3``) or filled in place (``torch.empty(2).normal_()``), the weight was
no device value and its tensor stayed on the CPU ("0 left"; on an accelerator every tensor
it meets then has to stay there too, or the program stops). The invariant
(``_captures.mark_weights_made_later``): a name a statement makes a weight of is a device
value (what meets it is moved or reported), and each value bound to it is moved where it
is made or reported.

Programs are generated: the maker (seven forms, two a factory the port knew before), how
the weight is made one (three statements), what it is trained on (Python floats, or
tensors the program makes), how it is updated (``w -= ...`` under ``no_grad``, ``w.data =
...``, an optimizer), at module level or in a function. The oracle
(``no_cuda_sim.ports_on_sim_apart``: the original on the CPU in one child, the port on the
simulated accelerator in another, so that the CPU's backward pass does not start the
autograd engine before the simulated accelerator exists) wants the same values on
``sim:0``, or a finding left. The port is idempotent.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.check.port.no_cuda_sim import placed_or_said

pytest.importorskip("torch")

_MAKERS = {
    "typed list": "torch.Tensor([0.5, -0.5])",
    "typed float": "torch.FloatTensor([0.5, -0.5])",
    "scaled": "torch.randn(2) / 3",
    "filled in place": "torch.zeros(2).fill_(0.25)",
    "typed filled": "torch.Tensor(2).fill_(0.1)",
    "factory": "torch.randn(2)",  # (known before: the near form)
    "factory copied": "torch.zeros(2).float()",
}
_MADE = ("w.requires_grad = True", "w.requires_grad_()", "w.requires_grad_(True)")
_UPDATES = ("no_grad", "data", "optimizer")


def _program(maker: str, made: str, update: str, *, tensors: bool, inside: bool) -> str:
    body = [f"w = {_MAKERS[maker]}", _MADE_FORMS[made]]
    if update == "optimizer":
        body.append("opt = torch.optim.SGD([w], lr=0.05)")
    if tensors:
        body += ["X = torch.randn(4, 2)", "Y = torch.randn(4)"]
        body.append("for _ in range(3):")
        loss = "((X @ w - Y) ** 2).mean()"
    else:
        body.append("for x, y in zip([1.0, 2.0, 3.0], [2.0, 4.0, 6.0]):")
        loss = "((x * w).sum() - y) ** 2"
    step = {
        "no_grad": [
            "with torch.no_grad():",
            "    w -= 0.05 * w.grad",
            "w.grad.zero_()",
        ],
        "data": ["w.data = w.data - 0.05 * w.grad.data", "w.grad.data.zero_()"],
        "optimizer": ["opt.step()", "opt.zero_grad()"],
    }[update]
    body += [f"    loss = {loss}", "    loss.backward()", *("    " + s for s in step)]
    head = ["import torch", "", "torch.manual_seed(0)"]
    if inside:
        lines = [*head, "", "def main():", *("    " + b for b in body), "    return w", ""]
        lines.append("OUT.append(main().detach())")
    else:
        lines = [*head, *body, "OUT.append(w.detach())"]
    return "\n".join(lines) + "\n"


_MADE_FORMS = {m: m for m in _MADE}


_CASE = st.tuples(
    st.sampled_from(sorted(_MAKERS)),
    st.sampled_from(_MADE),
    st.sampled_from(_UPDATES),
    st.booleans(),
    st.booleans(),
)


# (each example is one simulated-accelerator child: a few, in the default run's budget)
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases=st.lists(_CASE, min_size=4, max_size=4))
@example(cases=[(m, _MADE[0], "data", False, False) for m in list(_MAKERS)[:5]])
@example(cases=[(m, _MADE[1], "no_grad", True, True) for m in list(_MAKERS)[:5]])
@example(cases=[(m, _MADE[2], "optimizer", True, False) for m in list(_MAKERS)[:5]])
def test_a_weight_made_to_require_grad_by_a_statement_isplaced_or_said(
    cases: list[tuple[str, str, str, bool, bool]],
) -> None:
    sources = [_program(m, made, u, tensors=t, inside=i) for m, made, u, t, i in cases]
    placed_or_said(sources, apart=True)
