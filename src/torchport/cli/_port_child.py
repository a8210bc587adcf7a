"""The child process of ``torchport port --verify``: the ported entry on the simulated accelerator.

Run as ``python -m torchport.cli._port_child REPORT ROOTS AS ENTRY [ARGS...]`` by
:func:`torchport.check.port.verify` (never by users). It runs ENTRY as
``torchport run --device sim --quiet`` would: with ``AS`` = ``redirected``, CUDA
redirected to ``sim`` (the program sees a CUDA machine); with ``AS`` = ``plain``, without
the redirect (``torch.cuda.is_available()`` is False: an accelerator that is not CUDA,
as MPS and XPU are). It writes what the run showed that an exit status cannot say to
REPORT (a JSON object):

* ``"setup"``: why the run could not start: ``"no-runtime"`` (torch does not
  import here) or ``"no-simulator"`` (the simulated accelerator cannot install,
  e.g. torch older than 2.7), with ``"message"``;
* ``"float64"``: each place in the user's code (a file under ROOTS, a
  ``os.pathsep``-separated list) where a float64 tensor was made on the device,
  moved there or cast to float64 there (CUDA runs it; MPS has no float64), as
  ``[path, line, what]`` once per place;
* ``"host_work"``: each place in the user's code where the run computed on the
  host (a model, a raw ``requires_grad`` tensor or a layer's weight left on the
  CPU: the rule is :mod:`torchport.cli._host_watch`'s), as
  ``[path, line, call, calls, kind, chosen]`` once per place;
* ``"on_device"``: how many storages the run put on the simulated accelerator (0: the
  program computed on the CPU alone, whatever it printed).

Both watches are one :class:`torch.overrides.TorchFunctionMode`: it sees the
torch calls of the user's code and of the libraries it calls, and names the
innermost frame under ROOTS. A result made from float64 device inputs is not a
new float64 place (the float64 came from elsewhere, already named).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

_LIMIT = 50  # places named at most: the first ones say what to fix (as the host watch's)


def main(argv: list[str]) -> int:
    report_path, roots, seen_as, *command = argv
    report: dict[str, Any] = {"float64": [], "host_work": []}
    try:
        code = _run(command, roots.split(os.pathsep), seen_as == "redirected", report)
    finally:
        Path(report_path).write_text(json.dumps(report), encoding="utf-8")
    return code


def _run(command: list[str], roots: list[str], redirect: bool, report: dict[str, Any]) -> int:
    try:
        import torch  # noqa: F401  (asked first: the message names what is missing)
    except ImportError as exc:
        report.update(setup="no-runtime", message=f"{type(exc).__name__}: {exc}")
        return 3
    from torchport.errors import TorchportError
    from torchport.sim import simulate_accelerator

    try:
        simulate_accelerator()
    except TorchportError as exc:
        report.update(setup="no-simulator", message=str(exc))
        return 3
    from torchport.run import RunOptions, run_command
    from torchport.sim import storages_placed

    options = RunOptions(command=tuple(command), device="sim", quiet=True, redirect_cuda=redirect)
    try:
        with _watch(roots, report["float64"], report["host_work"]):
            return run_command(options)
    finally:
        report["on_device"] = storages_placed()


def _float64_on_device(value: Any, torch: Any) -> bool:
    if isinstance(value, torch.Tensor):
        return value.dtype is torch.float64 and value.device.type == "sim"
    if isinstance(value, (tuple, list)):
        return any(_float64_on_device(v, torch) for v in value[:8])
    return False


def _watch(roots: list[str], places: list[list[object]], host: list[list[Any]]) -> Any:
    """The float64 and host-work watches (see the module docstring), one torch function mode."""
    import torch

    from torchport.cli._host_watch import HostWatch, user_line

    prefixes = tuple(str(Path(r).resolve()) + (os.sep if Path(r).is_dir() else "") for r in roots)
    seen: set[tuple[str, int]] = set()

    def float64(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if (
            len(places) < _LIMIT
            and _float64_on_device(result, torch)
            and not any(_float64_on_device(a, torch) for a in (*args, *kwargs.values()))
        ):  # frames: float64, the mode's __torch_function__, the caller
            where = user_line(sys._getframe(2), prefixes)
            if where is not None and where not in seen:
                seen.add(where)
                name = getattr(func, "__name__", None) or repr(func)
                places.append([where[0], where[1], name])

    return HostWatch(prefixes, host, also=float64)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
