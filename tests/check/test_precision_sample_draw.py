"""The repository-capped draw of ``benchmarks/bench_precision_sample.py --per-repo``.

A held-out precision sample drawn uniformly over every finding can be mostly one
repository (sample Z: 36 of 100 rows from one); ``--per-repo CAP`` walks one seeded
permutation of the findings and takes each unless its repository already has the cap.
The invariants, held here against an oracle built apart from ``capped`` (the shortest
prefix of the permutation whose capped count reaches the draw):

* the draw has ``min(n, population)`` findings, none twice, in the permutation's order;
* no repository has more than the cap the draw reports, and that cap is the smallest one
  at or above the asked cap under which the population can fill the draw;
* each repository's findings are the first of its own in the permutation (so a uniform
  sample of them when the permutation is uniform).
"""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from types import ModuleType

from hypothesis import given
from hypothesis import strategies as st

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_precision_sample.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_precision_sample", _BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CAPPED = _bench().capped

Key = tuple[str, str, int, str]


def _oracle(order: list[Key], n: int, cap: int) -> tuple[list[Key], int]:
    want = min(n, len(order))
    totals = Counter(key[0] for key in order)
    smallest = next(c for c in range(cap, len(order) + cap + 1) if _fills(totals, c, want))
    for end in range(len(order) + 1):
        seen = Counter(key[0] for key in order[:end])
        if sum(min(count, smallest) for count in seen.values()) == want:
            break
    held: Counter[str] = Counter()
    taken = []
    for key in order[:end]:
        held[key[0]] += 1
        if held[key[0]] <= smallest:
            taken.append(key)
    return taken, smallest


def _fills(totals: Counter[str], cap: int, want: int) -> bool:
    return sum(min(count, cap) for count in totals.values()) >= want


_findings = st.lists(
    st.tuples(
        st.sampled_from(["a/x", "b/y", "c/z"]),
        st.sampled_from(["f.py", "g.py"]),
        st.integers(1, 40),
        st.sampled_from(["TP101", "TP109"]),
    ),
    unique=True,
    max_size=60,
)


@given(order=_findings, n=st.integers(0, 40), cap=st.integers(1, 8))
def test_capped_draw_matches_the_oracle(order: list[Key], n: int, cap: int) -> None:
    taken, used = _CAPPED(order, n, cap)
    assert (taken, used) == _oracle(order, n, cap)
    assert len(taken) == len(set(taken)) == min(n, len(order))
    assert used >= cap
    assert all(count <= used for count in Counter(key[0] for key in taken).values())
    positions = [order.index(key) for key in taken]
    assert positions == sorted(positions)


def test_one_repository_is_held_to_the_cap() -> None:
    order = [("big/r", "f.py", i, "TP101") for i in range(50)]
    order += [(f"small/{i}", "f.py", 1, "TP101") for i in range(12)]
    taken, used = _CAPPED(order, 20, 5)
    assert used == 8  # 12 small findings + at most 8 from big/r fill 20; 7 would not
    assert Counter(key[0] for key in taken)["big/r"] == 8
    assert taken[:8] == order[:8]


def test_select_draws_from_a_rule_off_by_default(tmp_path: Path) -> None:
    """``--select CODE`` collects what ``check --select CODE`` reports, not the default run's:
    a module method's CPU tensor (TP504, a port rule off by default) is drawn from only then."""
    import json
    import subprocess

    work = tmp_path / "mirror" / "me+net" / "repo"
    work.mkdir(parents=True)
    (work / "net.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.l = nn.Linear(3, 3)\n\n"
        "    def forward(self, x):\n        return self.l(x) + torch.zeros(3)\n"
    )
    git = ["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "net.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "net"], check=True)
    commit = subprocess.run(
        [*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    repos = tmp_path / "repos.json"
    repos.write_text(json.dumps({"repos": [{"repo": "me/net", "commit": commit}]}))
    bench = _bench()
    assert bench.default_findings(tmp_path / "mirror", repos) == []
    found = bench.default_findings(tmp_path / "mirror", repos, select="TP504")
    assert found == [("me/net", "net.py", 11, "TP504")]
