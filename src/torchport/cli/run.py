"""`torchport run`: run a script on any device with CUDA calls redirected; --nproc uses torchrun."""

from __future__ import annotations

import argparse
import sys

from torchport.errors import TorchportError

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "run",
        help="run a CUDA script on any device; --nproc N hands it to torchrun",
        description=(
            "Run SCRIPT as `python SCRIPT ARGS` would, on DEVICE. When DEVICE is not CUDA, "
            "the script's CUDA calls go to DEVICE for this run only."
        ),
    )
    parser.add_argument("--device", help="device to run on (default: torchport.pick_device())")
    parser.add_argument("--audit", action="store_true", help="print an audit report at exit")
    parser.add_argument("--strict", action="store_true", help="raise on device mismatches")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="do not say that CUDA is redirected"
    )
    parser.add_argument("-m", dest="module", action="store_true", help="run a module, as python -m")
    dist = parser.add_argument_group("many processes (torchrun)")
    dist.add_argument("--nproc", type=int, help="workers per node; hands the run to torchrun")
    dist.add_argument("--nnodes", help="number of nodes, or MIN:MAX")
    dist.add_argument("--node-rank", type=int)
    dist.add_argument("--rdzv-endpoint", metavar="HOST:PORT")
    dist.add_argument("--rdzv-backend")
    dist.add_argument("--rdzv-id")
    dist.add_argument("--master-addr")
    dist.add_argument("--master-port", type=int)
    dist.add_argument("--max-restarts", type=int)
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="SCRIPT|MODULE [ARGS]", help="what to run"
    )
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from torchport.run import Rendezvous, RunOptions, run_command

    options = RunOptions(
        command=tuple(args.command),
        module=args.module,
        device=args.device,
        audit=args.audit,
        strict=args.strict,
        quiet=args.quiet,
        nproc=args.nproc,
        rendezvous=Rendezvous(
            nnodes=args.nnodes,
            node_rank=args.node_rank,
            rdzv_endpoint=args.rdzv_endpoint,
            rdzv_backend=args.rdzv_backend,
            rdzv_id=args.rdzv_id,
            master_addr=args.master_addr,
            master_port=args.master_port,
            max_restarts=args.max_restarts,
        ),
    )
    try:
        return run_command(options)
    except TorchportError as exc:
        message = " ".join(str(exc).split())  # one line, however the message was written
        print(f"torchport run: error: {message}", file=sys.stderr)
        return 2
