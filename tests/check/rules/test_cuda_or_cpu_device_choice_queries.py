"""TP109 leaves a branch alone that only asks CUDA questions, its memory statistics included.

Sample Y's pos 95 (dilated-attention-pytorch ``get_memory_info``: ``if
torch.cuda.is_available():`` filling a diagnostics dict, judged low) was reported only
because it read ``torch.cuda.memory_cached()``, while ``memory_reserved()`` in the same place
was already left alone; TP109's page also named ``mem = torch.cuda.memory_reserved() if ...
else 0`` as a finding, which the code never reported.

Each query below is asked in each form by hand: a conditional expression and a branch (a
statement of its own, a dict item filled). The oracle: no TP109 for any of them; the same
branch that also places a model (``model.cuda()``) is reported, so the check can fail.
"""

from __future__ import annotations

import pytest

from torchport.check import check_source

QUERIES = (
    "memory_allocated()", "max_memory_allocated()", "memory_reserved()", "max_memory_reserved()",
    "memory_cached()", "max_memory_cached()", "memory_stats()", "mem_get_info()",
    "memory_summary()", "empty_cache()",
)  # fmt: skip
FORMS = {
    "conditional": "mem = torch.cuda.{q} if torch.cuda.is_available() else 0\n",
    "branch": "if torch.cuda.is_available():\n    torch.cuda.{q}\n",
    "dict item": "info = {{}}\nif torch.cuda.is_available():\n    info['mem'] = torch.cuda.{q}\n",
}


def _tp109(source: str) -> list[int]:
    return [f.line for f in check_source("import torch\n\n" + source, select=["TP109"])]


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("query", QUERIES)
def test_a_branch_asking_cuda_questions_is_no_device_choice(form: str, query: str) -> None:
    assert _tp109(FORMS[form].format(q=query)) == []


@pytest.mark.parametrize("query", QUERIES)
def test_the_same_branch_placing_a_model_is_reported(query: str) -> None:
    source = f"if torch.cuda.is_available():\n    x = torch.cuda.{query}\n    model.cuda()\n"
    assert _tp109(source) == [3]
