"""`torchport run`: run a script on any device with CUDA calls redirected; --nproc uses torchrun."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from torchport.errors import ConfigError, TorchportError


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
    try:
        code = _dispatch(args)
    except TorchportError as exc:
        message = " ".join(str(exc).split())  # one line, however the message was written
        print(f"torchport run: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the script started (importing torch)
        code = -signal.SIGINT
    if code < 0:  # ended by a signal (Ctrl-C): end the same way, so shell loops stop
        from torchport.port._shutdown import die_by_signal

        return die_by_signal(-code)
    return code


def _dispatch(args: argparse.Namespace) -> int:
    from torchport.port._script import Target

    if not args.command:
        raise ConfigError("nothing to run; give a script path or -m MODULE, then its arguments")
    target = Target(args.command[0], tuple(args.command[1:]), module=args.module)
    if args.nproc is None:
        from torchport.port._script import run_target

        return run_target(
            target, args.device, audit=args.audit, strict=args.strict, quiet=args.quiet
        )

    from torchport.port._launch import Rendezvous, launch, torchrun_argv

    rendezvous = Rendezvous(
        nnodes=args.nnodes,
        node_rank=args.node_rank,
        rdzv_endpoint=args.rdzv_endpoint,
        rdzv_backend=args.rdzv_backend,
        rdzv_id=args.rdzv_id,
        master_addr=args.master_addr,
        master_port=args.master_port,
        max_restarts=args.max_restarts,
    )
    argv = torchrun_argv(
        target,
        nproc=args.nproc,
        rendezvous=rendezvous,
        device=args.device,
        audit=args.audit,
        strict=args.strict,
        quiet=args.quiet,
    )
    return launch(argv, target)
