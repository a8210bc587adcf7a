"""Which static signals would remove the judged rows not real, and at what cost in real ones.

Issue 34 item 5 (branch a34ai). Pools every judged row of benchmarks/data/precision_sample*.csv
(samples A-AG, the uniform draws and J's TP303 stratum included; a row drawn twice counts
twice), reads each row's file at its pinned commit from the mirrors (``--mirror``, default
/work/.mirror: ``<owner>+<name>/repo``, a bare repository or one with ``.git``) and, for the
rows of rules naming CUDA (``_select.CUDA_NAMING``: what a default run leaves out of code that
needs CUDA anyway), counts real / low / noise per candidate signal a static check could see in
the file. A row whose file cannot be read is counted apart (``unread``).

    PYTHONPATH=src python benchmarks/bench_precision_signals.py [--mirror DIR] [--rows SIGNAL]

Signals (each a property of the row's file, or of the line's enclosing function):

* ``own-triton-kernel``: the file's top level defines a Triton kernel (the checker's own
  ``rules/_own_kernels.defines_triton_kernel``; what branch a34ai made a default-scope sign);
* ``imports-triton``: the file imports Triton anywhere;
* ``top:<package>``: the file's top level imports the package (a candidate CUDA-only stack);
* ``inner:<package>``: only a function or block of the file imports it (a lazy import);
* ``nccl``: a literal ``"nccl"`` backend in the file;
* ``parked-folder``: a folder of the path named unused, attic, scratch, scratchpad, archive,
  archived*, deprecated, legacy, old or sandbox;
* ``self-test-function``: the line is in a function named ``test_*``, ``*self_check*`` or
  ``*smoke*`` in a file no test runner collects by its name.
"""

from __future__ import annotations

import argparse
import ast
import csv
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PACKAGES = (
    *("mamba_ssm", "causal_conv1d", "flash_attn", "flashinfer", "auto_gptq", "gptqmodel"),
    *("fast_hadamard_transform", "bitblas", "awq", "tensorrt", "transformer_engine"),
    *("megatron", "sglang", "vllm", "deepspeed", "xformers", "bitsandbytes", "apex"),
    *("cupy", "pycuda", "pynvml", "spaces", "ray", "horovod", "unsloth", "triton"),
)
PARKED = re.compile(
    r"^(unused|attic|scratch|scratchpad|archive|archived.*|deprecated|legacy|old|sandbox)$"
)
NCCL = re.compile(r"""["']nccl["']""")


def _rows() -> list[dict[str, str]]:
    rows = []
    for path in sorted(DATA.glob("precision_sample*.csv")):
        if path.name.endswith("_order.txt"):
            continue
        sample = path.stem.removeprefix("precision_sample").lstrip("_") or "a"
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                if row.get("verdict") in ("real", "low", "noise"):
                    rows.append({**row, "sample": sample})
    return rows


def _git_dir(mirror: Path, repo: str) -> Path | None:
    base = mirror / repo.replace("/", "+") / "repo"
    if (base / ".git").is_dir():
        return base / ".git"
    return base if base.is_dir() else None


def _read(
    mirror: Path, row: dict[str, str], cache: dict[tuple[str, str, str], str | None]
) -> str | None:
    key = (row["repo"], row["commit"], row["path"])
    if key not in cache:
        git = _git_dir(mirror, row["repo"])
        text = None
        if git is not None:
            done = subprocess.run(
                ["git", "--git-dir", str(git), "show", f"{row['commit']}:{row['path']}"],
                capture_output=True,
                check=False,
            )
            if done.returncode == 0:
                text = done.stdout.decode("utf-8", "replace")
        cache[key] = text
    return cache[key]


def _imports(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(packages the top level imports, packages imported anywhere)."""

    def names(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name.split(".")[0] for a in node.names]
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            return [node.module.split(".")[0]]
        return []

    top = {n for stmt in tree.body for n in names(stmt)}
    anywhere = {n for node in ast.walk(tree) for n in names(node)}
    return top, anywhere


def _function_of(tree: ast.Module, line: int) -> str:
    best, start = "", 0
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and node.lineno >= start:
                best, start = node.name, node.lineno
    return best


def signals(text: str, row: dict[str, str]) -> set[str]:
    from torchport.check._context import Context
    from torchport.check.rules._own_kernels import defines_triton_kernel

    out: set[str] = set()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {"unparsable"}
    if defines_triton_kernel(Context(text, row["path"], tree)):
        out.add("own-triton-kernel")
    top, anywhere = _imports(tree)
    if "triton" in anywhere:
        out.add("imports-triton")
    for package in PACKAGES:
        if package in top:
            out.add(f"top:{package}")
        elif package in anywhere:
            out.add(f"inner:{package}")
    if NCCL.search(text):
        out.add("nccl")
    if any(PARKED.match(part) for part in Path(row["path"]).parts[:-1]):
        out.add("parked-folder")
    name = Path(row["path"]).name
    collected = name.startswith("test_") or name.endswith("_test.py")
    function = _function_of(tree, int(row["line"]))
    if not collected and re.match(r"^(test_.*|.*self_check.*|.*smoke.*)$", function):
        out.add("self-test-function")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--rows", help="list the rows of one signal")
    args = parser.parse_args()
    from torchport.check._select import CUDA_NAMING

    cache: dict[tuple[str, str, str], str | None] = {}
    table: dict[str, Counter[str]] = defaultdict(Counter)
    listed = []
    for row in _rows():
        if row["code"] not in CUDA_NAMING:
            continue
        table["all"][row["verdict"]] += 1
        text = _read(args.mirror, row, cache)
        if text is None:
            table["unread"][row["verdict"]] += 1
            continue
        for signal in signals(text, row):
            table[signal][row["verdict"]] += 1
            if signal == args.rows:
                listed.append(row)
    print(f"{'signal':32} {'real':>5} {'low':>5} {'noise':>5}")
    for signal in sorted(table, key=lambda s: (s not in ("all", "unread"), s)):
        c = table[signal]
        print(f"{signal:32} {c['real']:5} {c['low']:5} {c['noise']:5}")
    for row in listed:
        where = f"{row['repo']} {row['path']}:{row['line']}"
        print(f"  {row['sample']:10} {row['verdict']:5} {row['code']} {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
