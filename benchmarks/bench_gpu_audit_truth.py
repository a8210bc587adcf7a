"""Do the audit's counts on a CUDA script agree with CUDA's own and the simulator's? (GPU)

One CUDA-only script (default ``benchmarks/data/cuda_only_train.py``) runs four times,
each in a fresh process (the four at once), and each run counts its copies and host waits:

* ``audit``: under ``torchport.audit()`` on CUDA: copies up and down, host waits, and
  the script's lines holding each;
* ``profiler``: under ``torch.profiler`` with CUDA activity: the memcpy kernels each way
  (``Memcpy HtoD`` / ``Memcpy DtoH``), CUDA's own count of the copies that ran;
* ``sync-debug``: under ``torch.cuda.set_sync_debug_mode("warn")``: each call that made
  the host wait for the GPU, by the script's line;
* ``sim``: under ``torchport.audit()`` with the script's CUDA calls redirected to the
  simulated accelerator (what a GPU-less CI counts for the same script).

The verdicts: ``h2d`` (the audit's copies up, the profiler's HtoD memcpys and the
simulator's copies up are one number), ``d2h`` (the audit's copies down plus its host
waits against the profiler's DtoH memcpys: every host wait on CUDA reads device memory
back), ``sync_lines`` (the lines sync-debug mode flags are lines the audit holds an entry
for, and every line the audit names a host wait for is flagged) and ``sim`` (the
simulator's copies down and host waits match the audit's on CUDA). Prints one JSON
object; exits 1 when a verdict fails. ``--dry-run`` checks the arguments, the imports
and the script's path, and touches no GPU.

Run: ``python benchmarks/bench_gpu_audit_truth.py [SCRIPT] [--dry-run]``
"""

from __future__ import annotations

import argparse
import json
import runpy
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

DEFAULT_SCRIPT = Path(__file__).parent / "data" / "cuda_only_train.py"
MODES = ("audit", "profiler", "sync-debug", "sim")


def _audit_counts(report: Any, script: str) -> dict[str, Any]:
    h2d = sum(e.count for e in report.transfers if e.device.startswith("cpu→"))
    d2h = sum(e.count for e in report.transfers if e.device.endswith("→cpu"))
    syncs = sum(e.count for e in report.syncs)
    mine = [e for e in report.entries if Path(e.file).resolve() == Path(script).resolve()]
    return {
        "h2d": h2d,
        "d2h": d2h,
        "syncs": syncs,
        "lines": sorted({e.line for e in mine}),
        "sync_lines": sorted({e.line for e in mine if e in report.syncs}),
        "entries": [f"{e.line} {e.kind} {e.op} {e.device} x{e.count}" for e in report.entries],
        "dropped": report.dropped,
    }


def _one(mode: str, script: str) -> dict[str, Any]:
    """Run ``script`` once under ``mode``, in this process, and count."""
    import torch

    import torchport as tp

    if mode == "audit":
        with tp.audit() as report:
            runpy.run_path(script, run_name="__main__")
        torch.cuda.synchronize()
        return _audit_counts(report, script)
    if mode == "sim":
        from torchport.run import redirect
        from torchport.testing import simulate_accelerator

        with redirect(simulate_accelerator()), tp.audit() as report:
            runpy.run_path(script, run_name="__main__")
        return {**_audit_counts(report, script), "measured": report.measured}
    if mode == "profiler":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            runpy.run_path(script, run_name="__main__")
            torch.cuda.synchronize()
        names = [event.name for event in prof.events()]
        return {
            "htod": sum("Memcpy HtoD" in name for name in names),
            "dtoh": sum("Memcpy DtoH" in name for name in names),
            "dtod": sum("Memcpy DtoD" in name for name in names),
            "stream_syncs": sum(name == "cudaStreamSynchronize" for name in names),
        }
    # sync-debug
    torch.cuda.init()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            runpy.run_path(script, run_name="__main__")
        finally:
            torch.cuda.set_sync_debug_mode("default")
    flagged = [w for w in caught if "synchroniz" in str(w.message)]
    here = [w.lineno for w in flagged if Path(w.filename).resolve() == Path(script).resolve()]
    return {"warnings": len(flagged), "in_script": len(here), "lines": sorted(set(here))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("script", nargs="?", default=str(DEFAULT_SCRIPT), help="a CUDA-only script")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one child's run
    parser.add_argument("--dry-run", action="store_true", help="check arguments and imports only")
    args = parser.parse_args(argv)
    script = str(Path(args.script).resolve())
    if not Path(script).is_file():
        parser.error(f"no script at {args.script}")
    if args.mode:
        result = _one(args.mode, script)
        print("RESULT " + json.dumps(result))
        return 0
    import torch

    import torchport  # noqa: F401  (the children import it; fail here first)

    if args.dry_run:
        print(json.dumps({"dry_run": True, "script": script, "modes": list(MODES)}))
        return 0
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA device"}))
        return 1
    # the four runs at once, each in its own process: they share the GPU, not a counter
    children = {
        mode: subprocess.Popen(
            [sys.executable, __file__, script, "--mode", mode],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for mode in MODES
    }
    runs: dict[str, Any] = {}
    for mode, child in children.items():
        stdout, stderr = child.communicate(timeout=120)
        lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
        if child.returncode or not lines:
            runs[mode] = {"error": f"exit {child.returncode}", "stderr": stderr[-2000:]}
        else:
            runs[mode] = json.loads(lines[-1].removeprefix("RESULT "))
    ok = all("error" not in run for run in runs.values())
    verdicts: dict[str, bool] = {}
    if ok:
        audit, prof, sync, sim = runs["audit"], runs["profiler"], runs["sync-debug"], runs["sim"]
        verdicts = {
            "h2d": audit["h2d"] == prof["htod"] == sim["h2d"],
            "d2h": audit["d2h"] + audit["syncs"] == prof["dtoh"],
            "sync_lines": set(sync["lines"]) <= set(audit["lines"])
            and set(audit["sync_lines"]) <= set(sync["lines"]),
            "sim": (sim["d2h"], sim["syncs"]) == (audit["d2h"], audit["syncs"]),
        }
    print(json.dumps({"script": script, "runs": runs, "verdicts": verdicts}))
    return 0 if ok and all(verdicts.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
