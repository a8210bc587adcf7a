"""Claims docs/architecture.md and the docstrings make of "the one" place for something, held here.

Each test names the claim it holds; the others are held where the docs say
(``test_layers.py``, ``test_device_vocabulary.py``, ``hardware/test_floor.py``,
``hardware/test_torch_features.py``).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import torchport
from torchport import errors

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "torchport"

# Modules outside place/ that may import optree, and why.
OPTREE_ALLOWED = {"bench/_competitors.py": "measures optree itself, as a competitor"}


def _imports_optree(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(
            a.name.split(".")[0] == "optree" for a in node.names
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "optree":
            return True
    return False


def test_the_tree_walker_is_places() -> None:
    """ "place/ ... the one tree walker": nothing outside place/ walks batches with optree."""
    outside = [
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if p.relative_to(PACKAGE).parts[0] != "place"
        and p.relative_to(PACKAGE).as_posix() not in OPTREE_ALLOWED
        and _imports_optree(p)
    ]
    assert outside == []


def test_the_optree_scan_sees_an_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from optree import tree_map\n")
    assert _imports_optree(module)


def test_every_public_exception_is_in_the_one_tree() -> None:
    """ "errors.py: the one exception tree": every exception torchport exports derives from it."""
    exported = [getattr(torchport, name) for name in torchport.__all__]
    public = [
        c
        for c in exported
        if inspect.isclass(c) and issubclass(c, Exception) and not issubclass(c, Warning)
    ]
    assert public, "torchport exports no exception: the test would hold nothing"
    for cls in public:
        assert issubclass(cls, errors.TorchportError), cls
        assert getattr(errors, cls.__name__, None) is cls, f"{cls} is not defined in errors.py"


# -- the checker: one semantic model per file, one resolver every rule asks ------------


def _calls_named(path: Path, names: frozenset[str]) -> list[int]:
    """Lines of calls to a class or function of one of ``names`` (``X(...)``, ``m.X(...)``,
    and ``Y(...)`` after ``from m import X as Y``)."""
    found = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {
        a.asname
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for a in node.names
        if a.name in names and a.asname
    }
    names = names | aliases
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in names:
                found.append(node.lineno)
    return found


def _modules(*, under: str = "") -> list[Path]:
    return sorted((PACKAGE / under).rglob("*.py"))


def _where(paths: list[Path], names: frozenset[str]) -> list[str]:
    return [
        f"{p.relative_to(PACKAGE).as_posix()}:{line}"
        for p in paths
        for line in _calls_named(p, names)
    ]


def test_the_one_semantic_model_is_built_by_the_context() -> None:
    """ "Context.scopes ... the one semantic model": only the Context builds a ScopeMap.

    Every rule and the port read the scopes the Context built once per file, so two
    rules never answer "what is this name" from two models. The model builds its own
    parts (the flow analysis and the resolver it holds), and nothing else builds them.
    """
    builders = _where(_modules(), frozenset({"ScopeMap"}))
    assert [where.partition(":")[0] for where in builders] == ["check/_context.py"], builders
    parts = _where(_modules(), frozenset({"FlowAnalysis", "Resolver"}))
    assert sorted(where.partition(":")[0] for where in parts) == [
        "check/semantic/_scope.py",
        "check/semantic/_scope.py",
    ], parts


def test_the_context_builds_its_model_once() -> None:
    from torchport.check._context import Context

    source = "import torch\nx = torch.zeros(1)\n"
    ctx = Context(source, "<t>", ast.parse(source))
    assert ctx.scopes is ctx.scopes


def _spells_torch(path: Path) -> list[int]:
    """Lines where a name's spelling is compared with ``torch``'s: resolving by hand."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        reads_id = any(isinstance(s, ast.Attribute) and s.attr == "id" for s in sides)
        literals = [
            e.value
            for s in sides
            for e in ast.walk(s)
            if isinstance(e, ast.Constant) and isinstance(e.value, str)
        ]
        if reads_id and any(v == "torch" or v.startswith("torch.") for v in literals):
            found.append(node.lineno)
    return found


def _imports_bindings_by_hand(path: Path) -> bool:
    return bool(_calls_named(path, frozenset({"import_bindings"})))


def test_every_rule_asks_the_one_resolver() -> None:
    """ "semantic/_resolve.py: the one resolver every rule asks".

    No rule, matcher or port module tells what a name means by its spelling
    (``func.value.id == "torch"``) or by reading the imports itself
    (``import_bindings``): what a name means comes from ``Context.qualname`` /
    ``value_of`` / ``callee``, that is from the resolver.
    """
    semantic = PACKAGE / "check" / "semantic"
    outside = [p for p in _modules(under="check") if semantic not in p.parents]
    assert [
        f"{p.relative_to(PACKAGE).as_posix()}:{line}" for p in outside for line in _spells_torch(p)
    ] == []
    assert [
        p.relative_to(PACKAGE).as_posix() for p in outside if _imports_bindings_by_hand(p)
    ] == []


def test_the_resolver_scans_see_a_rule_that_resolves_by_hand(tmp_path: Path) -> None:
    rule = tmp_path / "rule.py"
    rule.write_text(
        "def check(node):\n"
        "    if node.func.value.id == 'torch':\n"
        "        return import_bindings(node)\n"
        "    return node.id in ('torch.cuda', 'x')\n"
    )
    assert _spells_torch(rule) == [2, 4]
    assert _imports_bindings_by_hand(rule)
    assert _calls_named(rule, frozenset({"ScopeMap"})) == []
    rule.write_text("from torchport.check.semantic import ScopeMap\nm = ScopeMap(tree)\n")
    assert _calls_named(rule, frozenset({"ScopeMap"})) == [2]
    rule.write_text("from torchport.check.semantic import ScopeMap as Model\nm = Model(tree)\n")
    assert _calls_named(rule, frozenset({"ScopeMap"})) == [2]


# -- diagnose: drawing in two modules, devices parsed by hardware ----------------------

_DRAWING = frozenset({"diagnose/_drawing.py", "diagnose/_doctor_drawing.py"})
# Imports rich and draws nothing: it keeps the program's `random` state around the import.
_IMPORTS_RICH_ONLY = frozenset({"diagnose/_rich_quietly.py"})
_DELEGATES = frozenset({"__str__", "__rich__", "render"})


def _imports_module(path: Path, top: str) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == top for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == top:
            return True
    return False


def _delegations(path: Path) -> list[tuple[str, str, list[str]]]:
    """(class, method, modules it imports from) of each drawing method of each class."""
    found = []
    for cls in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(cls, ast.ClassDef):
            continue
        for method in cls.body:
            if isinstance(method, ast.FunctionDef) and method.name in _DELEGATES:
                modules = [
                    n.module or "" for n in ast.walk(method) if isinstance(n, ast.ImportFrom)
                ]
                # `return self.render()`: delegates to a method that is checked in turn.
                modules += [
                    f"self.{n.func.attr}"
                    for n in ast.walk(method)
                    if isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "self"
                    and n.func.attr in _DELEGATES
                ]
                found.append((cls.name, method.name, modules))
    return found


def test_only_the_drawing_modules_of_diagnose_draw() -> None:
    """ "diagnose/_drawing.py ... no other module of diagnose draws with rich" (one imports it)."""
    drawing = [
        p.relative_to(PACKAGE).as_posix()
        for p in _modules(under="diagnose")
        if _imports_module(p, "rich")
    ]
    assert sorted(drawing) == sorted(_DRAWING | _IMPORTS_RICH_ONLY)


def test_every_report_draws_through_the_drawing_modules() -> None:
    """Every report's ``str()``, ``__rich__`` and ``render`` go to the two drawing modules."""
    allowed = {"torchport." + m.removesuffix(".py").replace("/", ".") for m in _DRAWING}
    allowed |= {f"self.{name}" for name in _DELEGATES}
    seen = []
    for path in _modules(under="diagnose"):
        for cls, method, modules in _delegations(path):
            seen.append(cls)
            # Drawn here or inline, it would import nothing from the drawing modules.
            assert modules and all(m in allowed for m in modules), (cls, method, modules)
    # The reports the docstring names all delegate (a scan that finds none holds nothing).
    assert {"AuditReport", "DoctorReport", "MemoryReport", "OomExplanation"} <= set(seen)


# `torch.device(x)` of one argument outside hardware/, where `x` is no constant of the
# vocabulary: each is no user's device argument, and says why.
_DEVICE_PARSES_ALLOWED = {
    "diagnose/_on_device.py": "an aten op's `device=` keyword: a device torch already parsed",
    "sim/_install.py": "the simulated device's own hooks, called by torch with its arguments",
    "sim/_tensor.py": "a factory's `device=` inside the simulated device's dispatch",
    "bench/_suite_overhead_own_to.py": "a competitor's call in a benchmark, on a fixed target",
}


def _parses_a_device(path: Path) -> list[int]:
    """Lines of ``torch.device(x)`` with one argument that is neither a literal nor a CONSTANT."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "device"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "torch"
            and len(node.args) + len(node.keywords) == 1
            and all(k.arg == "type" for k in node.keywords)
        ):
            continue
        arg = node.args[0] if node.args else node.keywords[0].value
        if isinstance(arg, ast.Constant) or (isinstance(arg, ast.Name) and arg.id.isupper()):
            continue
        found.append(node.lineno)
    return found


def test_device_arguments_are_parsed_by_hardware() -> None:
    """ "diagnose/_memory.py ... through torchport.hardware (the one parser)".

    A device argument a user gives (``"cuda:1"``, ``"cpu:0"``, an index) is read by
    ``hardware.parse_device`` alone, so ``"cpu:0"`` and ``"cpu"`` are one device
    everywhere and an absent device is refused the same way: no other module turns a
    variable into a device with ``torch.device(x)``.
    """
    hardware = PACKAGE / "hardware"
    parses = {
        p.relative_to(PACKAGE).as_posix()
        for p in _modules()
        if hardware not in p.parents and _parses_a_device(p)
    }
    assert parses == set(_DEVICE_PARSES_ALLOWED)


def test_the_parse_scan_sees_a_parse(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import torch\n"
        "a = torch.device(CPU)\n"
        "b = torch.device('cpu')\n"
        "c = torch.device(kind, 0)\n"
        "d = torch.device(user_text)\n"
        "e = torch.device(args.device)\n"
        "f = torch.device(type=text)\n"
        "g = torch.device(type=kind, index=0)\n"
    )
    assert _parses_a_device(module) == [5, 6, 7]


def _reads_a_type_by_hand(path: Path) -> list[int]:
    """Lines of ``text.split(":")[0] == "sim"`` (or ``partition``): a device string's type
    compared with a name, read by hand."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        by_hand = any(
            isinstance(side, ast.Subscript)
            and isinstance(side.value, ast.Call)
            and isinstance(side.value.func, ast.Attribute)
            and side.value.func.attr in ("split", "partition")
            and [ast.unparse(a) for a in side.value.args] == ["':'"]
            for side in sides
        )
        named = any(
            isinstance(e, ast.Constant) and isinstance(e.value, str)
            for side in sides
            for e in (side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side])
        )
        if by_hand and named:
            found.append(node.lineno)
    return found


def test_the_type_a_device_string_names_is_read_by_hardware() -> None:
    """ "device_spec, the one reading of device strings": even before torch knows the type.

    Naming ``"sim"`` installs the simulated accelerator before ``torch.device`` can
    parse it; ``hardware.named_type`` reads that name, so every feature that offers
    ``sim`` agrees on what names it (``" sim:0 "`` does, ``"SIM"`` does not, as torch).
    """
    runtime = [p for p in _modules() if p.relative_to(PACKAGE).parts[0] != "check"]
    assert _where_by_hand(runtime) == []


def _where_by_hand(paths: list[Path]) -> list[str]:
    return [
        f"{p.relative_to(PACKAGE).as_posix()}:{line}"
        for p in paths
        for line in _reads_a_type_by_hand(p)
    ]


def test_the_by_hand_scan_sees_a_reading(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "a = text.strip().lower().split(':')[0] == 'sim'\n"
        "b = name.partition(':')[0] in ('sim', 'x')\n"
        "c = arch.split(':')[0] == capability\n"
        "d = line.partition(':')\n"
    )
    assert _reads_a_type_by_hand(module) == [1, 2]


def test_the_scopes_come_from_one_pass() -> None:
    """ "semantic/_scope_pass.py: the one pass that builds a module's scopes".

    Only the ScopeMap runs the pass, and only the Context builds the ScopeMap (above).
    """
    runs = _where(_modules(), frozenset({"ScopePass"}))
    assert [where.partition(":")[0] for where in runs] == ["check/semantic/_scope.py"], runs


# -- the audit of every "the one" / "the only" ------------------------------------------
#
# Docstrings, comments and docs say "the one" or "the only" 80-odd times. Where it
# claims a place in the code (the one exception tree, the one tree walker) a test holds
# it; where it names one thing the sentence is about (the one path given, the one cause
# chosen) it claims nothing about the code's layout. Every occurrence is one or the
# other below, so a new claim of "one place" cannot appear without its test.

ROOT = PACKAGE.parents[1]
_PHRASE = re.compile(r"\b[Tt]he (one|only)(?![-\w])")

# The test that holds each claim of one place -> (file, the phrase and the two words after it).
HELD: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {
    (
        "tests/test_release.py",
        "test_the_version_is_written_once_and_read_everywhere",
    ): (("src/torchport/__init__.py", "the one place the"),),
    (
        "tests/test_claims.py",
        "test_every_public_exception_is_in_the_one_tree",
    ): (
        ("src/torchport/errors.py", "the one exception tree"),
        ("docs/architecture.md", "the one exception tree"),
    ),
    (
        "tests/test_claims.py",
        "test_the_tree_walker_is_places",
    ): (
        ("src/torchport/place/__init__.py", "the one tree walker"),
        ("src/torchport/place/_move.py", "the one walker place"),
        ("docs/architecture.md", "the one tree walker"),
    ),
    (
        "tests/test_claims.py",
        "test_the_one_semantic_model_is_built_by_the_context",
    ): (
        ("src/torchport/check/_context.py", "the one semantic model"),
        ("src/torchport/check/port/_kinds.py", "the one scope model"),
    ),
    (
        "tests/test_claims.py",
        "test_the_scopes_come_from_one_pass",
    ): (("src/torchport/check/semantic/_scope_pass.py", "the one pass that"),),
    (
        "tests/test_claims.py",
        "test_every_rule_asks_the_one_resolver",
    ): (
        ("src/torchport/check/semantic/_resolve.py", "the one resolver every"),
        ("src/torchport/check/semantic/_receivers.py", "the one resolver class"),
    ),
    (
        "tests/check/test_torch_api.py",
        "test_every_api_a_shipped_fix_writes_is_in_the_table",
    ): (("src/torchport/check/_torch_api.py", "the one table each"),),
    (
        "tests/check/port/test_rewrite.py",
        "test_one_device_binding_for_the_whole_file",
    ): (
        ("src/torchport/check/port/_device_name.py", "the one device name"),
        ("src/torchport/check/port/_facts.py", "the one device name"),
    ),
    (
        "tests/check/test_context.py",
        "test_fix_keeps_crlf_comments_and_one_definition",
    ): (
        ("src/torchport/check/semantic/__init__.py", "the one device Rules"),
        ("src/torchport/check/semantic/_placement.py", "the one device definition"),
        ("README.md", "the one every fix"),
    ),
    (
        "tests/test_claims.py",
        "test_device_arguments_are_parsed_by_hardware",
    ): (
        ("src/torchport/diagnose/_memory.py", "the one device parser"),
        ("src/torchport/hardware/_device_facts.py", "the one reading of"),
    ),
    (
        "tests/hardware/test_torch_features.py",
        "test_only_the_torch_features_module_asks_what_this_torch_has",
    ): (
        ("src/torchport/hardware/_torch_features.py", "the one place in"),
        ("src/torchport/hardware/_torch_features.py", "the one version comparison"),
        ("docs/architecture.md", "the one place that"),
    ),
    (
        "tests/place/test_device.py",
        "test_no_environment_or_global_state_changes",
    ): (("src/torchport/place/_device.py", "the one global change"),),
    (
        "tests/sim/test_simulator.py",
        "test_save_and_load_keep_map_location",
    ): (("src/torchport/sim/_saving.py", "the one rebuild function"),),
}
CLAIMS = {claim for claims in HELD.values() for claim in claims}

# (file, phrase) of sentences about one thing they name, not about where code lives.
ABOUT_ONE_THING: frozenset[tuple[str, str]] = frozenset({
    ("src/torchport/check/_chunked_parse.py", "the one ast parse"),
    ("src/torchport/check/port/_module_functions.py", "the one binding reaching"),
    ("src/torchport/check/rules/_module_tensors.py", "the one binding that"),
    ("src/torchport/check/rules/_module_tensors.py", "the only binding of"),
    ("src/torchport/check/rules/_cuda_choice.py", "the only devices it"),
    ("src/torchport/check/_fix.py", "the one to check"),
    ("src/torchport/place/_sharing.py", "the one made there"),
    ("src/torchport/place/_sharing.py", "the one mapping it"),
    ("src/torchport/place/_sharing.py", "the one the to"),
    ("src/torchport/sim/_index_put.py", "the one index a"),
    ("src/torchport/check/_context.py", "the one being checked"),
    ("src/torchport/check/_source.py", "the one before it"),
    ("src/torchport/check/_syntax.py", "the one torchport runs"),
    ("src/torchport/check/files/_cache.py", "the one recorded when"),
    ("src/torchport/check/files/_paths.py", "the one path in"),
    ("src/torchport/check/files/_plan.py", "the only path but"),
    ("src/torchport/check/files/_reading.py", "the one line ending"),
    ("src/torchport/check/files/_text.py", "the one command that"),
    ("src/torchport/check/files/_work.py", "the one file s"),
    ("src/torchport/check/port/_call_sites.py", "the one of the"),
    ("src/torchport/check/port/_call_sites.py", "the only one of"),
    ("src/torchport/check/port/_kinds.py", "the one that counts"),
    ("src/torchport/check/port/_reaching.py", "the one binding every"),
    ("src/torchport/check/port/_reaching.py", "the one a read"),
    ("src/torchport/check/port/_verify.py", "the one file given"),
    ("src/torchport/check/rules/_loops.py", "the one name it"),
    ("src/torchport/check/rules/force_no_weights_only_env.py", "the one call that"),
    ("src/torchport/check/rules/hard_coded_cuda_device_type.py", "the one device the"),
    ("src/torchport/check/rules/unportable_batch.py", "the one line it"),
    ("src/torchport/check/semantic/_flow.py", "the one binding of"),
    ("src/torchport/check/semantic/_flow.py", "the one entry self"),
    ("src/torchport/check/semantic/_following.py", "the one assignment that"),
    ("src/torchport/check/semantic/_module_imports.py", "the one dotted target"),
    ("src/torchport/check/semantic/_placement.py", "the one it chose"),
    ("src/torchport/check/semantic/_resolve.py", "the only binding there"),
    ("src/torchport/check/semantic/_resolve.py", "the only one None"),
    ("src/torchport/cli/check.py", "the one PATH is"),
    ("src/torchport/diagnose/_culprit.py", "the one that makes"),
    ("src/torchport/diagnose/_culprit.py", "the one device its"),
    ("src/torchport/diagnose/_oom_causes.py", "the one cause an"),
    ("src/torchport/diagnose/_oom_causes.py", "the one cause and"),
    ("src/torchport/diagnose/_suspects.py", "the only place it"),
    ("src/torchport/diagnose/_suspects.py", "the one and never"),
    ("src/torchport/feed/_loader.py", "the one being handed"),
    ("src/torchport/feed/_pack.py", "the one target device"),
    ("src/torchport/hardware/_inventory.py", "the one torch reports"),
    ("src/torchport/place/_containers.py", "the one tensor a"),
    ("src/torchport/place/_containers.py", "the one member if"),
    ("src/torchport/place/_containers.py", "the one object did"),
    ("src/torchport/place/_containers.py", "the one moved copy"),
    ("src/torchport/place/_device.py", "the one with the"),
    ("src/torchport/place/_device.py", "the only kind device"),
    ("src/torchport/place/_leaf_kinds.py", "the only falsy kind"),
    ("src/torchport/place/_move.py", "the one key ids"),
    ("src/torchport/run/_cuda_shim.py", "the one device def"),
    ("src/torchport/run/_cuda_shim.py", "the one generator reseeding"),
    ("src/torchport/run/_cuda_shim.py", "the one generator already"),
    ("src/torchport/run/_cuda_shim.py", "the one target its"),
    ("src/torchport/run/_torch_shim.py", "the one it supports"),
    ("src/torchport/sim/_factories.py", "the one device there"),
    ("docs/cli.md", "the one the command"),
    ("docs/cli.md", "the one PATH is"),
    ("docs/how-to/feed.md", "the one wait this"),
    ("docs/how-to/place.md", "the one with the"),
    ("README.md", "the one path reads"),
})  # fmt: skip


def _phrases(path: Path) -> set[str]:
    """Each "the one"/"the only" in ``path`` with the two words after it."""
    text = path.read_text(encoding="utf-8")
    found = set()
    for match in _PHRASE.finditer(text):
        words = re.findall(r"[A-Za-z_]+", text[match.end() : match.end() + 80])[:2]
        found.add(" ".join([match.group(0).lower(), *words]))
    return found


def _documents() -> list[Path]:
    return [
        *sorted(PACKAGE.rglob("*.py")),
        *sorted((ROOT / "docs").rglob("*.md")),
        ROOT / "README.md",
    ]


def test_every_claim_of_one_place_is_held_or_is_about_one_thing() -> None:
    seen = {
        (p.relative_to(ROOT).as_posix(), phrase) for p in _documents() for phrase in _phrases(p)
    }
    unjudged = seen - CLAIMS - ABOUT_ONE_THING
    assert not unjudged, (
        f"{sorted(unjudged)}: a new 'the one'/'the only': if it claims one place in the code, "
        "add the test that holds it to HELD; if it names one thing, add it to ABOUT_ONE_THING"
    )
    assert not (CLAIMS | ABOUT_ONE_THING) - seen, "stale entries: the text is gone"
    assert not CLAIMS & ABOUT_ONE_THING


def test_every_holder_is_a_test_that_exists() -> None:
    for path, name in HELD:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in defined, (path, name)


def test_the_phrase_scan_reads_across_lines(tmp_path: Path) -> None:
    doc = tmp_path / "d.md"
    doc.write_text("The one\n``tree`` walker; the one-element list; not the only, and\n")
    assert _phrases(doc) == {"the one tree walker", "the only and"}


# -- objects whole: no two modules of a part need each other -----------------------------
#
# A circle of imports inside a part (a module importing another that imports it back, at
# the top or inside a function) is one object or one concern spread over two files.
# test_layers.py holds the circles between parts; this holds those inside one. Each
# circle still here is listed with what it would take to undo it.
KNOWN_CIRCLES: dict[frozenset[str], str] = {
    frozenset({"sim/_saving.py", "sim/_tensor.py"}): (
        "SimTensor's pickling is split: __reduce_ex__ asks _saving.reduce_sim_tensor, whose "
        "rebuild makes a SimTensor"
    ),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under ``if TYPE_CHECKING:`` (annotations, not dependencies)."""
    found: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        found.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return found


def _imported(path: Path, names: dict[str, Path]) -> set[Path]:
    """Modules of the package that ``path`` imports anywhere (top level or in a function)."""
    own = _module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found = set()
    for node in _run_time_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target:
                found.add(names[target])
    return found


def import_circles(paths: list[Path]) -> list[frozenset[str]]:
    """Circles of imports among ``paths`` that stay inside one part (package ``__init__`` aside)."""
    names = {_module_name(p): p for p in paths}
    modules = [p for p in paths if p.name != "__init__.py"]

    def part(p: Path) -> tuple[str, ...]:
        return p.relative_to(PACKAGE).parts[:-1]

    edges = {
        p: {q for q in _imported(p, names) if q.name != "__init__.py" and part(q) == part(p)}
        for p in modules
    }
    circles = []
    for start in modules:
        # Every module reachable from `start` that reaches `start` back: its circle.
        reach: set[Path] = set()
        todo = [start]
        while todo:
            for q in edges[todo.pop()] - reach:
                reach.add(q)
                todo.append(q)
        if start in reach:
            back = {q for q in reach if start in _reaches(q, edges)}
            circle = frozenset(q.relative_to(PACKAGE).as_posix() for q in back | {start})
            if circle not in circles:
                circles.append(circle)
    return circles


def _reaches(start: Path, edges: dict[Path, set[Path]]) -> set[Path]:
    seen: set[Path] = set()
    todo = [start]
    while todo:
        for q in edges[todo.pop()] - seen:
            seen.add(q)
            todo.append(q)
    return seen


def test_no_two_modules_of_a_part_import_each_other() -> None:
    circles = import_circles(_modules())
    assert set(circles) == set(KNOWN_CIRCLES), (
        f"new circles: {set(circles) - set(KNOWN_CIRCLES)}; undone: "
        f"{set(KNOWN_CIRCLES) - set(circles)} (drop them from KNOWN_CIRCLES)"
    )


def test_the_circle_scan_sees_a_circle_made_in_a_function(tmp_path: Path) -> None:
    folder = tmp_path / "torchport" / "part"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("from torchport.part._a import f\n")
    (folder / "_a.py").write_text("from torchport.part._b import g\n\ndef f(): return g\n")
    (folder / "_b.py").write_text("def g():\n    from ._a import f\n    return f\n")
    (folder / "_c.py").write_text("from torchport.part import _a\n")
    (folder / "_d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torchport.part._e import E\n"
    )
    (folder / "_e.py").write_text("from torchport.part._d import D\n")
    paths = sorted(folder.glob("*.py"))
    import tests.test_claims as claims

    original = claims.PACKAGE
    claims.PACKAGE = tmp_path / "torchport"
    try:
        assert import_circles(paths) == [frozenset({"part/_a.py", "part/_b.py"})]
    finally:
        claims.PACKAGE = original


# -- the tests the code and the docs name exist -------------------------------------------

_TEST_PATH = re.compile(r"(?<![\w./])tests/[\w/]+\.py")


def test_every_test_the_docs_name_exists() -> None:
    """A docstring or page that says "``tests/x.py`` fails on ..." names a file that is there."""
    missing = [
        f"{path.relative_to(ROOT).as_posix()}: {named}"
        for path in _documents()
        for named in sorted(set(_TEST_PATH.findall(path.read_text(encoding="utf-8"))))
        if not (ROOT / named).is_file()
    ]
    assert missing == []


def test_the_test_path_scan_reads_names() -> None:
    text = "``tests/hardware/test_floor.py`` fails; `fix ../tests/x.py` is an example"
    assert _TEST_PATH.findall(text) == ["tests/hardware/test_floor.py"]


# -- objects whole: no class is half of another in a second file ------------------------
#
# A base class that is never made on its own and has one subclass, in another module, is
# one object split over two files (a mixin made for size): its methods read attributes
# only the subclass sets. Those still here, and what undoing each takes:
KNOWN_SPLITS: dict[tuple[str, str], str] = {
    ("check/_source.py", "SourceText"): (
        "a whole object of its own (a file's text, positions and edits, its own __init__); "
        "Context adds the tree: kept, though no caller makes a SourceText alone"
    ),
}


def split_classes(paths: list[Path], package: Path) -> set[tuple[str, str]]:
    """(module, class) of each class never called, whose one subclass is in another module."""
    defined: dict[str, list[str]] = {}
    subclasses: dict[str, list[str]] = {}
    called: set[str] = set()
    for path in paths:
        module = path.relative_to(package).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                defined.setdefault(node.name, []).append(module)
                for base in node.bases:
                    name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                    subclasses.setdefault(name, []).append(module)
            elif isinstance(node, ast.Call):
                func = node.func
                called.add(
                    func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                )
    return {
        (homes[0], name)
        for name, homes in defined.items()
        if len(homes) == 1
        and name not in called
        and len(subclasses.get(name, [])) == 1
        and subclasses[name][0] != homes[0]
    }


def test_no_object_is_split_over_two_files() -> None:
    splits = split_classes(_modules(), PACKAGE)
    assert splits == set(KNOWN_SPLITS), (
        f"new: {splits - set(KNOWN_SPLITS)}; undone: {set(KNOWN_SPLITS) - splits}"
    )


def test_the_split_scan_sees_a_mixin(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Half:\n    def f(self): return self.x\n")
    (tmp_path / "b.py").write_text(
        "from a import Half\nclass Whole(Half):\n    def __init__(self): self.x = 1\nw = Whole()\n"
    )
    (tmp_path / "c.py").write_text("class Base: ...\nclass Sub(Base): ...\n")  # one file: fine
    (tmp_path / "d.py").write_text("class Shared: ...\n")
    (tmp_path / "e.py").write_text("from d import Shared\nclass One(Shared): ...\nShared()\n")
    assert split_classes(sorted(tmp_path.glob("*.py")), tmp_path) == {("a.py", "Half")}
