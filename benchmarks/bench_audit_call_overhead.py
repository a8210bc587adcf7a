"""What ``tp.audit()`` costs per small torch call, for one or more torchport source trees.

Each tree (``--src``, e.g. main's ``src`` and a branch's) runs in its own child process,
rounds interleaved so that load shifts hit them alike: per round, process time of
``--ops`` small calls (``torch.add(x, 1)`` on a 16-element CPU tensor) bare and under
``tp.audit()``. Prints one JSON object: per tree, the medians and the audit/bare ratio,
and each tree's audited median over the first tree's (the ratio to report).

Run: ``python benchmarks/bench_audit_call_overhead.py --src /work/main/src --src src``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_CHILD = """
import json, time, torch
import torchport as tp
x = torch.ones(16)
def loop(n):
    add = torch.add
    start = time.process_time()
    for _ in range(n):
        add(x, 1)
    return time.process_time() - start
loop(1000)
with tp.audit():
    loop(1000)
bare = loop({ops})
with tp.audit():
    audited = loop({ops})
print(json.dumps({{"bare": bare, "audited": audited, "file": tp.__file__}}))
"""


def _one(src: str, ops: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.path.abspath(src)}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(ops=ops)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--src", action="append", required=True, help="a torchport src tree")
    parser.add_argument("--ops", type=int, default=10_000, help="calls per loop")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    args = parser.parse_args(argv)
    runs: dict[str, list[dict[str, float]]] = {src: [] for src in args.src}
    for _ in range(args.rounds):
        for src in args.src:
            runs[src].append(_one(src, args.ops))
    result: dict[str, dict[str, float]] = {}
    for src, each in runs.items():
        bare = statistics.median(r["bare"] for r in each)
        audited = statistics.median(r["audited"] for r in each)
        result[src] = {
            "bare_s": round(bare, 4),
            "audited_s": round(audited, 4),
            "audit_over_bare": round(audited / bare, 2),
        }
    first = result[args.src[0]]["audited_s"]
    for src in args.src:
        result[src]["audited_over_first"] = round(result[src]["audited_s"] / first, 3)
    print(json.dumps({"ops": args.ops, "rounds": args.rounds, "trees": result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
