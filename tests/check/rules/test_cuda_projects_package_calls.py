"""A call of a CUDA-only package's function is a sign for the statements after it in its block
(``rules/_cuda_projects.py``; issue 34, held-out sample V's TP101 class (a)).

Vendored Hugging Face ``TrainingArguments`` (microsoft/LoRA's copy) imports SageMaker's
``smdistributed`` under a module-level ``if`` and picks CUDA in the arm that runs under it:
``local_rank = smp.local_rank()`` then ``device = torch.device("cuda", local_rank)``.
SageMaker's distributed libraries run only on NVIDIA GPU instances (NCCL), and the device line
runs only once the call returned, so the import happened: naming another device there helps no
one. The import may be guarded any way (``if``, ``try``): the call is the sign, not the
import. A call after the line, in another function, in a sibling arm, under ``x if c else
y``, or of a project module named like the package is none.

Programs are drawn: how the package is imported (guarded or not, a CUDA-only package or a
look-alike), where the call stands relative to the CUDA line (TP101's ``torch.device("cuda",
rank)``, on by default), and the call's form. The oracle is :func:`_left`, from the tables
marked by hand.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

# How a name `pkg` is bound: whether it is a CUDA-only package, and whether the import, made
# unguarded at the top, is already the whole file's sign (a module path imported: the file
# needs CUDA anyway; `from apex import optimizers` imports a name, read where called)
IMPORTS = {
    "import smdistributed.modelparallel.torch as pkg": (True, True),
    "import smdistributed.dataparallel.torch.distributed as pkg": (True, True),
    "import mamba_ssm as pkg": (True, True),
    "from apex import optimizers as pkg": (True, False),  # apex's kernel parts
    "import deepspeed as pkg": (False, False),  # CPU, XPU and NPU accelerators too
    "from utils import smdistributed as pkg": (False, False),  # a project module named like it
    "import torch.distributed as pkg": (False, False),
}
GUARDS = {
    "plain": "{imp}\n",
    "if": "if AVAILABLE:\n    {imp}\n",
    "try": "try:\n    {imp}\nexcept ImportError:\n    pkg = None\n",
}
# Where the call stands, and whether the CUDA line runs only after it returned
WHERE = {"before": True, "after": False, "sibling": False, "other function": False}
FORMS = {"rank = pkg.local_rank()": True, "pkg.init()": True, "rank = pkg.f() if c else 0": False}
LINE = 'device = torch.device("cuda", rank)'


def _program(imported: str, guard: str, where: str, form: str) -> str:
    head = ["import torch", "", "AVAILABLE = True", GUARDS[guard].format(imp=imported), ""]
    other = ["def other(c):", "    " + form, ""]
    body = ["def setup(self, c, rank=0):", "    if self.mp:"]
    if where == "before":
        body += ["        " + form, "        " + LINE]
    elif where == "after":
        body += ["        " + LINE, "        " + form]
    elif where == "sibling":
        body += ["        " + LINE, "    elif self.dp:", "        " + form]
    else:
        body += ["        " + LINE]
    return "\n".join([*head, *(other if where == "other function" else []), *body]) + "\n"


def _left(imported: str, guard: str, where: str, form: str) -> bool:
    """Whether a default run leaves the CUDA line alone (the tables' marks)."""
    cuda_only, whole_file = IMPORTS[imported]
    if whole_file and guard == "plain":
        return True
    return cuda_only and WHERE[where] and FORMS[form]


@given(
    imported=st.sampled_from(sorted(IMPORTS)),
    guard=st.sampled_from(sorted(GUARDS)),
    where=st.sampled_from(sorted(WHERE)),
    form=st.sampled_from(sorted(FORMS)),
)
def test_a_call_of_a_cuda_only_package_is_a_sign_for_its_block(
    imported: str, guard: str, where: str, form: str
) -> None:
    source = _program(imported, guard, where, form)
    default = [f.code for f in check_text(source, "m.py", ruleset_for(None, None)).findings]
    assert ("TP101" not in default) == _left(imported, guard, where, form), source
    named = check_text(source, "m.py", ruleset_for(["TP101"], None)).findings
    assert [f.code for f in named] == ["TP101"], source  # named, the rule reports it all the same


def test_sample_v_vendored_sagemaker_arms() -> None:
    """The three rows of sample V (LoRA's vendored transformers), as they read."""
    source = (
        "import importlib.util\n"
        "import torch\n"
        "\n"
        'if importlib.util.find_spec("smdistributed") is not None:\n'
        "    import smdistributed.modelparallel.torch as smp\n"
        "if AVAILABLE:\n"
        "    import smdistributed.dataparallel.torch.distributed as sm_dist\n"
        "\n"
        "\n"
        "class Args:\n"
        "    def _setup_devices(self):\n"
        "        if self.no_cuda:\n"
        '            device = torch.device("cpu")\n'
        "        elif self.mp_parameters:\n"
        "            local_rank = smp.local_rank()\n"
        '            device = torch.device("cuda", local_rank)\n'
        "        elif AVAILABLE:\n"
        "            sm_dist.init_process_group()\n"
        '            device = torch.device("cuda", sm_dist.get_local_rank())\n'
        "        elif self.dp:\n"
        "            import smdistributed.dataparallel.torch.distributed as dist\n"
        "\n"
        "            dist.init_process_group()\n"
        '            device = torch.device("cuda", self.local_rank)\n'
        "        else:\n"
        '            device = torch.device("cuda:0")\n'
        "        return device\n"
    )
    default = check_text(source, "m.py", ruleset_for(None, None)).findings
    assert [(f.code, f.line) for f in default] == [("TP101", 26)]
    named = check_text(source, "m.py", ruleset_for(["TP101"], None)).findings
    assert [f.line for f in named] == [16, 19, 24, 26]
