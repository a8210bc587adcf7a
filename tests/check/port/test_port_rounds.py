"""The port's repeated work, done once, against the full recomputation it replaced.

* The fix loop checks each next round on the tree that showed the fixed text
  parses (``_fix._one_round``), not on a second parse of that text; the oracle is
  the loop as it was (``check_text`` of each round's text), kept here: on generated
  CPU programs the port gives the same text, fixes, findings and failures.
* A file's project view (``_project._imports_of``) asks for the file's module
  bindings (a scope map) only once an import names a project module; the oracle is
  the view as it was, with the bindings read first, kept here: on generated
  projects every file sees the same project, and nothing else asked builds a scope
  map.
* A run of several chunks in one process pauses the cycle collector once for all of
  them (``files/_paths._map``): that is safe only while a port (and a check) leaves
  no cyclic garbage per file, held here by the collector's own count.
* ``ProjectImports.lookup`` of a name reads the kinds in place (asked of every
  call's function); the oracle is the lookup as it was, on generated views.
"""

from __future__ import annotations

import ast
import gc
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check import _fix, _syntax, check_paths
from torchport.check._context import Context
from torchport.check._engine import check_text, check_tree, ruleset_for
from torchport.check._fix import MAX_FIX_ROUNDS, FixOutcome, _one_round
from torchport.check._rule import FixSafety
from torchport.check.port import _project
from torchport.check.port._attribute_modules import top_imports as _top_imports
from torchport.check.port._module_files import Lookups, find_module
from torchport.check.port._project import (
    KINDS,
    ProjectImports,
    _imports_of,
    _record,
    module_facts,
)
from torchport.check.port._project_owners import rebound_by_own_call
from torchport.check.port._reexports import only_import as _only_import
from torchport.check.port._rewrite import PORT_REPORTS, PORT_SELECT, port_paths, port_text
from torchport.check.port._star_imports import record_star, star_chain

pytest.importorskip("torch", reason="the port fuzzer's programs need torch (and numpy)")
HERE = Path(__file__).parent
port_programs = load("port_programs_for_rounds", HERE / "port_programs.py")
project_fuzz = load("test_project_fuzz_for_rounds", HERE / "test_project_fuzz.py")


def _old_port_text(source: str, path: str) -> FixOutcome:
    """``fix_text`` as it was: each round's text parsed again for its check (the port's
    report-only rules, TP109, reported and never fixed, as ``port_text`` does)."""
    ruleset = ruleset_for((*PORT_SELECT, *PORT_REPORTS), None)
    fixable = [r.code for r in ruleset.rules if r.code not in PORT_REPORTS]
    allowed = frozenset({FixSafety.SAFE, FixSafety.UNSAFE})
    fixed: Counter[str] = Counter()
    failures: dict[object, None] = {}
    current = source
    outcome = check_tree(current, path, ast.parse(source), ruleset)
    for _ in range(MAX_FIX_ROUNDS):
        failures.update(dict.fromkeys(outcome.failures))
        new, applied, broken, _tree = _one_round(current, path, outcome.findings, allowed, fixable)
        failures.update(dict.fromkeys(broken))
        if new == current:
            break
        fixed.update(f.code for f in applied)
        current = new
        outcome = check_text(current, path, ruleset)
    failures.update(dict.fromkeys(outcome.failures))
    return FixOutcome(current, fixed, outcome.findings, list(failures))  # type: ignore[arg-type]


def _same_port(source: str) -> None:
    new, old = port_text(source, "prog.py"), _old_port_text(source, "prog.py")
    assert new.source == old.source
    assert new.fixed == old.fixed
    assert [(str(f), f.fix) for f in new.remaining] == [(str(f), f.fix) for f in old.remaining]
    assert new.failures == old.failures


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(port_programs.programs())
def test_the_fix_loop_ports_as_the_loop_that_parsed_each_round_again(source: str) -> None:
    _same_port(source)


def test_a_round_s_tree_is_the_parse_of_its_text() -> None:
    source = "import torch\nmodel = torch.nn.Linear(2, 2)\nfor x in loader:\n    model(x)\n"
    ruleset = ruleset_for(PORT_SELECT, None)
    allowed = frozenset({FixSafety.SAFE, FixSafety.UNSAFE})
    findings = check_text(source, "p.py", ruleset).findings
    new, applied, _, tree = _one_round(source, "p.py", findings, allowed)
    assert applied and new != source and tree is not None
    assert ast.dump(tree) == ast.dump(ast.parse(new))
    _same_port(source)
    # Nothing changed: no tree to hand on.
    assert _one_round(new, "p.py", [], allowed)[3] is None
    assert _fix._parsed("def (") is None


def _old_imports_of(ctx: Context, seen: frozenset[str], lookups: Lookups) -> ProjectImports:
    """``_imports_of`` as it was: the module's bindings (a scope map) read first."""
    out = ProjectImports()
    importer = Path(ctx.path)
    if not importer.is_file():
        return out
    module_bindings = ctx.scopes.module.bindings
    for stmt in ctx.tree.body:
        for node in _top_imports(stmt):
            if isinstance(node, ast.ImportFrom):
                source = find_module(importer, node.module, node.level, lookups)
                source_facts = module_facts(source, seen, lookups) if source else None
                for alias in node.names:
                    local = alias.asname or alias.name
                    if alias.name == "*":
                        if source is not None and source_facts is not None:
                            given = ctx.star_names(node)
                            chain = star_chain(source, lookups)[: 1 if given is None else None]
                            read = [module_facts(p, seen, lookups) for p in chain]
                            record_star(out, [f for f in read if f], given, module_bindings, KINDS)
                        continue
                    if not _only_import(module_bindings.get(local, [])) and not (
                        # a model class rebound to its own instance (x31b): kept
                        source_facts is not None
                        and alias.name in source_facts.classes
                        and rebound_by_own_call(module_bindings.get(local, []), local)
                    ):
                        continue
                    if source_facts is not None and _record(out, local, alias.name, source_facts):
                        continue
                    dotted = f"{node.module}.{alias.name}" if node.module else alias.name
                    sub = find_module(importer, dotted, node.level, lookups)
                    sub_facts = module_facts(sub, seen, lookups) if sub is not None else None
                    if sub_facts is not None:
                        out.modules[local] = sub_facts
            else:
                for alias in node.names:
                    found = find_module(importer, alias.name, 0, lookups)
                    facts = module_facts(found, seen, lookups) if found is not None else None
                    if facts is None:
                        continue
                    if alias.asname:
                        if _only_import(module_bindings.get(alias.asname, [])):
                            out.modules[alias.asname] = facts
                    elif _only_import(module_bindings.get(alias.name.partition(".")[0], [])):
                        out.modules[alias.name] = facts
    return out


_SHADOWED = (
    "import torch\nfrom model import Net\nimport helpers as h\nfrom pkg import sub\n"
    "from model import *\nNet = None\nh = 3\ndef sub():\n    pass\n"
)


def _same_view(files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        root = Path(tmp)
        project_fuzz._write(root, files)
        for rel in sorted(files):
            path = str((root / rel).resolve())
            source = files[rel]
            seen = frozenset({path})
            mp.setattr(_project, "_CACHE", {})
            old = _old_imports_of(Context(source, path, ast.parse(source)), seen, Lookups())
            mp.setattr(_project, "_CACHE", {})
            ctx = Context(source, path, ast.parse(source))
            new = _imports_of(ctx, seen, Lookups())
            assert new == old, rel
            if not (old.modules or old.classes or old.factories or old.tensor_functions):
                # Nothing of the project's named (or nothing bound only by imports):
                # the scope map was built only if some import named a project module.
                names_one = any(
                    find_module(Path(path), n.module, n.level) is not None
                    for s in ctx.tree.body
                    for n in _top_imports(s)
                    if isinstance(n, ast.ImportFrom)
                )
                if not names_one and all(
                    find_module(Path(path), a.name, 0) is None
                    for s in ctx.tree.body
                    for n in _top_imports(s)
                    if isinstance(n, ast.Import)
                    for a in n.names
                ):
                    assert ctx.built_scopes is None, rel


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(project_fuzz.projects())
def test_a_file_sees_the_project_it_saw_with_its_bindings_read_first(
    files: dict[str, str],
) -> None:
    _same_view(files)


def test_names_rebound_after_their_import_are_not_the_project_s() -> None:
    files = {
        "model.py": "import torch\nfrom torch import nn\n\nclass Net(nn.Module):\n    pass\n",
        "helpers.py": "import torch\ndef make_mask(n):\n    return torch.ones(n)\n",
        "pkg/__init__.py": "",
        "pkg/sub.py": "import torch\nmask = torch.ones(2)\n",
        "train.py": _SHADOWED,
        "plain.py": "import os\nimport torch\nx = torch.ones(1)\n",
    }
    _same_view(files)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project_fuzz._write(root, files)
        path = str((root / "plain.py").resolve())
        ctx = Context(files["plain.py"], path, ast.parse(files["plain.py"]))
        assert not _imports_of(ctx, frozenset({path}), Lookups())
        assert ctx.built_scopes is None  # no import names a project module: no scope map


# ---------------------------------------------------------------- the collector's pause

_MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)
"""
_TRAIN = "import torch\nfrom model import Net\n\nnet = Net()\nprint(net(torch.randn(3, 4)))\n"


def _cyclic_garbage(folder: Path, copies: int) -> Counter[str]:
    """Analysis objects the collector finds unreachable after a port and a check of ``copies``
    projects, by type: syntax trees' nodes and the checker's own objects.

    Only those: under xdist a thread an earlier test left behind (a loader's prefetch, a pool,
    ``torchport.feed``'s or the simulated accelerator's objects) may end inside the window and
    leave its own cycles, which once made this (0, 16).
    """
    for i in range(copies):
        project = folder / f"p{i}"
        project.mkdir(parents=True)
        shutil.copy(HERE / "scripts" / "rnn_lm.py", project / "rnn_lm.py")
        (project / "model.py").write_text(_MODEL)  # a sibling: parsed ahead and kept
        (project / "train.py").write_text(_TRAIN)
    was, debug = gc.isenabled(), gc.get_debug()
    # Trees an earlier test of this worker kept (up to _KEPT_MAX, with their scope maps) would
    # be pushed out inside the window, each a cycle: garbage of what ran before, not of this
    # port (it made the 3-project run's count depend on the order tests ran in).
    _syntax._KEPT.clear()
    _syntax._CHECKED.clear()
    _syntax._checked[1] = 0
    gc.collect()
    gc.disable()
    try:
        port_paths([folder], diff=True, jobs=1)
        check_paths([folder], jobs=1)
        gc.set_debug(gc.DEBUG_SAVEALL)  # what it finds stays in gc.garbage, to be looked at
        gc.collect()
        return Counter(type(o).__qualname__ for o in gc.garbage if _analysis_object(o))
    finally:
        gc.set_debug(debug)
        gc.garbage.clear()
        if was:
            gc.enable()


def _analysis_object(obj: object) -> bool:
    return isinstance(obj, ast.AST) or type(obj).__module__.startswith("torchport.check")


def test_a_port_leaves_no_cyclic_garbage_per_file(tmp_path: Path) -> None:
    """The collector paused for a whole run: cycles per file would pile up until its end."""
    one = _cyclic_garbage(tmp_path / "one", 1)  # first: it also holds first-use garbage
    three = _cyclic_garbage(tmp_path / "three", 3)
    assert three.total() <= one.total(), (one, three)  # a cycle left per file: 3x as many


# ---------------------------------------------------------------- a name's kind in the view

_NAMES = st.sampled_from(["Net", "build", "mask", "W", "device", "Config", "x"])


def _old_lookup(view: ProjectImports, expr: ast.expr) -> tuple[str, str] | None:
    """``ProjectImports.lookup`` as it was for a name: a tuple of the kinds built per ask."""
    if isinstance(expr, ast.Name):
        for kind, names in tuple((k, getattr(view, a)) for k, a in _project.KINDS):
            if expr.id in names:
                return kind, expr.id
        return None
    return view.lookup(expr)


@given(st.lists(st.sets(_NAMES, max_size=3), min_size=6, max_size=8), st.lists(_NAMES))
def test_a_name_s_kind_is_the_first_kind_that_holds_it(
    sets: list[set[str]], names: list[str]
) -> None:
    view = ProjectImports(*sets)
    exprs = [ast.Name(id=name, ctx=ast.Load()) for name in names]
    want = [_old_lookup(view, e) for e in exprs]  # asked before the index is built
    assert [view.lookup(e) for e in exprs] == want
    assert [view.lookup(e) for e in exprs] == want  # and again, from the index


def test_a_view_asked_once_takes_no_more_names() -> None:
    """The index is built at the first lookup: adding to the view after it raises."""
    view = ProjectImports(classes={"Net"})
    view.classes.add("Other")  # type: ignore[attr-defined]  # still being built: fine
    assert view.lookup(ast.Name(id="Other", ctx=ast.Load())) == ("class", "Other")
    with pytest.raises(AttributeError):
        view.classes.add("Late")  # type: ignore[attr-defined]
