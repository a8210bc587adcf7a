"""What a default run leaves out as of low value is counted, never lost.

A default run leaves the rules naming CUDA (``_select.CUDA_NAMING``) out of code that needs
CUDA anyway (a CUDA-only package imported, ``rules/_cuda_projects.py``), and TP101 out of a
CUDA default of a parameter or settings dict (``_select.LEFT_FORMS``): correct findings of
low value there. Left out silently, a file of such code with ``.cuda()`` on every line was
"All checks passed." (issue 34's silent empty report), and a user could not tell a clean file
from one the default run does not look at. The engine now runs those rules there too and
counts what they find (``CheckOutcome.held``, ``CheckResult.held``); the summary says how
many, in how many files, and the option that lists them.

The invariant, held against an oracle apart from the engine's scope: for every default rule
naming CUDA, what the default run lists plus what it counts as held is exactly what a run
naming the rule (``--extend-select``, which runs it everywhere) lists, code by code and file
by file; ``# noqa`` silences the same findings in both. Programs are drawn: which CUDA-only
import (none, at the top, under ``try``, in a block before some probes), which probes of the
four default rules naming CUDA (TP101's left forms among them), which lines carry a
``# noqa``, over two files.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, fix_paths
from torchport.check._select import CUDA_NAMING, select_rules
from torchport.cli import main

# the rules naming CUDA a default run selects (the others are never held: not selected)
DEFAULT_CUDA = sorted(CUDA_NAMING & {r.code for r in select_rules(None, (), ())})

PROBES = (
    "x = torch.zeros(2).cuda()",
    "model.to(torch.device('cuda'))",
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')",
    "torch.cuda.manual_seed(0)",
    "ddp = DDP(model, device_ids=[rank])",
    "y = x + 1",
    "def f(x, device='cuda'):\n    return x",
    "def g(x, device=torch.device('cuda')):\n    return x",
    "cfg = {'device': 'cuda', 'lr': 0.1}",
)
# where a CUDA-only package comes in: (lines before the probes, indent of the probes)
IMPORTS = {
    "none": ([], ""),
    "top": (["import flash_attn"], ""),
    "top, from": (["from mamba_ssm.ops import selective_scan_fn"], ""),
    "try": (["try:", "    import flash_attn", "except ImportError:", "    flash_attn = None"], ""),
    "block": (["def run():", "    import flash_attn"], "    "),
}
_HEAD = "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


@st.composite
def modules(draw: st.DrawFn) -> str:
    before, indent = IMPORTS[draw(st.sampled_from(sorted(IMPORTS)))]
    probes = draw(st.lists(st.sampled_from(PROBES), min_size=1, max_size=5))
    lines = []
    for probe in probes:
        noqa = draw(st.sampled_from(["", "  # noqa", "  # noqa: TP101", "  # noqa: TP402"]))
        first, *rest = probe.split("\n")  # a def's noqa on its first line
        lines += [indent + first + noqa, *(indent + line for line in rest)]
    return _HEAD + "\n".join([*before, *lines]) + "\n"


def _listed(root: Path, extend: list[str]) -> Counter[tuple[str, str]]:
    result = check_paths([root], extend_select=extend, jobs=1)
    assert not result.errors, result.errors
    return Counter((Path(f.path).name, f.code) for f in result.findings if f.code in extend)


@settings(max_examples=25, deadline=None)
@given(st.lists(modules(), min_size=1, max_size=2))
def test_listed_and_held_are_what_a_run_naming_the_rules_lists(texts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "pkg"  # code, neither test nor benchmark code
        root.mkdir()
        for number, text in enumerate(texts):
            (root / f"mod{number}.py").write_text(text, encoding="utf-8")
        default = check_paths([root], jobs=1)
        assert not default.errors, default.errors
        listed = Counter((Path(f.path).name, f.code) for f in default.findings)
        held: Counter[tuple[str, str]] = Counter()
        for path, per_code in default.held.items():
            held.update({(Path(path).name, code): n for code, n in per_code.items()})
        named = _listed(root, DEFAULT_CUDA)
    assert not set(held) - {(name, code) for name, code in held if code in DEFAULT_CUDA}
    assert all(n > 0 for n in held.values())
    for key in named | listed | held:
        if key[1] in DEFAULT_CUDA:
            assert listed[key] + held[key] == named[key], (key, texts)


def test_a_file_with_only_held_findings_is_never_called_clean(tmp_path: Path, capsys) -> None:
    (tmp_path / "kernels.py").write_text(
        _HEAD + "import flash_attn\nx = torch.zeros(2).cuda()\ntorch.cuda.manual_seed(0)\n",
        encoding="utf-8",
    )
    (tmp_path / "other.py").write_text(_HEAD + "import flash_attn\ny = 1\n", encoding="utf-8")
    cache = tmp_path / "cache"
    summaries = []
    for _ in range(2):  # the second run's report comes from the cache: the count too
        assert main(["check", "--cache-dir", str(cache), str(tmp_path)]) == 0
        summaries.append(capsys.readouterr().out)
    assert summaries[0] == summaries[1]
    assert "All checks passed" not in summaries[0]
    assert (
        "No findings shown: a default run leaves out 2 findings of rules naming CUDA"
        in summaries[0]
    )
    assert "(TP101,TP402) in 1 file, of low value there" in summaries[0]
    assert "`--extend-select TP101,TP402` lists them" in summaries[0]
    assert main(["check", "--no-cache", "--extend-select", "TP101,TP402", str(tmp_path)]) == 1
    shown = capsys.readouterr().out
    assert "Found 2 findings in 1 file" in shown and "Not shown" not in shown


def test_the_count_follows_the_findings_listed(tmp_path: Path, capsys) -> None:
    (tmp_path / "a.py").write_text(_HEAD + "import flash_attn\nx = torch.zeros(2).cuda()\n")
    (tmp_path / "b.py").write_text(_HEAD + "x = torch.zeros(2).cuda()\n")
    assert main(["check", "--no-cache", "--format", "grouped", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2].startswith("Found 1 finding in 1 file")
    assert lines[-1].startswith("Not shown: a default run leaves out 1 finding of rules naming")
    assert lines[-1].endswith("`--extend-select TP101` lists it.")


def test_statistics_count_what_the_table_leaves_out(tmp_path: Path, capsys) -> None:
    """An empty `--statistics` table over held findings is not all it says; JSON stays a list."""
    (tmp_path / "a.py").write_text(_HEAD + "import flash_attn\nx = torch.zeros(2).cuda()\n")
    assert main(["check", "--no-cache", "--statistics", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "No findings shown: a default run leaves out 1 finding of rules naming CUDA (TP101) in 1 "
        "file, of low value there (`--explain CODE` says where); `--extend-select TP101` lists it."
    ]
    (tmp_path / "b.py").write_text(_HEAD + "x = torch.zeros(2).cuda()\n")
    assert main(["check", "--no-cache", "--statistics", str(tmp_path)]) == 1
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split()[:2] == ["1", "TP101"]
    assert rows[1].startswith("Not shown: a default run leaves out 1 finding") and len(rows) == 2
    assert main(["check", "--no-cache", "--statistics", "--format", "json", str(tmp_path)]) == 1
    assert [r["code"] for r in json.loads(capsys.readouterr().out)] == ["TP101"]


def test_fix_never_says_0_left_alone_over_held_findings(tmp_path: Path, capsys) -> None:
    """`fix` (and its dry run) count what a default run left out, as `check` does."""
    (tmp_path / "a.py").write_text(_HEAD + "import flash_attn\nx = torch.zeros(2).cuda()\n")
    (tmp_path / "b.py").write_text(_HEAD + "y = torch.zeros(2).cuda()\n")
    note = "a default run leaves out 1 finding of rules naming CUDA (TP101) in 1 file"
    for dry in (["--diff"], []):
        assert main(["fix", *dry, str(tmp_path)]) == (1 if dry else 0)
        out = capsys.readouterr()
        lines = (out.err if dry else out.out).splitlines()  # a dry run's diff is stdout
        # under a list of fixes, the note follows the summary: "No findings shown" would read
        # as if nothing had been fixed
        verb = "Would fix" if dry else "Fixed"
        assert lines[-2] == f"{verb} 1 finding in 1 file; 0 left."
        assert lines[-1].startswith(f"Not shown: {note}")
        assert not any(line.startswith("No findings shown") for line in lines)
        assert fix_paths([tmp_path], diff=bool(dry)).held == {str(tmp_path / "a.py"): {"TP101": 1}}
    assert (
        "cuda()" in (tmp_path / "a.py").read_text()
        and ".cuda()" not in (tmp_path / "b.py").read_text()
    )
    assert fix_paths([tmp_path], extend_select=["TP101"], diff=True).held == {}
