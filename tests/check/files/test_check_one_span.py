"""The program's check without a cache is one span of folder listings, not one per chunk.

``check_chunk`` opens ``_listing.listed_once`` (a check writes nothing, so the tree's
folders hold still): the module lookups, the files' versions and real paths, and the check of
every kept answer's reads are worked out once in a span. A serial check of detectron2 ran 11
chunks, so 11 spans, each listing the folders, finding the modules and checking every kept
answer (a folder's CUDA extensions, a module's facts) again. The program's own ``check
--no-cache`` (``check_paths(exits_after=True)``, from ``cli/check.py``) now runs its chunks
in one span; with a cache, in an API call, and in worker processes, a span per chunk as
before (a span notes a folder it looked for once, and the cache's records and a kept
answer's are read by a later run).

The oracle is the run with a span per chunk: on a project that reaches each kept answer
from several chunks (compat modules, a star import, a package, a ``setup.py`` building a
CUDA-only extension, a project loader), the same findings, default rules and ``ALL``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from torchport.check import _listing
from torchport.check.files import check_paths

_FILES = {
    "setup.py": (
        "from torch.utils.cpp_extension import CUDAExtension\n"
        "CUDAExtension('fused_cuda_op', ['op.cu'])\n"
    ),
    "pkg/__init__.py": "from .compat import load_state\n",
    "pkg/compat.py": "from torch import load as load_state\nimport torch as T\n",
    "pkg/model.py": (
        "import torch\n\n\nclass Net(torch.nn.Module):\n    @classmethod\n"
        "    def restore(cls, path, map_location=None):\n"
        "        return torch.load(path, map_location=map_location)\n"
    ),
    "pkg/helpers.py": "from pkg.compat import *\n\n\ndef ones():\n    return T.ones(2).cuda()\n",
    "train.py": (
        "import torch\nfrom pkg import compat\nfrom pkg.model import Net\n\n"
        "net = Net.restore('n.pt')\nw = compat.load_state('w.pt')\nx = torch.ones(2).cuda()\n"
    ),
    "kernel.py": "import fused_cuda_op\nimport torch\n\nx = torch.zeros(3, device='cuda')\n",
    "tools/run.py": "from pkg.helpers import *\n\ny = ones().cuda()\nz = T.zeros(1).cuda()\n",
    "tools/eval.py": "import torch\nfrom pkg import load_state\n\nm = load_state('m.pt')\n",
}


def _project(root: Path) -> None:
    for name, text in _FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def _run(
    root: Path, cache: Path | None, select: list[str] | None, *, exits_after: bool = False
) -> tuple[object, int]:
    before = _listing._SPANS[0]
    result = check_paths(
        [str(root)], select=select, jobs=1, cache=cache or False, exits_after=exits_after
    )
    findings = [(f.path, f.line, f.col, f.code, f.message, f.fix) for f in result.findings]
    return (findings, result.errors, result.files), _listing._SPANS[0] - before


@pytest.mark.parametrize("select", [None, ["ALL"]])
def test_one_span_finds_what_a_span_per_chunk_finds(
    tmp_path: Path, select: list[str] | None
) -> None:
    tree = tmp_path / "tree"
    _project(tree)
    each, spans = _run(tree, None, select)
    assert spans == 3  # an API call: nine files, -j 1, chunks of three (files/_plan.chunked)
    assert each[0], "the project gives findings"  # type: ignore[index]
    one, spans = _run(tree, None, select, exits_after=True)  # the program's check --no-cache
    assert spans == 1
    assert one == each
    cached, spans = _run(tree, tmp_path / "cache", select, exits_after=True)
    assert spans == 3  # with a cache: a span per chunk (its records as they were)
    assert cached == each


_PROGRAM = """
import sys
from torchport.check import _listing
from torchport.check.files import _paths
real = _paths._cached_check
def counted(*args, **kwargs):
    before = _listing._SPANS[0]
    try:
        return real(*args, **kwargs)
    finally:
        print("spans", _listing._SPANS[0] - before, file=sys.stderr)
_paths._cached_check = counted
from torchport.cli._main import main
sys.argv = ["torchport", "check", "-j", "1", *sys.argv[1:]]
main()
"""


@pytest.mark.parametrize("cache", [False, True])
def test_the_program_runs_one_span_without_a_cache_alone(tmp_path: Path, cache: bool) -> None:
    """Run as the program (``cli/_main.main`` with no ``argv``): one span with
    ``--no-cache``, a span per chunk with a cache; the same report either way."""
    _project(tmp_path / "tree")
    flags = ["--cache-dir", str(tmp_path / "c")] if cache else ["--no-cache"]
    argv = [sys.executable, "-c", _PROGRAM, *flags, "tree"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.stderr.splitlines()[-1] == ("spans 3" if cache else "spans 1")
    assert done.returncode == 1
    assert "tools/run.py:3:" in done.stdout
