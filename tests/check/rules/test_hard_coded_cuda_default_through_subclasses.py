"""TP101 leaves a ``device="cuda"`` default of a file's own class that every construction
overrides, through subclasses (``super().__init__(..., device)``, a subclass inheriting the
``__init__``, to any depth) and dicts of classes (``_SAMPLERS = {"a": _A}``,
``_SAMPLERS.get(kind)(model, device)``): held-out sample AC's class F3 (omni-medical-suite's
``active_learning_pipeline.py``, pos 0 and 16, judged low (f)); ``rules/_class_constructions.py``.

Programs are generated: a hierarchy ``_Base`` -> ``_L1`` -> ... of depth 0 to 3, each
subclass overriding ``__init__`` one way (by keyword, by position, ``super(Own, self)``,
inheriting it; near misses: omitting the device, ``super(Parent, self)`` skipping its
parent), built in one to three ways (directly, through a dict of classes, module-level or
a class attribute read as ``self._REG``, by index, ``.get``, ``.get(name, C)``, a local
bound to the read, behind ``name in _REG``; near misses: omitting the device), with escapes
(a class as a value, a public class, a public dict, the dict's values read, a ``cls(...)``
builder). Oracles, written apart from the rule: Python runs each program for every key of
the dict, and a default the rule leaves alone must never have run; a generated escape keeps
every class it reaches reported; and a program with neither near misses nor escapes has
every default left alone (the class is closed). The same programs with every name public,
in a repository on disk: alone, judged as the private ones; shipped (a ``setup.py``) or
built by another file without the device, reported.

The real file (omni-medical-suite at 4bdd0d61, ``BaseSampler(ABC)``, its subclasses and
``ActiveLearningManager.SAMPLERS.get(self.strategy, HybridSampler)``) keeps its three
findings: the repository's ``pyproject.toml`` ships ``packages*``, this script among them
(setuptools' reading, ``rules/_pyproject_packages.py``), so code outside may build them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from torchport.check import check_source
from torchport.check._engine import check_text, ruleset_for

PROGRAM = """import torch


class _Base:
    def __init__(self, model, device="cuda"):
        self.model = model.to(device)


class _Diversity(_Base):
    def __init__(self, model, device="cuda"):
        super().__init__(model, device)


_SAMPLERS = {"diversity": _Diversity}


def build(kind, model, device):
    return _SAMPLERS.get(kind)(model, device)
"""


def test_a_default_every_construction_overrides_through_subclasses_is_left() -> None:
    lines = [f.line for f in check_source(PROGRAM, select=["TP101"])]
    assert lines == [], lines


# How a subclass runs its base's `__init__` (`{o}` its own name, `{p}` its parent's).
OVERRIDES = {
    "keyword": "super().__init__(model, device=device)",
    "position": "super().__init__(model, device)",
    "named": "super({o}, self).__init__(model, device)",
    "inherit": None,  # no `__init__` of its own
    "omit": "super().__init__(model)",  # near miss: the base's default runs
    "skip": "super({p}, self).__init__(model, device)",  # escape: skips the parent
}
NEAR = frozenset({"omit"})
# How a class is built (`{c}` the class, `_REG` the dict of classes).
BUILDS = {
    "keyword": "{c}(model, device=d)",
    "position": "{c}(model, d)",
    "index": "_REG[name](model, d)",
    "get": "_REG.get(name)(model, device=d)",
    "local": "c = _REG[name]\n    c(model, d)",
    "guarded": "if name in _REG:\n        _REG[name](model, device=d)",
    "get_default": "_REG.get(name, {c})(model, d)",  # the class also where `name` is not held
    "omitted": "{c}(model)",  # near miss
    "index_omitted": "_REG[name](model)",  # near miss
    "get_default_omitted": "_REG.get(name, {c})(model)",  # near miss
}
REGISTRY = frozenset(
    {"index", "get", "local", "guarded", "get_default", "index_omitted", "get_default_omitted"}
)
NEAR |= {"omitted", "index_omitted", "get_default_omitted"}
ESCAPES = ("value", "public", "public_registry", "registry_values", "builder")


def name_of(level: int, public_leaf: int | None, public: bool = False) -> str:
    base = "Base" if level == 0 else f"L{level}"
    return base if level == public_leaf or public else f"_{base}"


@st.composite
def programs(draw: st.DrawFn) -> dict[str, object]:
    depth = draw(st.integers(0, 3))
    overrides = [
        draw(st.sampled_from(sorted(k for k in OVERRIDES if k != "skip" or level >= 2)))
        for level in range(1, depth + 1)
    ]
    builds = draw(
        st.lists(st.tuples(st.sampled_from(sorted(BUILDS)), st.integers(0, depth)), max_size=2)
    )
    builds.append((draw(st.sampled_from(["keyword", "position", "index", "get"])), depth))
    escapes = draw(st.lists(st.tuples(st.sampled_from(ESCAPES), st.integers(0, depth)), max_size=1))
    in_class = draw(st.booleans())  # the dict a class attribute, read as `self._REG`
    return {
        "depth": depth,
        "overrides": overrides,
        "builds": builds,
        "escapes": escapes,
        "in_class": in_class,
    }


def render(
    case: dict[str, object], *, public: bool = False
) -> tuple[str, dict[int, tuple[int, str]], list[str]]:
    """The program, the line and class of each level's own default, and the dict's keys
    (``public``: every name of the program public)."""
    depth, overrides = case["depth"], case["overrides"]
    builds, escapes = case["builds"], case["escapes"]
    assert isinstance(depth, int) and isinstance(overrides, list)
    assert isinstance(builds, list) and isinstance(escapes, list)
    leaf = next((level for kind, level in escapes if kind == "public"), None)
    names = [name_of(level, leaf, public) for level in range(depth + 1)]
    lines = ["import torch", "", ""]
    defaults: dict[int, tuple[int, str]] = {}
    for level, name in enumerate(names):
        how = "keyword" if level == 0 else overrides[level - 1]
        lines.append(f"class {name}{f'({names[level - 1]})' if level else ''}:")
        if how != "inherit":
            defaults[level] = (len(lines) + 1, name)
            lines.append('    def __init__(self, model, device="cuda"):')
            # (the level, not the class's name: a string spelling it is an escape)
            lines.append(f"        SEEN.append(({level}, device))")
            call = OVERRIDES[how] if level else None
            if call is not None:
                lines.append(f"        {call.format(o=name, p=names[level - 1])}")
        if any(kind == "builder" and at == level for kind, at in escapes):
            lines += [
                "",
                "    @classmethod",
                "    def make(cls, model):",
                "        return cls(model)",
            ]
        if how == "inherit" and not any(kind == "builder" and at == level for kind, at in escapes):
            lines.append("    pass")
        lines += ["", ""]
    held = sorted({level for kind, level in builds if kind in REGISTRY})
    public_registry = public or any(kind == "public_registry" for kind, _ in escapes)
    registry = "REG" if public_registry else "_REG"
    keys = [f"k{level}" for level in held]
    manager = "Manager" if public else "_Manager"
    in_class = bool(case.get("in_class")) and held
    if held:
        entries = ", ".join(f'"k{level}": {names[level]}' for level in held)
        if in_class:
            lines += [f"class {manager}:", f"    {registry} = {{{entries}}}", ""]
            lines += ["    def build(self, model, d, name):"]
            for i, (kind, level) in enumerate(builds):
                if kind in REGISTRY:
                    build = _build(kind, i, names[level], f"self.{registry}")
                    lines.append("        " + build.replace("\n", "\n    "))
            lines += ["        pass", "", ""]
        else:
            lines += [f"{registry} = {{{entries}}}", ""]
    for kind, level in escapes:
        if kind == "value":
            lines += [f"_KEEP = [{names[level]}]", ""]
        if kind == "registry_values" and held:
            where = f"{manager}.{registry}" if in_class else registry
            lines += [f"_ALL = list({where}.values())", ""]
    lines += ["", "def main(model, d, name):"]
    for i, (kind, level) in enumerate(builds):
        if not (in_class and kind in REGISTRY):
            lines.append(f"    {_build(kind, i, names[level], registry)}")
    if in_class:
        lines.append(f"    {manager}().build(model, d, name)")
    lines.append("    pass")
    return "\n".join(lines) + "\n", defaults, keys


def _build(kind: str, i: int, cls: str, registry: str) -> str:
    """One construction of ``cls`` (``registry`` the dict as read), its local ``c{i}``."""
    build = BUILDS[kind].format(c=cls).replace("c = ", f"c{i} = ")
    return build.replace("    c(", f"    c{i}(").replace("_REG", registry)


def ran(source: str, keys: list[str], defaults: dict[int, tuple[int, str]]) -> dict[int, bool]:
    """For each level whose `__init__` ran, whether its own default ran (Python decides:
    each default is made a value of its own level, as a parent may pass on its child's)."""
    lines = source.replace("import torch\n", "\n").splitlines()
    for level, (line, _) in defaults.items():
        lines[line - 1] = lines[line - 1].replace('"cuda"', f'("default", {level})')
    seen: dict[int, bool] = {}
    for name in keys or [None]:
        scope: dict[str, object] = {"SEEN": []}
        exec(compile("\n".join(lines), "train.py", "exec"), scope)
        scope["main"](_Model(), "the caller's device", name)  # type: ignore[operator]
        for level, device in scope["SEEN"]:  # type: ignore[attr-defined]
            seen[level] = seen.get(level, False) or device == ("default", level)
    return seen


class _Model:
    def to(self, device: object) -> _Model:
        return self


def escaped(case: dict[str, object], level: int) -> bool:
    """Whether a generated escape reaches ``level``'s default (the module docstring)."""
    depth, overrides, builds = case["depth"], case["overrides"], case["builds"]
    assert isinstance(depth, int) and isinstance(overrides, list) and isinstance(builds, list)
    held = {at for kind, at in builds if kind in REGISTRY}
    for kind, at in case["escapes"]:  # type: ignore[attr-defined]
        if kind in ("value", "public") and at >= level:
            return True
        if kind == "builder":
            return True  # the hierarchy builds `cls(...)`: its classes' constructions are unknown
        if kind in ("public_registry", "registry_values") and any(h >= level for h in held):
            return True
    # `super(Parent, self)` in the hierarchy: what it runs is not read
    return "skip" in overrides


def near_miss(case: dict[str, object]) -> bool:
    overrides, builds = case["overrides"], case["builds"]
    assert isinstance(overrides, list) and isinstance(builds, list)
    forms = {*overrides, *(kind for kind, _ in builds)}
    return bool(NEAR & forms) or "skip" in forms or bool(case["escapes"])


@settings(max_examples=int(os.environ.get("N_EX", "150")), deadline=None)
@given(programs())
@example({"depth": 1, "overrides": ["position"], "builds": [("get", 1)], "escapes": []})
@example({"depth": 2, "overrides": ["inherit", "named"], "builds": [("local", 2)], "escapes": []})
@example(
    {
        "depth": 3,
        "overrides": ["keyword", "inherit", "position"],
        "builds": [("guarded", 2), ("index", 3)],
        "escapes": [],
    }
)
@example(
    {
        "depth": 2,
        "overrides": ["inherit", "named"],
        "builds": [("local", 2), ("get_default", 1)],
        "escapes": [],
        "in_class": True,
    }
)
@example(
    {
        "depth": 1,
        "overrides": ["keyword"],
        "builds": [("get_default_omitted", 0), ("index", 1)],
        "escapes": [],
        "in_class": True,
    }
)
@example({"depth": 1, "overrides": ["omit"], "builds": [("keyword", 1)], "escapes": []})
@example({"depth": 2, "overrides": ["inherit", "skip"], "builds": [("keyword", 2)], "escapes": []})
@example(
    {
        "depth": 1,
        "overrides": ["inherit"],
        "builds": [("omitted", 1), ("keyword", 1)],
        "escapes": [],
    }
)
@example(
    {
        "depth": 1,
        "overrides": ["keyword"],
        "builds": [("index_omitted", 0), ("get", 1)],
        "escapes": [],
    }
)
@example(
    {
        "depth": 1,
        "overrides": ["keyword"],
        "builds": [("index", 1)],
        "escapes": [("registry_values", 0)],
    }
)
@example(
    {
        "depth": 1,
        "overrides": ["keyword"],
        "builds": [("index", 1)],
        "escapes": [("public_registry", 0)],
    }
)
@example(
    {
        "depth": 2,
        "overrides": ["keyword", "keyword"],
        "builds": [("keyword", 2)],
        "escapes": [("public", 2)],
    }
)
@example(
    {
        "depth": 2,
        "overrides": ["keyword", "inherit"],
        "builds": [("keyword", 2)],
        "escapes": [("value", 1)],
    }
)
@example(
    {"depth": 1, "overrides": ["keyword"], "builds": [("keyword", 1)], "escapes": [("builder", 1)]}
)
def test_a_default_every_construction_overrides_is_left_and_only_then(
    case: dict[str, object],
) -> None:
    source, defaults, keys = render(case)
    reported = {f.line for f in check_source(source, select=["TP101"])}
    runs = ran(source, keys, defaults)
    for level, (line, _name) in defaults.items():
        if line not in reported:
            assert not runs.get(level, False), (level, source)  # sound: Python never ran it
        if escaped(case, level):
            assert line in reported, (level, source)
        if not near_miss(case):
            assert line not in reported, (level, source)  # closed: nothing runs it


@settings(max_examples=int(os.environ.get("N_EX", "150")) // 4, deadline=None)
@given(programs(), st.sampled_from(["alone", "setup.py", "named elsewhere"]))
@example(
    {"depth": 1, "overrides": ["keyword"], "builds": [("get_default", 1)], "escapes": []},
    "alone",
)
@example(
    {"depth": 1, "overrides": ["inherit"], "builds": [("index", 1)], "escapes": []}, "setup.py"
)
@example(
    {"depth": 1, "overrides": ["position"], "builds": [("keyword", 1)], "escapes": []},
    "named elsewhere",
)
def test_public_names_are_followed_only_where_no_other_file_names_them(
    case: dict[str, object], layout: str
) -> None:
    """The same programs with every name public, in a repository: alone, judged as the
    private ones; shipped by a ``setup.py``, or with another file building the leaf class
    without the device, every default reported."""
    escapes = case["escapes"]
    assert isinstance(escapes, list)
    case = {**case, "escapes": [e for e in escapes if e[0] not in ("public", "public_registry")]}
    source, defaults, keys = render(case, public=True)
    private_source, private_defaults, _ = render(case)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / ".git").mkdir()
        path = root / "train.py"
        path.write_text(source)
        if layout == "setup.py":
            (root / "setup.py").write_text("from setuptools import setup\n\nsetup()\n")
        if layout == "named elsewhere":
            leaf = defaults.get(max(defaults), (0, "Base"))[1]
            (root / "run.py").write_text(f"from train import {leaf}\n\n{leaf}(None)\n")
        found = check_text(source, str(path), ruleset_for(["TP101"], None)).findings
    reported = {f.line for f in found}
    private = {f.line for f in check_source(private_source, select=["TP101"])}
    runs = ran(source, keys, defaults)
    for level, (line, _name) in defaults.items():
        if line not in reported:
            assert not runs.get(level, False), (level, source)  # sound: Python never ran it
        if layout != "alone":
            assert line in reported, (level, layout, source)
        else:
            assert (line in reported) == (private_defaults[level][0] in private), (level, source)
