"""Every way a fix once broke working code, as a regression test each.

Each case runs ``fix_source`` (safe, and unsafe where the case says so) over the
shape of code the issue found on real repositories and checks the one thing
that went wrong there: the name a fix writes is bound where it is used, to our
meaning; a fix changes only what its own rule is about; a fix that changes
results says so.
"""

from __future__ import annotations

import ast

import pytest

from torchport.check import check_source, fix_source
from torchport.check.rules._snippets import device_line

DEF = device_line()


def runs(source: str) -> dict[str, object]:
    """Execute ``source`` (CPU-only code) and return its namespace."""
    namespace: dict[str, object] = {}
    exec(compile(source, "<fixed>", "exec"), namespace)
    return namespace


def test_sibling_branch_local_is_not_used() -> None:
    source = (
        "import torch\n\n"
        "def place(model, use_mps):\n"
        "    if use_mps:\n"
        '        device = torch.device("mps")\n'
        "    else:\n"
        "        model.cuda()\n"
    )
    fixed = fix_source(source, extend_select=["TP101"])
    assert "model.to(_device)" in fixed
    assert fixed.count("_device = torch.accelerator") == 1


def test_local_assigned_later_is_not_used() -> None:
    source = (
        "import torch\n\ndef f(x):\n    y = x.cuda()\n    device = 'cpu'\n    return y, device\n"
    )
    assert "x.to(_device)" in fix_source(source, extend_select=["TP101"])


def test_one_line_import_defines_the_device_before_its_use() -> None:
    # over `xs`, repeated per item (a comprehension over a written-out `range` is TP905's)
    fixed = fix_source(  # TP106 writes `device=` (off by default since samples A-T: named)
        "import torch; x = [torch.ones(1).cuda() for _ in xs]\n", extend_select=["TP101", "TP106"]
    )
    assert fixed.startswith("import torch; device = ")
    assert fixed.index("device = ") < fixed.index("device=device")


def test_default_and_decorator_use_a_module_level_device() -> None:
    source = (
        "import torch\n\n"
        'def f(x, device=torch.device("cuda")):\n    return x.to(device)\n\n'
        "@register(torch.zeros(1).cuda())\ndef g(device):\n    return device\n"
    )
    fixed = fix_source(source, extend_select=["TP101", "TP106"])  # TP106 writes `device=`
    assert fixed.startswith("import torch\n\n" + DEF)
    assert "def f(x, device=device):" in fixed
    assert "@register(torch.zeros(1, device=device))" in fixed
    tree = ast.parse(fixed)
    assert isinstance(tree.body[1], ast.Assign)  # defined before the defs that use it


def test_function_called_before_a_later_module_device() -> None:
    source = (
        "import torch\n\ndef f(x):\n    return x.cuda()\n\nf(torch.ones(1))\n"
        'device = torch.device("cuda")\n'
    )
    fixed = fix_source(source, extend_select=["TP101"])
    assert "return x.to(_device)" in fixed


def test_device_is_not_placed_above_the_real_import_torch() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import torch\n"
        "import sys\nsys.path.insert(0, '.')\nimport torch\n\nx = torch.ones(1).cuda()\n"
    )
    fixed = fix_source(source, extend_select=["TP101"])
    assert fixed.index("\nimport torch\n") < fixed.index("device = ")


@pytest.mark.parametrize(
    "value", ['"cpu"', "args.device", 'torch.device("cuda:1")', "pick_device()"]
)
def test_module_device_with_another_meaning_is_not_reused(value: str) -> None:
    source = f"import torch\n\ndevice = {value}\n\ndef f(model):\n    model.cuda()\n"
    fixed = fix_source(source, extend_select=["TP101"])
    assert "model.to(_device)" in fixed
    assert f"device = {value}\n" in fixed


def test_enclosing_local_seen_by_a_lambda_is_not_reused() -> None:
    source = (
        "import torch\n\ndef g():\n    device = 'cpu'\n"
        "    move = lambda t: t.cuda()\n    return move, device\n"
    )
    assert "t.to(_device)" in fix_source(source, extend_select=["TP101"])


def test_star_import_device_is_not_shadowed() -> None:
    source = "from config import *\nimport torch\n\ndef f(x):\n    return x.to(device), x.cuda()\n"
    fixed = fix_source(source, extend_select=["TP101"])
    assert "x.to(device), x.to(_device)" in fixed
    assert "\ndevice = " not in fixed


@pytest.mark.parametrize(
    "call",
    [
        'cfg = dict(device="cuda")',
        'parser.set_defaults(device="cuda")',
        'ok = same_place(t, device="cuda")',
        'state = load_checkpoint(path, map_location="cuda")',
    ],
)
def test_device_keyword_of_a_call_that_is_not_torchs_is_left_alone(call: str) -> None:
    source = f"import torch\n\n{call}\n"
    assert fix_source(source, unsafe=True, extend_select=["TP101"]) == source
    assert [
        f.code for f in check_source(source, extend_select=["TP101"]) if f.fix is not None
    ] == []


def test_device_keyword_of_torch_calls_is_fixed() -> None:
    source = 'import torch\n\nx = torch.zeros(1, device="cuda")\ny = x.new_ones(2, device="cuda")\n'
    fixed = fix_source(source, extend_select=["TP101"])
    assert "torch.zeros(1, device=device)" in fixed
    assert "x.new_ones(2, device=device)" in fixed


@pytest.mark.parametrize(
    "source",
    [
        "try:\n    import torch\nexcept ImportError:\n    torch = None\n\n"
        "def f(x):\n    torch.cuda.manual_seed(0)\n    return x.cuda()\n",
        "def f(x):\n    from torch import cuda\n    cuda.manual_seed_all(0)\n    return x.cuda()\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n\n"
        "def f(x):\n    return x.cuda()\n",
    ],
)
def test_optional_torch_gets_no_import_and_no_fix(source: str) -> None:
    fixed = fix_source(source, unsafe=True, extend_select=["TP101"])
    assert fixed == source
    assert any(
        f.code == "TP101" and f.fix is None for f in check_source(source, extend_select=["TP101"])
    )


def test_torch_imported_inside_the_function_is_used_there() -> None:
    source = "def f():\n    import torch\n    torch.cuda.synchronize()\n"
    fixed = fix_source(source, select=["TP401"])
    assert "import torch\n    if torch.accelerator.is_available():" in fixed
    assert not fixed.startswith("import torch")


def test_unsafe_discarded_move_never_makes_a_global_local() -> None:
    source = "import torch\n\nbuf = torch.zeros(3)\n\ndef save():\n    buf.cpu()\n    return buf\n"
    fixed = fix_source(source, unsafe=True, extend_select=["TP101"])
    assert "buf = buf.cpu()" not in fixed
    assert runs(fixed)["save"]() is not None  # type: ignore[operator]  (no UnboundLocalError)


def test_rebinding_from_itself_terminates() -> None:
    source = (
        "import torch\n\ndef f(x):\n    x = x[0]\n    x = x[1:]\n"
        "    for _ in range(2):\n        x.item()\n        x.cpu()\n"
    )
    check_source(source, select=["ALL"])
    ast.parse(fix_source(source, select=["ALL"], unsafe=True))


def test_create_then_move_keeps_the_cuda_choice_behind_a_noqa() -> None:
    source = "import torch\n\nx = torch.ones(2).cuda()  # noqa: TP101\n"
    fixed = fix_source(source, select=["ALL"], unsafe=True)
    assert fixed == 'import torch\n\nx = torch.ones(2, device="cuda")  # noqa: TP101\n'


def test_a_stored_guard_is_not_rewritten_alone() -> None:
    source = (
        "import torch\n\ncuda = torch.cuda.is_available()\n"
        "Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n"
        "n = torch.cuda.device_count()\n"
    )
    fixed = fix_source(source, unsafe=True, extend_select=["TP101"])
    assert "torch.cuda.is_available()" in fixed
    assert "torch.cuda.device_count()" in fixed


@pytest.mark.parametrize(
    ("source", "code", "words"),
    [
        ("import torch\n\ntorch.cuda.manual_seed_all(0)\n", "TP402", "CPU generator"),
        ('import torch\n\nx = torch.ones(1).to("cuda:1")\n', "TP101", "GPU index"),
        ("import torch\n\nx = torch.ones(1).cuda(1)\n", "TP101", "GPU index"),
        (
            "import torch\n\nfor _ in s:\n    idx = torch.randperm(8).to(device)\n",
            "TP106",
            "generator",
        ),
        ("import torch\n\nidx = torch.randperm(8).to(device)\n", "TP905", "generator"),
    ],
)
def test_fixes_that_change_results_say_so(source: str, code: str, words: str) -> None:
    found = [f for f in check_source(source, select=["ALL"]) if f.code == code]
    assert found and found[0].fix is not None
    assert words in found[0].fix.changes


def test_safe_fixes_do_not_claim_changes() -> None:
    source = "import torch\n\nx = torch.zeros(3).cuda()\ntorch.cuda.synchronize()\n"
    assert all(
        not f.fix.changes
        for f in check_source(source, extend_select=["TP101"])
        if f.fix is not None and f.fix.safety.value == "safe"
    )
