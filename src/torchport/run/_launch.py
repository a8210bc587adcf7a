"""Hand a many-process run to torchrun, each worker running under ``torchport run``.

Signals: torchrun runs in a session of its own and this process forwards
SIGINT, SIGTERM and SIGHUP to it; torchrun then stops every worker (it starts
each one in a session of its own, so a terminal's Ctrl-C never reaches them
directly) and exits, and this process ends by the same signal. On Linux,
torchrun also gets SIGTERM if this process dies without a chance to forward
(SIGKILL), so no worker outlives the run.
"""

from __future__ import annotations

import ctypes
import signal
import subprocess
import sys
from dataclasses import dataclass
from types import FrameType

from torchport.errors import ConfigError
from torchport.run._target import Target, check_target

__all__ = ["Rendezvous", "launch", "torchrun_argv"]


@dataclass(frozen=True)
class Rendezvous:
    """torchrun's options for finding the other workers; None leaves torchrun's default.

    With one node and no endpoint, address or port given, the run is
    ``--standalone``: torchrun picks a free local port, so runs side by side on
    one machine do not collide on 29500.
    """

    nnodes: str | None = None
    node_rank: int | None = None
    rdzv_endpoint: str | None = None
    rdzv_backend: str | None = None
    rdzv_id: str | None = None
    master_addr: str | None = None
    master_port: int | None = None
    max_restarts: int | None = None

    def standalone(self) -> bool:
        """Whether nothing here points at other machines or a fixed port."""
        return self.nnodes in (None, "1", "1:1") and not (
            self.rdzv_endpoint or self.rdzv_backend or self.master_addr or self.master_port
        )


def torchrun_argv(
    target: Target,
    *,
    nproc: int,
    rendezvous: Rendezvous | None = None,
    device: str | None = None,
    audit: bool = False,
    strict: bool = False,
    quiet: bool = False,
    python: str | None = None,
) -> list[str]:
    """The command line that starts ``nproc`` workers per node through torchrun.

    Each worker runs ``python -m torchport run [--device D] [--audit] [--strict]
    [--quiet] [-m] TARGET ARGS``, so CUDA calls are redirected in every worker and
    :func:`torchport.pick_device` picks the worker's device from ``LOCAL_RANK``.

    Raises:
        torchport.ConfigError: ``nproc`` is below 1.
    """
    if nproc < 1:
        raise ConfigError(f"--nproc must be at least 1, got {nproc}; pass the number of workers")
    rdzv = rendezvous or Rendezvous()
    argv = [python or sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc)]
    if rdzv.standalone():
        argv.append("--standalone")
    for flag, value in (
        ("--nnodes", rdzv.nnodes),
        ("--node-rank", rdzv.node_rank),
        ("--rdzv-endpoint", rdzv.rdzv_endpoint),
        ("--rdzv-backend", rdzv.rdzv_backend),
        ("--rdzv-id", rdzv.rdzv_id),
        ("--master-addr", rdzv.master_addr),
        ("--master-port", rdzv.master_port),
        ("--max-restarts", rdzv.max_restarts),
    ):
        if value is not None:
            argv += [flag, str(value)]
    argv += ["-m", "torchport", "run"]
    if device is not None:
        argv += ["--device", device]
    argv += ["--audit"] * audit + ["--strict"] * strict + ["--quiet"] * quiet
    argv += ["-m"] * target.module
    return [*argv, target.name, *target.args]


def launch(argv: list[str], target: Target) -> int:
    """Check ``target`` can start, run ``argv`` (from :func:`torchrun_argv`), return its exit code.

    Returns:
        torchrun's exit status, or ``-signum`` when this process got SIGINT,
        SIGTERM or SIGHUP: the signal was passed on to torchrun, which stopped
        its workers, and the caller should now end the process by that signal
        (:func:`torchport.run._shutdown.die_by_signal`).

    Raises:
        torchport.ConfigError: ``target`` cannot be started.
    """
    check_target(target)
    received: list[int] = []
    process: subprocess.Popen[bytes] | None = None

    def forward(signum: int, frame: FrameType | None) -> None:
        received.append(signum)
        if process is not None and process.poll() is None:
            process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in _FORWARDED}
    try:
        process = subprocess.Popen(
            argv,
            start_new_session=True,  # only we signal torchrun, once, not the terminal too
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
        if received:  # a signal came while torchrun was starting
            process.send_signal(received[0])
        code = process.wait()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return -received[0] if received else code


# SIGHUP (a closed terminal) exists on POSIX only.
_FORWARDED = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In torchrun's process, before exec: get SIGTERM when this launcher dies (Linux)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
