"""Hand a many-process run to torchrun, each worker running under ``torchport run``."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from torchport.errors import ConfigError
from torchport.port._script import Target, check_target

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
    python: str | None = None,
) -> list[str]:
    """The command line that starts ``nproc`` workers per node through torchrun.

    Each worker runs ``python -m torchport run [--device D] [--audit] [--strict]
    [-m] TARGET ARGS``, so CUDA calls are redirected in every worker and
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
    argv += ["--audit"] * audit + ["--strict"] * strict + ["-m"] * target.module
    return [*argv, target.name, *target.args]


def launch(argv: list[str], target: Target) -> int:
    """Check ``target`` can start, run ``argv`` (from :func:`torchrun_argv`), return its exit code.

    Raises:
        torchport.ConfigError: ``target`` cannot be started.
    """
    check_target(target)
    return subprocess.run(argv, check=False).returncode
