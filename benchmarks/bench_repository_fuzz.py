"""Does `check` / `fix` / `port` survive real repositories it never saw, in every mode?

For each repository folder given (real code, fetched and never committed), on a
fresh copy per mode:

* ``check``               default rules;
* ``check ALL``           every rule, the port rules included;
* ``fix``                 safe fixes;
* ``fix --unsafe``        safe and unsafe fixes;
* ``fix --unsafe ALL``    every rule's fixes (``--select ALL``: the port rules too);
* ``port --diff``         what a port would write;
* ``port``                in place.

What is counted, per repository and mode: files, findings, internal errors (a rule
that raised, an engine crash: tracebacks turned into per-file errors), other
per-file errors (files that do not parse, notebooks refused ...), files written,
written files that do not parse (``.py``) or are no valid notebook any more
(``.ipynb``: JSON with code cells that parse, IPython lines aside), files the
second run of the same mode changes again (not idempotent), and for ``port``:
files with no torch in them that it changed (must be none) and ``.to(`` calls it
added on names the file binds to a number, a string, a bool or ``None`` literal.
Wall seconds per mode are printed too (the machine is shared: indicative only).

Strategies compared: the seven modes above, on the same copies, in one run.

Run: ``.venv/bin/python benchmarks/bench_repository_fuzz.py DIR [DIR ...]``
(each DIR one repository's ``*.py``/``*.ipynb`` files, e.g. extracted from a
``fetch`` mirror with ``git cat-file``).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from torchport.check import check_paths, fix_paths
from torchport.check.port import port_paths

_IPYTHON = re.compile(r"^\s*([%!?/,;]|\w[\w.]*\s*=\s*[!%])|\?\??\s*$")
_LITERAL = re.compile(r"^(\s*)(\w+)\s*=\s*(-?\d[\d.e_]*|True|False|None|'[^']*'|\"[^\"]*\")\s*$")


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in (".py", ".pyi", ".ipynb")
    }


def _valid(name: str, data: bytes) -> bool:
    """A written file still parses (a notebook: JSON whose code cells parse, IPython aside)."""
    try:
        text = data.decode("utf-8")
        if not name.endswith(".ipynb"):
            ast.parse(text)
            return True
        nb = json.loads(text)
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            source = "".join(source) if isinstance(source, list) else source
            if source.lstrip().startswith("%%"):
                continue
            lines = ["pass" if _IPYTHON.search(line) else line for line in source.splitlines()]
            try:
                ast.parse("\n".join(lines))
            except SyntaxError:
                continue  # a cell that did not parse before either (checked below)
        return True
    except (SyntaxError, ValueError, UnicodeDecodeError):
        return False


def _imports_torch(data: bytes) -> bool:
    # in a notebook the line sits in a JSON string: `"import torch\n",`
    return re.search(rb'(^|")\s*(import torch|from torch)\b', data, re.MULTILINE) is not None


def _moved_literals(before: bytes, after: bytes) -> list[str]:
    """``name.to(`` added by the port where the file binds ``name`` only to a literal."""
    old, new = before.decode("utf-8", "replace"), after.decode("utf-8", "replace")
    literal: dict[str, bool] = {}
    for line in old.splitlines():
        m = re.match(r"^\s*(\w+)\s*=", line)
        if m:
            literal[m[1]] = literal.get(m[1], True) and bool(_LITERAL.match(line))
    found = []
    for name, only_literal in literal.items():
        if only_literal and new.count(f"{name}.to(") > old.count(f"{name}.to("):
            found.append(name)
    return found


Mode = Callable[[Path], Any]
MODES: list[tuple[str, bool, Mode]] = [
    ("check", False, lambda p: check_paths([p], jobs=2)),
    ("check ALL", False, lambda p: check_paths([p], select=["ALL"], jobs=2)),
    ("fix", True, lambda p: fix_paths([p], jobs=2)),
    ("fix --unsafe", True, lambda p: fix_paths([p], unsafe=True, jobs=2)),
    ("fix --unsafe ALL", True, lambda p: fix_paths([p], unsafe=True, select=["ALL"], jobs=2)),
    ("port --diff", False, lambda p: port_paths([p], diff=True, jobs=2)),
    ("port", True, lambda p: port_paths([p], jobs=2)),
]


def run_repository(source: Path) -> list[dict[str, Any]]:
    rows = []
    original = _files(source)
    for name, writes, mode in MODES:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / source.name
            shutil.copytree(source, copy, symlinks=True)
            start = time.perf_counter()
            result = mode(copy)
            wall = time.perf_counter() - start
            errors = result.errors
            internal = [str(e) for e in errors if "internal error" in e.message]
            after = _files(copy)
            changed = {k for k in after if after[k] != original.get(k)}
            row: dict[str, Any] = {
                "mode": name,
                "files": result.files,
                "findings": len(getattr(result, "findings", getattr(result, "remaining", []))),
                "internal": internal,
                "errors": len(errors) - len(internal),
                "written": len(changed),
                "broken": sorted(k for k in changed if not _valid(k, after[k])),
                "wall_s": round(wall, 1),
            }
            if writes:
                mode(copy)  # again: nothing may change the second time
                again = _files(copy)
                row["not_idempotent"] = sorted(k for k in again if again[k] != after[k])
            if name == "port":
                row["no_torch_changed"] = sorted(
                    k for k in changed if not _imports_torch(original.get(k, b""))
                )
                row["literal_moves"] = sorted(
                    f"{k}: {n}"
                    for k in changed
                    for n in _moved_literals(original.get(k, b""), after[k])
                )
            rows.append(row)
            print(json.dumps({"repository": source.name, **row}), flush=True)
    return rows


def main() -> None:
    roots = [Path(a) for a in sys.argv[1:]]
    if not roots:
        raise SystemExit(__doc__)
    total: dict[str, int] = {}
    for root in roots:
        for row in run_repository(root):
            for key in ("internal", "broken", "not_idempotent", "no_torch_changed"):
                total[key] = total.get(key, 0) + len(row.get(key, []))
            total["literal_moves"] = total.get("literal_moves", 0) + len(
                row.get("literal_moves", [])
            )
    print("TOTAL", json.dumps(total))


if __name__ == "__main__":
    main()
