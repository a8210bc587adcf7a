"""faiss's GPU entries need CUDA where called on every run, faiss itself nowhere
(``rules/_faiss_gpu.py``, ``rules/_cuda_projects.py``; held-out sample AC's class A1).

faiss has CPU builds: ``import faiss``, its CPU indexes, ``normalize_L2`` and
``get_num_gpus()`` run anywhere. Only a GPU build has ``StandardGpuResources``, the
``GpuIndex*`` classes and the ``index_cpu_to_gpu*`` copies, and each needs a GPU when it runs
(court-vision's re-ID class and scripts build a GPU index so, judged low (a)). So a module
needs CUDA anyway when it calls one of them on every run of the function (or module body)
holding the call, as it does for apex's CUDA-only entries; the statements after such a call
in its block need CUDA wherever it stands. A call behind an ``if``, a ``try``, a loop or a
``with``, or inside ``x if c else y``, is no sign for the module; a CPU entry, or a method of
the same name on an object of the program's own, is none at all.

Programs are drawn: how faiss is imported, which call, in which statement form, where it
stands, and where the probe stands (TP101's ``model.cuda()`` and TP109's CUDA-or-CPU choice,
rules naming CUDA that are on by default): before the call in its block, after it, or in
another function. The oracle is :func:`_left`, written from the tables marked by hand.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

IMPORTS = {
    "import faiss": "faiss.",
    "import faiss as fs": "fs.",
    "try:\n    import faiss\nexcept ImportError:\n    faiss = None": "faiss.",
}
# The calls, spelled after the import's prefix (True: a GPU entry of faiss)
CALLS = {
    "{p}StandardGpuResources()": True,
    "{p}GpuIndexFlatIP(res, 128)": True,
    "{p}GpuIndexIVFFlat(res, 128, 100)": True,
    "{p}index_cpu_to_gpu(res, 0, cpu_index)": True,
    "{p}index_cpu_to_all_gpus(cpu_index)": True,
    "{p}IndexFlatIP(128)": False,
    "{p}normalize_L2(x)": False,
    "{p}get_num_gpus()": False,
    "index.StandardGpuResources()": False,  # the program's own object
}
FORMS = {"res = {call}": True, "{call}": True, "res = {call} if fast else None": False}
WHERE = {
    "module": ([], True),
    "function": (["def search(x, cpu_index, index, fast):"], True),
    "if": (["def search(x, cpu_index, index, fast):", "    if fast:"], False),
    "try": (["def search(x, cpu_index, index, fast):", "    try:"], False),
    "for": (["def search(x, cpu_index, index, fast):", "    for _ in range(2):"], False),
    "with": (["def search(x, cpu_index, index, fast):", "    with lock:"], False),
}
PROBES = {
    "TP101": "model.cuda()",
    "TP109": "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu'); x.to(device)",
}


def program(imported: str, call: str, form: str, where: str, probe: str, rule: str) -> str:
    opening, _every = WHERE[where]
    indent = "    " * len(opening)
    use = indent + form.format(call=call.format(p=IMPORTS[imported]))
    body = [*opening]
    if probe == "before":
        body.append(indent + PROBES[rule])
    body.append(use)
    if probe == "after":
        body.append(indent + PROBES[rule])
    if where == "try":
        body += ["    except RuntimeError:", "        pass"]
    other = ["", "", "def other(model):", "    " + PROBES[rule]] if probe == "other" else []
    return "\n".join(["import torch", imported, "", *body, *other]) + "\n"


def _left(call: str, form: str, where: str, probe: str) -> bool:
    """Whether a default run leaves the probe: the module needs CUDA anyway (a GPU entry
    called on every run of its function or module body), or the probe comes after such a
    call in its block (a function defined after a call at the module's top too)."""
    gpu_call = CALLS[call] and FORMS[form]
    module = gpu_call and WHERE[where][1]
    later = probe == "after" or (probe == "other" and where == "module")
    return module or (gpu_call and later)


@settings(max_examples=150)
@given(
    imported=st.sampled_from(sorted(IMPORTS)),
    call=st.sampled_from(sorted(CALLS)),
    form=st.sampled_from(sorted(FORMS)),
    where=st.sampled_from(sorted(WHERE)),
    probe=st.sampled_from(["before", "after", "other"]),
    rule=st.sampled_from(sorted(PROBES)),
)
def test_faiss_counts_where_a_gpu_entry_is_called_on_every_run(
    imported: str, call: str, form: str, where: str, probe: str, rule: str
) -> None:
    source = program(imported, call, form, where, probe, rule)
    default = [f.code for f in check_text(source, "search.py", ruleset_for(None, None)).findings]
    assert (rule in default) != _left(call, form, where, probe), source
    named = check_text(source, "search.py", ruleset_for([rule], None)).findings
    assert [f.code for f in named] == [rule], source  # named, the rule reports it all the same
