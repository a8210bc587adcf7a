"""Sphinx extension: writes the API and rule reference pages from the code before a build.

``reference/api.rst`` lists every name in ``torchport.__all__`` and
``torchport.check.__all__`` for autodoc (so a new public name gets its page
without anyone editing the docs); ``reference/rules/TPxxx.md`` is each rule's
``torchport check --explain`` page, rendered from its docstring and its own
``valid``/``invalid`` examples (the examples the test suite runs), and
``reference/rules.md`` lists them. The pages are written into the source folder
at ``builder-inited`` and are not kept in git (``docs/reference/`` is ignored).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

_API_HEAD = """API reference
=============

Generated from the docstrings of the public names: ``torchport`` (the runtime;
needs the ``torch`` extra) and ``torchport.check`` (the checker; needs nothing).

"""


def _directive(owner: Any, module: str, name: str) -> str:
    value = getattr(owner, name)
    if name.startswith("__"):
        return ""
    if inspect.isclass(value) and issubclass(value, BaseException):
        return f".. autoexception:: {module}.{name}\n\n"
    if inspect.isclass(value):
        return f".. autoclass:: {module}.{name}\n\n"
    if callable(value):
        return f".. autofunction:: {module}.{name}\n\n"
    return f".. autodata:: {module}.{name}\n   :no-value:\n\n"


def _api() -> str:
    import torchport
    import torchport.check

    out = [_API_HEAD]
    for title, owner, module in (
        ("torchport", torchport, "torchport"),
        ("torchport.check", torchport.check, "torchport.check"),
    ):
        out.append(f"{title}\n{'-' * len(title)}\n\n.. module:: {module}\n   :no-index:\n\n")
        out += [_directive(owner, module, name) for name in owner.__all__]
    return "".join(out)


def write_reference(folder: Path) -> None:
    """Write ``folder/api.rst``, ``folder/rules.md`` and ``folder/rules/*.md``."""
    from torchport.check import RULES, explain

    rules = folder / "rules"
    rules.mkdir(parents=True, exist_ok=True)
    for stale in rules.glob("*.md"):
        stale.unlink()
    (folder / "api.rst").write_text(_api(), encoding="utf-8")
    index = [
        "# Rule reference\n",
        "Every rule of `torchport check`, rendered from its docstring and its own examples",
        "(the same examples the test suite runs). `torchport rule --all` lists them with",
        "whether each is on in your configuration.\n",
        "| code | name | on by default | fix | intent |",
        "| --- | --- | --- | --- | --- |",
    ]
    for rule in RULES:
        page = explain(rule.code)
        (rules / f"{rule.code}.md").write_text(page, encoding="utf-8")
        index.append(
            f"| [{rule.code}](rules/{rule.code}.md) | {rule.name} | "
            f"{'yes' if rule.default else 'no'} | {rule.fix_safety.value} | {rule.intent.value} |"
        )
    index += ["", "```{toctree}", ":hidden:", ":glob:", "", "rules/*", "```", ""]
    (folder / "rules.md").write_text("\n".join(index), encoding="utf-8")


def _on_init(app: Any) -> None:
    write_reference(Path(app.srcdir) / "reference")


def setup(app: Any) -> dict[str, Any]:
    app.connect("builder-inited", _on_init)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
