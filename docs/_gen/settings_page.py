"""docs/settings.md, written from the configuration's own code.

What comes from the code: the list of keys (``_KEYS`` in
``torchport/check/files/_config.py``: the keys ``load_config`` accepts), each key's
example line and one-line meaning (the ``Keys`` block of that module's docstring),
its type and default (the :class:`~torchport.check.Config` dataclass; the default
rule set from ``RULES``; the torch floor from ``FLOOR``), the command-line options that
set it (the ``check``/``fix``/``port`` parsers), what a wrong value is told (the
``ConfigError`` that ``load_config`` raises for it, captured here), and how a file
finds its table (the module docstring's prose). Only :data:`MORE` is written here: a
sentence or two per key; a key without one is an error, so a new key cannot ship
without its page entry.

``python docs/_gen settings`` writes the page; ``tests/docs/test_settings_page.py``
fails when the committed page differs from what this module writes.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import tempfile
from pathlib import Path

from torchport.check import RULES, Config, load_config
from torchport.check._torch_api import FLOOR, format_version
from torchport.check.files import _config
from torchport.cli._main import build_parser
from torchport.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "settings.md"

# The only prose kept here, one entry per key (checked against _KEYS).
MORE: dict[str, str] = {
    "select": "The rules to run, as codes or prefixes (`TP1`, `TP201`, `ALL`); it replaces "
    "the default set, and a rule selected runs in test and benchmark code too, where a default "
    "run leaves the rules judged under 90% real there (`torchport rule CODE` says where). A speed "
    "rule selected here by its code or a prefix (`TP1`, not `ALL`) also has its safe "
    "fixes applied by a plain `torchport fix`, as with `--speed`.",
    "extend-select": "Codes or prefixes added to the selection (the default set, or "
    "`select`): the way to turn on a rule that is off by default (TP9xx; TP102-TP104, "
    "TP106, TP108, TP111-TP113, TP115-TP124, TP201, TP202, TP205, TP301-TP305, "
    "TP307-TP309, TP401, TP403-TP408), or in test or benchmark code too (TP101, TP109, "
    "TP110, TP114, TP203, TP402), "
    "or, for a rule that names CUDA (TP101, TP109, TP110, TP402 among "
    "those on), in code that needs CUDA anyway (a module importing a CUDA-only package or its "
    "project's own CUDA-only extension, or a module of its project that does, or code after "
    "such an import in a block holding it, "
    "or a test class whose every test is skipped unless such an import succeeded, "
    "or a module defining its own Triton kernel), "
    'or TP101\'s CUDA defaults of parameters (`def f(device="cuda")`) and CUDA values of '
    'settings dicts (`{"device": "cuda"}`), which a default run leaves out, '
    "or any default rule in vendored code nothing in the project imports (a copy of another "
    "project under `third_party/` and the like, or a folder with a packaging file and a "
    "licence of its own, that no module outside such folders imports), "
    "and keep the rest.",
    "ignore": "Codes or prefixes switched off everywhere; `ignore` wins over `select`, and "
    "ignoring every selected rule is an error.",
    "per-file-ignores": "Codes switched off for the files a pattern matches. Keys are "
    "gitignore-style patterns relative to the configuration's folder; `..` in a path on "
    "the command line is resolved before matching.",
    "exclude": "Files and folders the checker skips: gitignore-style patterns relative to "
    "the configuration's folder (`./build` means the `build` beside it). A file named on "
    "the command line is skipped too when a pattern matches it.",
    "extend-exclude": "More patterns, added to `exclude`; `--exclude` on the command line "
    "replaces `exclude` but keeps these.",
    "target-torch": 'The oldest torch your project supports, as `"MAJOR.MINOR"`: fixes '
    "never write an API it lacks (`torch.accelerator.memory_allocated` needs 2.8, say).",
    "respect-foreign-noqa": "Whether a file-level `# ruff: noqa` or `# flake8: noqa` "
    "(generated code) exempts the file from torchport too; `false` checks such files.",
}

# The environment variables torchport reads, one sentence each. The list is checked
# against every ``TORCHPORT_*`` name in the package's source (:func:`environment_names`),
# so a new variable cannot ship without its line here.
ENVIRONMENT: dict[str, str] = {
    "TORCHPORT_DEVICE": "The device `pick_device()` (and so `DeviceLoader` without a "
    "device) takes when no `prefer=` is given: `cpu`, `cuda:1`, `mps`, `sim`, or "
    "`auto`/empty for the usual order. `sim` installs the simulated accelerator. Code "
    "that does not call torchport is not affected (for that: `torchport run --device`).",
    "TORCHPORT_TEST_DEVICES": "The devices a test taking the pytest plugin's `device` "
    "fixture runs on, comma-separated (`cpu,sim`); default: `cpu` plus the accelerator, "
    "if any.",
    "TORCHPORT_CACHE_DIR": "Where `check` keeps its cache (as `--cache-dir`); default: "
    "`.torchport_cache/` beside the configuration, else in the working folder.",
    "TORCHPORT_FULL_CHECKS": "Set to `1`: every move of an object with its own `.to` (a PyG "
    "`Data`/`Batch`, a `TensorDict`) by `to_device`/`DeviceLoader` runs all its checks of "
    "that call. Unset, a layout's first 8 calls (per target and `non_blocking`) and then "
    "every 61st run them all, the "
    "others only what can differ between calls of one layout (the object already on the "
    "device, another thread, the `.to`'s own errors, the result's type): a `.to` that "
    "misbehaves for some values only, after behaving on 8 calls, may pass between those "
    "checks. Read once, at import.",
    "NO_COLOR": "Set: the command line never colours its output.",
    "FORCE_COLOR": "Set: it colours its output also when it is not a terminal.",
}
_NOT_SETTINGS = {"TORCHPORT_DIR"}  # a constant's name in _origin.py, not a variable read


def environment_names() -> set[str]:
    """Every ``TORCHPORT_*`` name in the package's source, and the colour switches."""
    source = ROOT / "src" / "torchport"
    found = {
        name
        for path in source.rglob("*.py")
        for name in re.findall(r"\b(TORCHPORT_[A-Z_]*[A-Z])\b", path.read_text(encoding="utf-8"))
    }
    return (found - _NOT_SETTINGS) | {"NO_COLOR", "FORCE_COLOR"}


# A value of the wrong type for each key, to capture the message load_config gives.
_WRONG: dict[str, str] = {
    "select": '"TP1"',
    "extend-select": '"TP901"',
    "ignore": '"TP303"',
    "per-file-ignores": '["tests/**"]',
    "exclude": '"legacy/"',
    "extend-exclude": '"generated/"',
    "target-torch": "2.7",
    "respect-foreign-noqa": '"yes"',
}


def keys() -> tuple[str, ...]:
    """The keys ``load_config`` accepts, as the code lists them."""
    return tuple(_config._KEYS)


def _examples() -> dict[str, tuple[str, str]]:
    """``key -> (example line, its comment)`` from the module docstring's Keys block."""
    doc = _config.__doc__ or ""
    block = doc.split("\n    [tool.torchport]\n", 1)[1].split("\n\n", 1)[0]
    found = {}
    for line in block.splitlines():
        match = re.match(r"\s*([a-z-]+) = (.*?)(?:\s+# (.*))?$", line)
        if match:
            found[match.group(1)] = (f"{match.group(1)} = {match.group(2)}", match.group(3) or "")
    return found


def _prose() -> str:
    """The docstring's paragraphs after the Keys block: how a file finds its table."""
    doc = _config.__doc__ or ""
    rest = doc.split("\n    [tool.torchport]\n", 1)[1].split("\n\n", 1)[1]
    text = re.sub(r":(?:class|data|meth):`~?([^`]+)`", r"`\1`", rest)
    text = text.replace("``", "`")
    paragraphs = [" ".join(p.split()) for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(paragraphs)


def _field(key: str) -> dataclasses.Field[object]:
    name = key.replace("-", "_")
    for field in dataclasses.fields(Config):
        if field.name == name:
            return field
    raise ValueError(f"[tool.torchport] key {key!r} has no field {name!r} on Config")


def _type(key: str) -> str:
    annotation = str(_field(key).type)
    if key == "per-file-ignores":
        return "table of pattern = list of strings"
    if key == "target-torch":
        return 'string, "MAJOR.MINOR"'
    if "bool" in annotation:
        return "boolean"
    if "tuple[str, ...]" in annotation:
        return "list of strings"
    raise ValueError(f"no type word for {key!r} ({annotation})")


def _default(key: str) -> str:
    if key == "select":
        on = sum(1 for rule in RULES if rule.default)
        return f"the {on} rules on by default"
    if key == "target-torch":
        return f"the project's own torch floor, else {format_version(FLOOR)}"
    value = _field(key).default
    if value == ():
        return "`[]`" if key != "per-file-ignores" else "`{}`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    raise ValueError(f"no default word for {key!r} ({value!r})")


def _options(key: str) -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found: dict[str, list[str]] = {}
    for command in ("check", "fix", "port"):
        for action in sub.choices[command]._actions:
            if action.dest == key.replace("-", "_") and action.option_strings:
                for option in action.option_strings:
                    found.setdefault(option, []).append(command)
    return ", ".join(f"`{option}` ({'/'.join(cmds)})" for option, cmds in found.items()) or "-"


def _error(key: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pyproject.toml"
        path.write_text(f"[tool.torchport]\n{key} = {_WRONG[key]}\n", encoding="utf-8")
        try:
            load_config(path)
        except ConfigError as error:
            text = str(error)
            for spelling in {str(path), str(path.resolve())}:
                text = text.replace(spelling, "pyproject.toml")
            return text
    raise ValueError(f"{key} = {_WRONG[key]} was accepted; give _WRONG a wrong value")


def _example_block(examples: dict[str, tuple[str, str]]) -> list[str]:
    return [f"{line}  # {note}" if note else line for line, note in examples.values()]


def render() -> str:
    """The page, as Markdown."""
    examples = _examples()
    missing = [k for k in keys() if k not in examples or k not in MORE or k not in _WRONG]
    if missing or set(MORE) - set(keys()):
        raise ValueError(f"keys without a docstring example, MORE or _WRONG entry: {missing}")
    lines = [
        "# Settings reference",
        "",
        "<!-- Written by docs/_gen/settings_page.py from the configuration's code; do not edit.",
        "     tests/docs/test_settings_page.py fails when this page is stale. -->",
        "",
        "The checker (`torchport check`, `fix`, `port`) reads a `[tool.torchport]` table in",
        "`pyproject.toml`. Every key is optional; an unknown key or a value of the wrong",
        "type is an error (exit 2) that names the key and the file. `torchport check",
        "--show-settings PATH` prints the settings a file gets and the file they come from.",
        "",
        "```toml",
        "[tool.torchport]",
        *_example_block(examples),
        "```",
        "",
        "## How a file finds its settings",
        "",
        _prose(),
        "",
        "## Keys",
    ]
    for key in keys():
        line = examples[key][0]
        lines += [
            "",
            f"### `{key}`",
            "",
            MORE[key],
            "",
            "| | |",
            "| --- | --- |",
            f"| type | {_type(key)} |",
            f"| default | {_default(key)} |",
            f"| command line | {_options(key)} |",
            f"| example | `{line}` |",
            "",
            "A value of the wrong type is refused:",
            "",
            "```text",
            _error(key),
            "```",
        ]
    names = environment_names()
    if names != set(ENVIRONMENT):
        missing, extra = sorted(names - set(ENVIRONMENT)), sorted(set(ENVIRONMENT) - names)
        raise ValueError(
            f"environment variables without an ENVIRONMENT entry: {missing}; "
            f"entries for no variable read: {extra}"
        )
    lines += [
        "",
        "## Environment variables",
        "",
        "Not part of `[tool.torchport]`; read by the runtime, the pytest plugin and the",
        "command line.",
        "",
        "| variable | what it does |",
        "| --- | --- |",
        *(f"| `{name}` | {text} |" for name, text in ENVIRONMENT.items()),
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    PAGE.write_text(render(), encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
