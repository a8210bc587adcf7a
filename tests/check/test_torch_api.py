"""target-torch: a fix never writes an API the target torch lacks; the table knows every API
the shipped fixes write; the default floor is the runtime's declared one."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import RULES, Finding, check_paths, check_source, fix_paths, fix_source
from torchport.check._torch_api import (
    FLOOR,
    KEYWORD_SINCE,
    SINCE,
    format_version,
    parse_version,
    written_apis,
)
from torchport.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
MEMORY = "import torch\n\nused = torch.cuda.memory_allocated()\ntorch.cuda.empty_cache()\n"

# Written apart from the table: `torch.accelerator.<name>(` / `torch.amp.<name>` spelled out.
_SPELLED = re.compile(r"\b\w+\.((?:accelerator|amp)\.\w+|get_device_module|Stream|Event)\b")
# Every dotted name off the torch module however it is imported (`torch.`, `th.`, `t.`).
_TORCH_CHAIN = re.compile(r"(?<![\w.])(?:torch|th|t)((?:\.[A-Za-z_]\w*)+)")
# Names every torch 2.x has (torch 2.0's documentation): a fix may write them for any target.
_IN_EVERY_TORCH_2 = {
    "Tensor",
    "as_tensor",
    "device",
    "device.type",
    "empty",
    "float32",
    "int64",
    "manual_seed",
    "set_float32_matmul_precision",
    "tensor",
}


def _gated(name: str) -> str | None:
    """The table's entry for ``name`` (itself or a prefix), else None."""
    parts = name.split(".")
    hits = [".".join(parts[:end]) for end in range(len(parts), 0, -1)]
    return next((h for h in hits if h in SINCE), None)


def test_the_floor_is_the_runtimes_declared_torch() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (spec,) = [
        d for d in data["project"]["optional-dependencies"]["torch"] if d.startswith("torch")
    ]
    assert parse_version(spec.split(">=")[1].split(",")[0]) == FLOOR


def test_every_torch_name_a_shipped_fix_writes_is_judged() -> None:
    """Not only accelerator/amp: any torch name a fix gains is in the table or in every torch 2."""
    unjudged: dict[str, str] = {}
    for rule in RULES:
        for example in rule.invalid:
            if example.fixed is None:
                continue
            new = set(_TORCH_CHAIN.findall(example.fixed)) - set(
                _TORCH_CHAIN.findall(example.source)
            )
            for name in (n[1:] for n in new):
                if _gated(name) is None and name not in _IN_EVERY_TORCH_2:
                    unjudged[name] = rule.code
    assert not unjudged, unjudged


@pytest.mark.parametrize("target", ["2.5", "2.4", "1.13"])
def test_the_backend_for_a_device_is_not_written_for_a_torch_without_it(target: str) -> None:
    source = (
        "import torch\nimport torch.distributed as dist\n\n"
        'device = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        'dist.init_process_group(backend="nccl")\n'
    )
    # TP404 is off by default (benchmarks/RESULTS.md, branch j34i): selected here
    fixed = fix_source(source, unsafe=True, select=["TP404"], target_torch=target)
    assert "get_default_backend_for_device" not in fixed
    newer = fix_source(source, unsafe=True, select=["TP404"], target_torch="2.6")
    assert "get_default_backend_for_device" in newer


# Keywords every torch 2.x takes at these calls (torch 2.0's documentation).
_KEYWORDS_IN_EVERY_TORCH_2 = {
    ("DataLoader", "pin_memory"),
    ("arange", "device"),
    ("as_tensor", "device"),
    ("empty", "device"),
    ("empty", "dtype"),
    ("load", "map_location"),
    ("ones", "device"),
    ("randn", "device"),
    ("tensor", "device"),
    ("tensor", "dtype"),
    ("to", "non_blocking"),
    ("zeros", "device"),
}


def _call_keywords(source: str) -> set[tuple[str | None, str]]:
    """(the called function's last name, keyword) of every call in ``source``."""
    found: set[tuple[str | None, str]] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            found |= {(name, k.arg) for k in node.keywords if k.arg is not None}
    return found


def test_every_keyword_a_shipped_fix_adds_is_judged() -> None:
    unjudged = {}
    for rule in RULES:
        for example in rule.invalid:
            if example.fixed is None:
                continue
            added = _call_keywords(example.fixed) - _call_keywords(example.source)
            for pair in added - _KEYWORDS_IN_EVERY_TORCH_2 - set(KEYWORD_SINCE):
                unjudged[pair] = rule.code
    assert not unjudged, unjudged


@pytest.mark.parametrize(("target", "writes"), [("2.0", False), ("1.13", False), ("2.1", True)])
def test_weights_only_is_not_added_where_the_hub_lacks_it(target: str, writes: bool) -> None:
    source = (
        "import torch\nfrom torch.utils import model_zoo\n\n"
        "sd = torch.hub.load_state_dict_from_url(url, progress=(1, 2))\n"
        "sd2 = model_zoo.load_url(urls[arch])\n"
    )
    # TP307 is off by default (benchmarks/RESULTS.md, branch j34i): selected here
    fixed = fix_source(source, unsafe=True, select=["TP307"], target_torch=target)
    assert fixed.count("weights_only=True") == (2 if writes else 0)
    findings = [f for f in check_source_at(source, target, ["TP307"]) if f.code == "TP307"]
    assert len(findings) == 2
    for finding in findings:
        assert (finding.fix is not None) is writes
        assert ("needs torch >= 2.1" in finding.message) is not writes


def check_source_at(source: str, target: str, select: list[str] | None = None) -> list[Finding]:
    from torchport.check._torch_api import within_target

    return within_target(check_source(source, select=select), source, parse_version(target))


def test_every_api_a_shipped_fix_writes_is_in_the_table() -> None:
    written: set[str] = set()
    for rule in RULES:
        for example in rule.invalid:
            if example.fixed is not None:
                new = set(_SPELLED.findall(example.fixed)) - set(_SPELLED.findall(example.source))
                written |= new
    assert written, "the examples write no torch.accelerator/amp API: the scan is broken"
    assert written <= set(SINCE), sorted(written - set(SINCE))
    assert written_apis("x = th.accelerator.empty_cache()") == {"accelerator.empty_cache"}


@pytest.mark.parametrize(
    ("target", "writes"),
    [("2.6", False), ("2.7", False), ("2.8", True), ("2.9", True), (None, True)],
)
def test_fix_source_writes_the_memory_api_only_for_a_torch_that_has_it(
    target: str | None, writes: bool
) -> None:
    fixed = fix_source(MEMORY, unsafe=True, target_torch=target, select=["TP401"])
    assert ("accelerator.memory_allocated" in fixed) is writes
    assert ("accelerator.empty_cache" in fixed) is writes
    assert ("torch.cuda.memory_allocated" in fixed) is not writes


@given(minor=st.integers(0, 12))
def test_no_api_newer_than_the_target_is_ever_written(minor: int) -> None:
    """Oracle: every API name the fixed text gains needs at most the target (by the table)."""
    target = (2, minor)
    for rule in RULES:
        for example in rule.invalid:
            try:
                fixed = fix_source(example.source, unsafe=True, target_torch=f"2.{minor}")
            except (SyntaxError, RuntimeError):
                continue
            gained = set(_SPELLED.findall(fixed)) - set(_SPELLED.findall(example.source))
            chains = {c[1:] for c in _TORCH_CHAIN.findall(fixed)} - {
                c[1:] for c in _TORCH_CHAIN.findall(example.source)
            }
            gained |= {g for g in map(_gated, chains) if g is not None}
            too_new = [a for a in gained if SINCE.get(a, (99, 0)) > target]
            assert not too_new, (rule.code, target, too_new)


def test_a_finding_left_by_the_target_says_why(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchport]\ntarget-torch = "2.7"\nextend-select = ["TP401"]\n'
    )
    script = tmp_path / "m.py"
    script.write_text(MEMORY)
    result = check_paths([script])
    (finding,) = [f for f in result.findings if "memory_allocated" in f.message]
    assert finding.fix is None
    assert "needs torch >= 2.8" in finding.message and "target-torch is 2.7" in finding.message
    fix_paths([script], unsafe=True)
    assert "torch.accelerator.memory_allocated" not in script.read_text()
    fix_paths([script], unsafe=True, target_torch="2.8")  # the command line overrides
    assert "torch.accelerator.memory_allocated" in script.read_text()


@pytest.mark.parametrize("bad", ["2", "latest", "2.x", ""])
def test_a_target_that_is_no_version_is_a_config_error(tmp_path: Path, bad: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.torchport]\ntarget-torch = "{bad}"\n')
    (tmp_path / "m.py").write_text(MEMORY)
    with pytest.raises(ConfigError, match="target-torch"):
        check_paths([tmp_path / "m.py"])
    with pytest.raises(ConfigError, match="target"):
        fix_source(MEMORY, target_torch=bad)


def test_versions_print_as_they_are_written() -> None:
    assert format_version(FLOOR) == f"{FLOOR[0]}.{FLOOR[1]}"


def test_the_table_in_docs_cli_md_is_the_table() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    rows = re.findall(r"^\| `torch\.([\w.]+)` \| (\d+)\.(\d+) \|$", text, re.MULTILINE)
    assert {api: (int(a), int(b)) for api, a, b in rows} == SINCE


@given(st.text(alphabet="ab_1é٣ \t\n\u2003\u00a0(.,=", max_size=30))
def test_the_name_before_a_parenthesis_reads_back_like_the_anchored_search(text: str) -> None:
    # Oracle: the regular expression the reader replaced (it scanned the whole prefix,
    # once per finding: a quadratic check of a long file with many findings).
    from torchport.check._torch_api import _name_before

    for end in range(len(text) + 1):
        found = re.search(r"([A-Za-z_]\w*)\s*$", text[:end])
        assert _name_before(text, end) == (None if found is None else found[1])
