"""How often the port's leftover reports are noise (issue 31, item 5): two measures.

``fuzz``: the port fuzz's programs (``tests/check/port/port_programs.py``), each through
the test's own ``check_port`` (port, idempotence, same CPU values, the meta run), then
every ported program that ran on the CPU run to its end on the simulated accelerator in
one child (``run_on_sim``). A program is *silent* when it stops or leaves data off the
device with nothing reported, *noise* when it ran there with everything on the device and
the port still reported something. Prints the counts; ``--out FILE`` writes the noisy
programs with their findings (JSON), to group them into classes.

``sample``: every TP520-TP523 finding on the repositories of
``benchmarks/data/port_noise_repos_n31.json``, through ``bench_precision_sample.py`` with
``check --select TP520,TP521,TP522,TP523`` (those rules are off by default): ``--draw``
writes them to the CSV to judge, ``--score`` scores a judged CSV against today's findings.

Run (before: the same with ``PYTHONPATH`` at the older checkout's ``src``):
``.venv/bin/python benchmarks/bench_port_noise.py fuzz --examples 300 --seed 1`` and
``.venv/bin/python benchmarks/bench_port_noise.py sample --repos
benchmarks/data/port_noise_repos_n31.json --sample
benchmarks/data/port_noise_sample_n31_after.csv --score``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PORT_RULES = "TP520,TP521,TP522,TP523"


def fuzz(examples: int, seed: int, out: Path | None) -> None:
    sys.path.insert(0, str(ROOT))
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as with_seed

    from tests.check.port.siblings import load
    from torchport.check.port import port_text

    test = load("port_fuzz_oracle", ROOT / "tests" / "check" / "port" / "test_port_fuzz.py")
    cases: dict[str, tuple[str, tuple[str, list[str]]]] = {}

    @with_seed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(test.port_programs.programs())
    def every(source: str) -> None:
        found = test.check_port(source)
        if found is not None:
            cases[found[0]] = (source, found)

    every()
    items = list(cases.values())
    results = test.run_on_sim([ported for _, (ported, _) in items])
    counts = {"silent": 0, "reported": 0, "noise": 0, "clean": 0}
    noisy: list[dict[str, Any]] = []
    for (source, (ported, left)), got in zip(items, results, strict=True):
        stopped = bool(got["error"] or got["off"])
        kind = ("reported" if left else "silent") if stopped else ("noise" if left else "clean")
        counts[kind] += 1
        if kind == "noise":
            lines = ported.splitlines()
            findings = [
                {"code": f.code, "line": f.line, "message": f.message,
                 "text": lines[f.line - 1] if 0 < f.line <= len(lines) else ""}
                for f in port_text(source).remaining
            ]  # fmt: skip
            noisy.append({"source": source, "ported": ported, "left": findings})
    found = sum(len(n["left"]) for n in noisy)
    print(f"{len(items)} ran on the CPU: {counts} ({found} findings in the noisy programs)")
    if out is not None:
        out.write_text(json.dumps(noisy, indent=1), encoding="utf-8")


def sample(rest: list[str]) -> None:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import bench_precision_sample as precision

    # the port rules are off by default: every run of `check` there selects them
    precision._CHECK = (*precision._CHECK, "--select", PORT_RULES)
    sys.argv = ["bench_precision_sample.py", *rest]
    precision.main()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    f = sub.add_parser("fuzz", help="noise and silence of the port fuzz on the simulator")
    f.add_argument("--examples", type=int, default=300)
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--out", type=Path, help="write the noisy programs here (JSON)")
    sub.add_parser("sample", help="bench_precision_sample.py's options, port rules selected")
    args, rest = parser.parse_known_args()
    if args.what == "fuzz":
        fuzz(args.examples, args.seed, args.out)
    else:
        sample(rest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
