"""The facts and the record of ``benchmarks/gpu_proof.sh``: its machine, its wheels, its results.

Subcommands (standard library only, so each runs before torchport is installed, except
``dry-check``, which imports torchport):

* ``env``: the machine as one JSON object: GPU and driver (``nvidia-smi``), the
  torch build (version, CUDA, cuDNN, compiled architectures), Python, the host.
* ``wheels DIR LIST``: which wheels ``LIST`` (``benchmarks/gpu_wheels.txt``) names
  are in ``DIR``; prints the missing ones and exits 1 if any are.
* ``dry-check COMMAND...``: each command the proof would run after the install, checked
  without a GPU in this one process: ``-m torchport ARGS`` parsed by the CLI's own parser
  (and ``bench``'s suite names looked up), ``benchmarks/SCRIPT.py ARGS`` imported and its
  ``main(ARGS + ["--dry-run"])`` run (arguments parsed, imports done, no GPU touched).
* ``assemble WORK OUT``: reads the parts ``gpu_proof.sh`` ran (``WORK/parts.tsv``,
  each part's output in ``WORK/NAME.out``) and writes ``OUT/proof.json`` and
  ``OUT/summary.md``: per part its command, status, time and budget, and the
  figures each benchmark printed.
"""

from __future__ import annotations

import json
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

TORCH_FACTS = """
import json, torch
facts = {"version": torch.__version__, "cuda": torch.version.cuda, "hip": torch.version.hip,
         "git": getattr(torch.version, "git_version", None),
         "cuda_available": torch.cuda.is_available()}
if torch.cuda.is_available():
    facts["cudnn"] = torch.backends.cudnn.version()
    facts["arch_list"] = torch.cuda.get_arch_list()
    facts["devices"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
print(json.dumps(facts))
"""


def _run(command: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 1, f"{type(exc).__name__}: {exc}"
    return done.returncode, (done.stdout + done.stderr).strip()


def env() -> dict[str, Any]:
    """The machine: GPU and driver, torch build, Python and host."""
    facts: dict[str, Any] = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "cpus": len(__import__("os").sched_getaffinity(0)),
    }
    if shutil.which("nvidia-smi"):
        query = "name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max"
        code, text = _run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"])
        facts["nvidia_smi"] = text if code == 0 else f"failed: {text}"
    else:
        facts["nvidia_smi"] = "not found"
    code, text = _run([sys.executable, "-c", TORCH_FACTS])
    try:
        facts["torch"] = json.loads(text.splitlines()[-1]) if code == 0 else f"failed: {text}"
    except (json.JSONDecodeError, IndexError):
        facts["torch"] = f"unreadable: {text[-500:]}"
    return facts


def _wanted(listing: Path) -> list[tuple[str, str]]:
    wanted = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            wanted.append((name, version))
    return wanted


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def missing_wheels(folder: Path, listing: Path) -> list[str]:
    """``name==version`` for each listed wheel with no file in ``folder``."""
    present = set()
    for wheel in folder.glob("*.whl") if folder.is_dir() else ():
        name, version = wheel.name.split("-")[:2]
        present.add((_norm(name), version))
    return [f"{n}=={v}" for n, v in _wanted(listing) if (_norm(n), v) not in present]


def _figures(text: str) -> Any:
    """What a part printed as JSON: all of its output, else its last one-line object, or None."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue
    return None


def _status(code: int, budget: int) -> str:
    if code == 0:
        return "ok"
    if code in (124, 137):
        return f"timed out ({budget} s)"
    if code == 200:
        return "skipped"
    return f"failed (exit {code})"


def _pytest_line(text: str) -> str | None:
    outcome = r"\d+ (?:passed|failed|errors?|skipped|deselected|tests? collected)"
    found = re.findall(rf"^=*\s*({outcome}.*?)\s*=*$", text, re.M)
    return found[-1] if found else None


def _failed_tests(text: str) -> list[str]:
    """The lines of a pytest run (plain, ``-v`` or xdist's ``-v``) that name a failed test."""
    named = re.compile(r"^(FAILED|ERROR) |\s(FAILED|ERROR)\s")
    return [line for line in text.splitlines() if named.search(line)][:300]


def assemble(work: Path, out: Path, *, dry_run: bool) -> int:
    """Write proof.json and summary.md from the parts run; 0 when every part passed."""
    parts = []
    for row in (work / "parts.tsv").read_text(encoding="utf-8").splitlines():
        name, code, seconds, budget, command = row.split("\t", 4)
        said = {}
        for suffix in (".out", ".err"):
            path = work / f"{name}{suffix}"
            exists = path.exists()
            said[suffix] = path.read_text(encoding="utf-8", errors="replace") if exists else ""
        text = said[".out"] + said[".err"]
        part = {
            "name": name,
            "command": command,
            "status": _status(int(code), int(budget)),
            "passed": int(code) in (0, 200),
            "exit": int(code),
            "seconds": int(seconds),
            "budget": int(budget),
            "pytest": _pytest_line(text),
            "figures": _figures(said[".out"]),
            "failed": _failed_tests(text),
            "tail": text[-1500:],
        }
        if dry_run and name == "wheels-listed" and int(code) == 1:
            # A rehearsal on a machine without the wheels: say which, and go on.
            missing = [line for line in text.splitlines() if "==" in line]
            part["status"] = f"{len(missing)} wheels missing: " + ", ".join(missing)
            part["passed"] = True
        parts.append(part)
    machine = json.loads((work / "env.json").read_text(encoding="utf-8"))
    proof = {"dry_run": dry_run, "machine": machine, "parts": parts}
    (out / "proof.json").write_text(json.dumps(proof, indent=1) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(_markdown(proof), encoding="utf-8")
    return 0 if all(p["passed"] for p in parts) else 1


def _markdown(proof: dict[str, Any]) -> str:
    machine = proof["machine"]
    torch = machine.get("torch")
    build = (
        f"torch {torch.get('version')} (CUDA {torch.get('cuda')}, cuDNN {torch.get('cudnn')})"
        if isinstance(torch, dict)
        else f"torch: {torch}"
    )
    title = "GPU proof, dry run on the CPU" if proof["dry_run"] else "GPU proof"
    lines = [
        f"# {title}",
        "",
        f"- GPU, driver: {machine.get('nvidia_smi')}",
        f"- {build}",
        f"- Python {machine.get('python')} on {machine.get('platform')}, "
        f"{machine.get('cpus')} CPUs",
        f"- total: {sum(p['seconds'] for p in proof['parts'])} s",
        "",
        "| part | status | s (budget) | result | command |",
        "| --- | --- | --- | --- | --- |",
    ]
    for part in proof["parts"]:
        result = part["pytest"] or ""
        figures = part["figures"]
        if isinstance(figures, dict) and not result:
            result = json.dumps(figures.get("checks") or figures.get("flat") or figures)[:200]
        command = part["command"].replace("|", "\\|")
        lines.append(
            f"| {part['name']} | {part['status']} | {part['seconds']} ({part['budget']}) "
            f"| {result.replace('|', '/')} | `{command}` |"
        )
    return "\n".join(lines) + "\n"


def dry_check(commands: list[str]) -> int:
    """Check each command's arguments and imports without a GPU; 0 when all pass."""
    import importlib.util
    import shlex

    failed = 0
    for command in commands:
        words = shlex.split(command)
        try:
            if words[:2] == ["-m", "torchport"]:
                from torchport.cli._main import build_parser

                args, unknown = build_parser().parse_known_args(words[2:])
                if unknown or getattr(args, "handler", None) is None:
                    raise ValueError(f"not a torchport command: {unknown or words[2:]}")
                if words[2] == "bench":
                    from torchport.bench import SUITE_NAMES

                    unknown = sorted(set(args.suites) - set(SUITE_NAMES))
                    if unknown:
                        raise ValueError(f"unknown suites {unknown}; known: {SUITE_NAMES}")
            elif words[0].endswith(".py"):
                spec = importlib.util.spec_from_file_location(Path(words[0]).stem, words[0])
                if spec is None or spec.loader is None:
                    raise FileNotFoundError(words[0])
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                code = module.main([*words[1:], "--dry-run"])
                if code != 0:
                    raise RuntimeError(f"main() returned {code}")
            else:
                raise ValueError("neither `-m torchport ...` nor a benchmarks/ script")
        except (Exception, SystemExit) as exc:  # argparse exits on bad arguments
            failed += 1
            print(f"FAIL {command}: {type(exc).__name__}: {exc}")
        else:
            print(f"ok   {command}")
    return 1 if failed else 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["dry-check"]:
        return dry_check(argv[1:])
    if argv[:1] == ["env"]:
        print(json.dumps(env()))
        return 0
    if argv[:1] == ["wheels"] and len(argv) == 3:
        missing = missing_wheels(Path(argv[1]), Path(argv[2]))
        print("\n".join(missing) if missing else "all wheels present")
        return 1 if missing else 0
    if argv[:1] == ["assemble"] and len(argv) in (3, 4):
        return assemble(Path(argv[1]), Path(argv[2]), dry_run=argv[3:] == ["--dry-run"])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
