"""`torchport rule`: describe one rule, or list them all with what they do here.

``torchport rule TP101`` (also ``check --explain TP101``) prints a rule's page;
``torchport rule --all`` (also ``check --explain ALL``) lists every rule: whether
it runs here (with this folder's configuration), its fix safety, its intent
(which ``fix`` applies it) and what it asks for. ``--format json`` for tools.
"""

from __future__ import annotations

import argparse
import json
import sys

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "rule",
        help="describe a checker rule, or list them all (--all)",
        description="Describe one rule (its page, with examples), or with --all list every "
        "rule: on or off here, fix safety, intent and message.",
    )
    parser.add_argument("code", nargs="?", metavar="CODE", help="a rule code or name (TP101)")
    parser.add_argument("--all", action="store_true", help="list every rule")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    if args.all == (args.code is not None):
        from torchport.errors import ConfigError

        raise ConfigError("give one rule code (torchport rule TP101) or --all, not both or neither")
    return describe("ALL" if args.all else args.code, args.format)


def _rows() -> list[dict[str, object]]:
    import torchport.check.rules as shipped  # read now: tests may substitute the rules
    from torchport.check import find_config, scoped_codes, select_rules

    config = find_config()
    chosen = select_rules(config.select, config.ignore, config.extend_select)
    on = {r.code for r in chosen}
    scoped = set(scoped_codes(chosen, config.select, config.extend_select))
    return [
        {
            "code": r.code,
            "name": r.name,
            "on": r.code in on,
            # scoped: on in its default contexts only (check/_default_scope.py)
            "in_tests": r.code in on and (r.code not in scoped or "test" in r.default_contexts),
            "in_benchmarks": r.code in on
            and (r.code not in scoped or "bench" in r.default_contexts),
            "default": r.default,
            "default_contexts": sorted(r.default_contexts),
            "fix": r.fix_safety.value,
            "intent": r.intent.value,
            "message": r.message,
        }
        for r in shipped.RULES
    ]


# Where a rule on here runs, by (in test code, in benchmark code): the table's "on" column
_WHERE = {(True, True): "yes", (False, False): "code", (True, False): "c+t", (False, True): "c+b"}


def describe(code: str, fmt: str = "text") -> int:
    """Print one rule's page, or with ``ALL`` the table of every rule; exit code 0."""
    if code.strip().upper() != "ALL":
        from torchport.check import explain

        sys.stdout.write(explain(code).rstrip("\n") + "\n")
        return 0
    rows = _rows()
    if fmt == "json":
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(str(r["name"])) for r in rows)
    print(f"{'code':<7} {'on':<4} {'fix':<6} {'intent':<6} {'name':<{width}}  message")
    for r in rows:
        on = _WHERE[bool(r["in_tests"]), bool(r["in_benchmarks"])] if r["on"] else "-"
        print(
            f"{r['code']:<7} {on:<4} {r['fix']:<6} {r['intent']:<6} "
            f"{r['name']:<{width}}  {r['message']}"
        )
    on_count = sum(bool(r["on"]) for r in rows)
    print(
        f"{len(rows)} rules, {on_count} on here (code: outside test and benchmark code only, "
        "c+t: outside benchmark code, c+b: outside test code, as judged); "
        "`torchport rule CODE` describes one and says where it is on by default. "
        "fix: safe (`torchport fix`), unsafe (`fix --unsafe`), none; intent: device and "
        "safety fixes apply with a plain `fix`, speed with `fix --speed`, port in `torchport port`."
    )
    return 0
