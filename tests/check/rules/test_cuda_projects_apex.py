"""NVIDIA apex's ``amp.initialize`` and ``apex.parallel.DistributedDataParallel`` need CUDA where
called, not where imported (``rules/_cuda_projects.py``; sample W's class W2, issue 34).

``amp.initialize`` raises unless every parameter is on a CUDA device, and apex's DDP takes
``torch.cuda.current_stream()`` when built; importing either needs no GPU. So a module needs
CUDA anyway when it surely imports apex at its top and calls one of them on every run of the
function (or module body) holding the call (sample W's pytorch-distributed
``apex_distributed.py``, sample S's performer ``enc_dec_copy_apex.py``), and the statements
after such a call in its block need CUDA wherever it stands (they run only once it succeeded;
at the module's top, a function defined after it too).
A call behind an ``if`` (``if args.fp16:``, round 5d's nnUNet, ported and judged real), a
``try``, a loop or a ``with``, or inside ``x if c else y``, is no sign for the module; an
import under ``try`` is none either; a call of apex's other parts (``convert_syncbn_model``,
``amp.scale_loss``) is none at all.

Programs are drawn: how apex is imported, which call, in which statement form, where the call
stands, and where the probe (TP402's ``torch.cuda.manual_seed``, a rule naming CUDA that is on
by default) stands: before the call in its block, after it, or in another function. The
oracle is :func:`_left`, written from the tables marked by hand.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# How apex is imported, whether surely at the top, and the calls so spelled (True: CUDA-only)
IMPORTS = {
    "from apex import amp": (
        True,
        {"amp.initialize(model, opt)": True, "amp.scale_loss(l, opt)": False},
    ),
    "import apex": (
        True,
        {
            "apex.amp.initialize(model, opt)": True,
            "apex.parallel.DistributedDataParallel(model)": True,
            "apex.parallel.convert_syncbn_model(model)": False,
        },
    ),
    "from apex.parallel import DistributedDataParallel as DDP": (True, {"DDP(model)": True}),
    "try:\n    from apex import amp\nexcept ImportError:\n    amp = None": (
        False,
        {"amp.initialize(model, opt)": True},
    ),
}  # fmt: skip
FORMS = {"model = {call}": True, "{call}": True, "model = {call} if fp16 else model": False}
# Where the call stands: the lines opening its block, and whether it runs on every run there
WHERE = {
    "module": ([], True),
    "function": (["def main(model, opt, fp16):"], True),
    "if": (["def main(model, opt, fp16):", "    if fp16:"], False),
    "try": (["def main(model, opt, fp16):", "    try:"], False),
    "for": (["def main(model, opt, fp16):", "    for _ in range(2):"], False),
    "with": (["def main(model, opt, fp16):", "    with ctx:"], False),
}
PROBE = "torch.cuda.manual_seed(0)"


def program(imported: str, call: str, form: str, where: str, probe: str) -> str:
    opening, _every = WHERE[where]
    indent = "    " * len(opening)
    use = indent + form.format(call=call)
    body = [*opening]
    if probe == "before":
        body.append(indent + PROBE)
    body.append(use)
    if probe == "after":
        body.append(indent + PROBE)
    if where == "try":
        body += ["    except RuntimeError:", "        pass"]
    other = ["", "", "def other():", "    " + PROBE] if probe == "other function" else []
    return "\n".join(["import torch", imported, "", *body, *other]) + "\n"


def _left(imported: str, call: str, form: str, where: str, probe: str) -> bool:
    """Whether a default run leaves the probe: the module needs CUDA anyway, or the probe
    comes after a call that needs CUDA in its block (a function defined after a call at the
    module's top too: importing the module runs the call first)."""
    sure, calls = IMPORTS[imported]
    cuda_call = calls[call] and FORMS[form]
    module = sure and cuda_call and WHERE[where][1]
    later = probe == "after" or (probe == "other function" and where == "module")
    return module or (cuda_call and later)


@given(
    imported=st.sampled_from(sorted(IMPORTS)),
    data=st.data(),
    form=st.sampled_from(sorted(FORMS)),
    where=st.sampled_from(sorted(WHERE)),
    probe=st.sampled_from(["before", "after", "other function"]),
)
def test_apex_counts_where_its_cuda_only_entry_is_called_on_every_run(
    imported: str, data: st.DataObject, form: str, where: str, probe: str
) -> None:
    call = data.draw(st.sampled_from(sorted(IMPORTS[imported][1])))
    source = program(imported, call, form, where, probe)
    default = [f.code for f in check_text(source, "train.py", ruleset_for(None, None)).findings]
    assert ("TP402" in default) != _left(imported, call, form, where, probe), source
    named = check_text(source, "train.py", ruleset_for(["TP402"], None)).findings
    assert [f.code for f in named] == ["TP402"], source  # named, the rule reports it all the same
