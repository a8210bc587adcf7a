"""TP119: a call of the project's own function whose body hard-codes CUDA.

Recall round 5d (MIC-DKFZ/nnUNet: ``data = to_cuda(data)`` in each trainer, the helper in
``utilities/to_torch.py`` calling ``.cuda(gpu_id)``): the maintainers changed the calls.
The oracle is written from what the program does, apart from the rule: a call of a helper
moves its argument to CUDA when every path of the helper hands back the argument moved by
``.cuda(...)`` or ``.to("cuda...")`` (a branch on a GPU flag or on
``torch.cuda.is_available()`` is a choice; a step that moves something and returns another
value is TP101's, not a mover); a call moves data to CUDA unless a CUDA check guards it;
the helper may live in the file or in a sibling module, imported by name or through its
module.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, check_source

# (the helper's move, whether it names CUDA)
MOVES = (
    ("data.cuda()", True),
    ("data.cuda(gpu_id, non_blocking=True)", True),
    ('data.to("cuda")', True),
    ('data.to("cuda:1")', True),
    ("[d.cuda() for d in data]", True),
    ("data.to(gpu_id)", False),
    ("data.cpu()", False),
    ('data.to("cpu")', False),
)
# (how the helper's body wraps its move, whether a call of it then moves its argument to
# CUDA on every path: a branch on a device question chooses; a path handing the argument
# back unmoved makes it no mover; a step that moves and hands back something else neither)
BODIES = (
    ("    return {move}\n", True),
    ("    data = {move}\n    return data\n", True),
    ("    if isinstance(data, list):\n        return data\n    return {move}\n", False),
    ("    if torch.cuda.is_available():\n        return {move}\n    return data\n", False),
    ("    if use_gpu:\n        return {move}\n    return data\n", False),
    ("    return {move} if gpu_id is not None else data\n", False),
    ("    out = {move}\n    print(out)\n    return len(data)\n", False),
    ("    {move}\n", False),
)
# (how the caller reaches the helper: its import (None: defined in the file), the callee)
REACHES = (
    (None, "to_gpu"),
    ("from helpers import to_gpu", "to_gpu"),
    ("from helpers import to_gpu as move", "move"),
    ("import helpers", "helpers.to_gpu"),
    ("import helpers as h", "h.to_gpu"),
)
# (the caller's guard, whether it guards the call)
GUARDS = (("", False), ("if torch.cuda.is_available():\n", True))

_HELPER = "def to_gpu(data, gpu_id=0, use_gpu=True):\n{body}"


def _project(body: str, reach: str | None, callee: str, guard: str) -> dict[str, str]:
    helper = _HELPER.format(body=body)
    line = f"batch = {callee}(batch)\n"
    if guard:
        line = guard + "    " + line
    if reach is None:
        return {"train.py": f"import torch\n\n\n{helper}\n\n{line}"}
    return {
        "helpers.py": f"import torch\n\n\n{helper}",
        "train.py": f"import torch\n{reach}\n\n{line}",
    }


def _reported(files: dict[str, str]) -> bool:
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for file, text in files.items():
            (folder / file).write_text(text)
        result = check_paths([folder / "train.py"], select=["TP119"], jobs=1)
    return any(f.code == "TP119" for f in result.findings)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(MOVES),
    st.sampled_from(BODIES),
    st.sampled_from(REACHES),
    st.sampled_from(GUARDS),
)
def test_a_call_is_reported_when_it_moves_data_to_cuda_unguarded(
    move: tuple[str, bool],
    body: tuple[str, bool],
    reach: tuple[str | None, str],
    guard: tuple[str, bool],
) -> None:
    files = _project(body[0].format(move=move[0]), reach[0], reach[1], guard[0])
    moves_to_cuda = move[1] and body[1]
    assert _reported(files) == (moves_to_cuda and not guard[1]), files


def test_the_message_names_the_helper_and_its_cuda_line(tmp_path: Path) -> None:
    (tmp_path / "to_torch.py").write_text(
        "import torch\n\n\ndef to_cuda(data, gpu_id=0):\n    return data.cuda(gpu_id)\n"
    )
    (tmp_path / "train.py").write_text("from to_torch import to_cuda\n\nx = to_cuda(x)\n")
    (found,) = check_paths([tmp_path / "train.py"], select=["TP119"], jobs=1).findings
    assert found.line == 3
    assert "`to_cuda`" in found.message and "to_torch.py:5" in found.message
    assert found.fix is None


def test_a_helper_with_a_device_parameter_is_told_to_use_it() -> None:
    source = (
        "import torch\n\n\ndef to_gpu(data, device=None):\n    return data.cuda()\n\n\n"
        "x = to_gpu(x, device)\n"
    )
    (found,) = check_source(source, "t.py", select=["TP119"])
    assert "its device parameter" in found.message and "line 5" in found.message


def test_a_method_or_a_nested_function_of_the_same_name_is_not_the_helper() -> None:
    source = (
        "import torch\n\n\ndef to_gpu(x):\n    return x.cuda()\n\n\n"
        "class Batch:\n    def to_gpu(self):\n        return self\n\n"
        "    def step(self):\n        return self.to_gpu()\n\n\n"
        "def run(x):\n    def to_gpu(y):\n        return y\n\n    return to_gpu(x)\n"
    )
    assert check_source(source, "t.py", select=["TP119"]) == []


def test_a_module_without_the_name_or_a_stdlib_import_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def other(x):\n    return x.cuda()\n")
    (tmp_path / "train.py").write_text(
        "import json\nfrom helpers import to_gpu\n\nx = to_gpu(json.loads(s))\n"
    )
    assert check_paths([tmp_path / "train.py"], select=["TP119"], jobs=1).findings == []
