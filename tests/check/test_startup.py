"""What `torchport check` of a small file imports: only the parts that run.

Start-up is most of what a check of one small file costs (an editor or a pre-commit
hook runs it per file), so the modules a plain check loads are held here, in fresh
interpreters: never torch, never the port analysis unless a port rule runs, none of
the other subcommands, no worker pool for one file, no CI report formats.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# torchport's modules a default check of a 3-line file may import: the command line
# (6), the engine, its semantic model and the rule catalog (~32), the file runner (~13),
# the rule modules the walk hands a node (9 of 64 here: rules are imported on first
# use, see check/_catalog.py). Measured 67 (round 5: 115; 69 before branch s34u read
# files/_remap.py and rules/_cuda_kernels.py on first use).
MODULE_BUDGET = 68
RULE_MODULE_BUDGET = 10
NEVER = ("torch", "numpy", "concurrent.futures.process", "multiprocessing", "xml")
# What a plain check of a .py file with no configuration file and no cache has no use
# for: argparse (cli/_plain_check.py reads the line), the TOML and INI readers, JSON
# (reports and the cache), hashing and temp files (cache, writes), diffs, the notebook
# reader, the signal and thread set-up of worker processes; dataclasses and inspect
# (the public types are records: check/_records.py); typing (~5 ms: the modules on this
# path import it only under `if TYPE_CHECKING:`, a module's own `TYPE_CHECKING = False`);
# the fixer (~1.6 M instructions: a check runs no fix).
NOT_FOR_A_PLAIN_CHECK = (
    "argparse", "dataclasses", "inspect", "typing", "tomllib", "configparser", "json", "hashlib",
    "tempfile", "shutil", "difflib", "secrets", "signal", "threading",
    "torchport.check.files._notebook", "torchport.check.files._write",
    "torchport.check.files._cache", "torchport.check._fix",
)  # fmt: skip


def imported_by(argv: list[str], cwd: Path) -> list[str]:
    """``sys.modules`` after ``torchport <argv>`` in a fresh interpreter run in ``cwd``."""
    probe = (  # sys.modules is read before the probe imports json to print it
        "import sys\n"
        "from torchport.cli._main import main\n"
        f"code = main({argv!r})\n"
        "modules = sorted(sys.modules)\n"
        "import json\n"
        "print(json.dumps([code, modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=cwd
    )
    assert out.returncode == 0, out.stderr
    code, modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert code == 1, out.stdout  # the finding below was reported: the rules did run
    return list(modules)


def shipped_rule_modules() -> int:
    folder = Path(__file__).parents[2] / "src" / "torchport" / "check" / "rules"
    return sum(1 for p in folder.glob("*.py") if p.name != "__init__.py")


def test_check_of_a_small_file_imports_only_what_it_runs(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text("import torch\nx = torch.zeros(3).cuda()\nprint(x)\n")
    modules = imported_by(["check", "--no-cache", "tiny.py"], tmp_path)
    ours = [m for m in modules if m == "torchport" or m.startswith("torchport.")]
    assert len(ours) < MODULE_BUDGET, ours
    rules = [m for m in ours if m.startswith("torchport.check.rules.")]
    assert len(rules) < min(RULE_MODULE_BUDGET, shipped_rule_modules()), rules
    # what is not a rule stays small: 57 measured (round 6: 55; since then the lazy
    # patterns, the records, the plain command line and the chunk's folder listings
    # (check/_listing.py) came, and the notebook reader, the writer and the cache went;
    # 58 since the engine's dispatch by name left _engine.py at its line budget; 59 since
    # finding the table (files/_config_search.py) left _config.py at its line budget;
    # 58 since files/_remap.py is read only by a fix's diff)
    assert len(ours) - len(rules) < 59, ours
    assert not [m for m in ours if m.startswith("torchport.check.port")]
    assert not [m for m in ours if m.startswith("torchport.cli.") and m != "torchport.cli.check"
                and not m.startswith("torchport.cli._")]  # fmt: skip
    for name in NEVER:
        assert not [m for m in modules if m == name or m.startswith(name + ".")], name
    # the file runner's set-up and the command line load only what this run uses
    assert not [m for m in NOT_FOR_A_PLAIN_CHECK if m in modules]


def test_a_port_rule_that_runs_imports_the_port(tmp_path: Path) -> None:
    # the other side of the rule above: the port is loaded lazily, not lost
    (tmp_path / "m.py").write_text(
        "import torch\n\nmodel = torch.nn.Linear(2, 2)\nprint(model(torch.ones(1, 2)))\n"
    )
    modules = imported_by(["check", "--no-cache", "--select", "TP501", "m.py"], tmp_path)
    assert "torchport.check.port._facts" in modules
    assert "torch" not in modules


def test_a_fix_that_asks_the_project_view_leaves_the_port_command_out(tmp_path: Path) -> None:
    # `x.cuda()` on a value of a sibling module's: the fix asks the project view
    # (port/_project_view.py), a module of the port package, whose __init__ names the
    # port command lazily: its rewriter and verifier (subprocess, tempfile, json: ~20 ms
    # of a tree run) stay out of a check, and with them `threading`, whose presence
    # turns off cli/_main.exit_now (the teardown then freed every tree and fact the
    # project view kept: 0.3-0.4 s of a detectron2 run)
    (tmp_path / "helpers.py").write_text("def make():\n    return 1\n")
    (tmp_path / "m.py").write_text("from helpers import make\n\nx = make()\nx.cuda()\n")
    modules = imported_by(["check", "--no-cache", "m.py"], tmp_path)
    assert "torchport.check.port._project_view" in modules  # the view was asked
    left_out = ("torchport.check.port._rewrite", "torchport.check.port._verify", "subprocess")
    for name in (*left_out, "tempfile", "json", "threading"):
        assert name not in modules, name


def test_no_checker_module_imports_typing() -> None:
    # typing costs ~5 ms of every run that imports it (a tree run imports most rules,
    # the semantic model's following and the notebook reader; the argparse line imports
    # every subcommand's module): each of them says `TYPE_CHECKING = False` instead.
    src = Path(__file__).parents[2] / "src"
    names = sorted(
        ".".join(p.relative_to(src).with_suffix("").parts).removesuffix(".__init__")
        for p in (src / "torchport" / "check").rglob("*.py")
    )
    probe = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "    if 'typing' in sys.modules:\n"
        "        print(name)\n"
        "        break\n"
        "from torchport.cli._main import build_parser\n"
        "build_parser()\n"  # every subcommand's module registered
        "print('typing' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"], out.stdout


# Run in a fresh interpreter: the patterns compiled while a check of `sys.argv[1]` runs,
# each lazy pattern compiled once per process (check/_patterns.py).
_COMPILED = """
import json, re, sys
from torchport.cli._main import main
seen = []
compile_ = re._compile
re._compile = lambda pattern, flags: seen.append(str(pattern)) or compile_(pattern, flags)
main(["check", "--no-cache", sys.argv[1]])
print(json.dumps(seen))
"""


def test_a_check_compiles_no_pattern_its_text_cannot_match(tmp_path: Path) -> None:
    # (~0.2-0.7 ms each at start-up) a file with no quote, no indented line, no "\r", not
    # named for a test, naming no CUDA package: none of the patterns that need one is compiled
    (tmp_path / "tiny.py").write_text("import torch\nx = torch.zeros(3).cuda()\nprint(x)\n")
    out = subprocess.run(
        [sys.executable, "-c", _COMPILED, "tiny.py"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    compiled = json.loads(out.stdout.strip().splitlines()[-1])
    needs = {"[\\\"']": "a quote", "\\n[ \\t]+(?:import": "an indented line",
             "\\r\\n|\\r|\\n": "a \\r", "test_\\w*\\.py": "a test name",
             "\\b(?:amp_C|": "a CUDA package's name"}  # fmt: skip
    assert not [(p, why) for p in compiled for part, why in needs.items() if part in p]
