"""A module that defines its own Triton kernel needs a GPU anyway, one importing Triton does not
(``rules/_own_kernels.py``, ``rules/_cuda_projects.needs_cuda_anyway``; issue 34 item 5,
the Triton tools of held-out samples AB and AF, judged low (a)).

A default run leaves the rules naming CUDA out of a module whose top level defines a function
decorated by Triton's ``jit``, ``autotune`` or ``heuristics`` (by any import), and reports them
where Triton is only imported, where the kernel is defined under an ``if``, a ``try``, in a
function or in a class (a fast path the module may run without), and where the decorator is
another library's ``jit`` (``torch.jit.script``, Numba's) or the program's own. A run naming
the rule reports it everywhere.

Programs are drawn: how Triton is imported, which decorator, where the decorated function
stands, which probe (TP101's ``model.cuda()``, TP109's CUDA-or-CPU choice) and whether the probe
comes before or after the kernel. The oracle is :func:`_left`, from the tables marked by hand.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# how Triton is imported: the prefix its decorators take
IMPORTS = {
    "import triton\nimport triton.language as tl": "triton.",
    "import triton as tr": "tr.",
    "from triton import autotune, heuristics, jit": "",
    "import triton.runtime as rt": "rt.",
}
# the decorators, spelled after the prefix (True: Triton's own kernel decorator); `rt.` has
# `autotune` and `heuristics` but `jit` only as `rt.jit.jit`
DECORATORS = {
    "@{p}jit": True,
    "@{p}jit(do_not_specialize=['n'])": True,
    "@{p}autotune(configs=[], key=['n'])\n@{p}jit": True,
    "@{p}heuristics({{'EVEN': lambda args: args['n'] % 2 == 0}})\n@{p}jit": True,
    "@torch.jit.script": False,
    "@numba.njit": False,
    "@own.jit": False,  # the program's own object
}
# where the decorated function stands (True: the module's top level)
WHERE = {
    "module": ([], True),
    "if": (["if HAS_TRITON:"], False),
    "try": (["try:"], False),
    "function": (["def build():"], False),
    "class": (["class Kernels:"], False),
}
PROBES = {
    "TP101": "model.cuda()",
    "TP109": "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu'); x.to(device)",
}


def _decorator(imported: str, decorator: str) -> str:
    prefix = IMPORTS[imported]
    text = decorator.format(p=prefix)
    if prefix == "rt.":  # triton.runtime: its jit is the module `jit`'s function
        text = text.replace("@rt.jit", "@rt.jit.jit")
    return text


def program(imported: str, decorator: str, where: str, probe: str, rule: str) -> str:
    opening, _top = WHERE[where]
    indent = "    " * len(opening)
    kernel = [
        *opening,
        *(indent + line for line in _decorator(imported, decorator).split("\n")),
        indent + "def kernel(x_ptr, n):",
        indent + "    pass",
    ]
    if where == "try":
        kernel += ["except ImportError:", "    kernel = None"]
    use = ["def run(model, x):", "    " + PROBES[rule]]
    parts = [use, kernel] if probe == "before" else [kernel, use]
    head = ["import numba", "import torch", "import own", imported, "HAS_TRITON = True"]
    return "\n\n\n".join("\n".join(part) for part in [head, *parts]) + "\n"


def _left(decorator: str, where: str) -> bool:
    """Whether a default run leaves the probe: Triton's own decorator on a function of the
    module's top level."""
    return DECORATORS[decorator] and WHERE[where][1]


@settings(max_examples=80, deadline=None)
@given(
    imported=st.sampled_from(sorted(IMPORTS)),
    decorator=st.sampled_from(sorted(DECORATORS)),
    where=st.sampled_from(sorted(WHERE)),
    probe=st.sampled_from(["before", "after"]),
    rule=st.sampled_from(sorted(PROBES)),
)
def test_a_module_defining_its_own_triton_kernel_needs_a_gpu_anyway(
    imported: str, decorator: str, where: str, probe: str, rule: str
) -> None:
    source = program(imported, decorator, where, probe, rule)
    default = [f.code for f in check_text(source, "tool.py", ruleset_for(None, None)).findings]
    assert (rule in default) != _left(decorator, where), source
    named = check_text(source, "tool.py", ruleset_for([rule], None)).findings
    assert [f.code for f in named] == [rule], source  # named, the rule reports it all the same


def test_importing_triton_alone_or_a_kernel_library_is_no_sign() -> None:
    """Triton imported for an optional fast path, or a kernel imported from a library (fla's
    runs on XPU too), is no sign: the probe stays reported."""
    for head in (
        "import triton",
        "import triton.language as tl",
        "from fla.ops import chunk_gla",
        "try:\n    import triton\nexcept ImportError:\n    triton = None",
    ):
        source = f"import torch\n{head}\n\n\ndef run(model):\n    model.cuda()\n"
        default = [f.code for f in check_text(source, "m.py", ruleset_for(None, None)).findings]
        assert default == ["TP101"], source
