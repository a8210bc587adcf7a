"""``torchport run`` as one call: the options the command takes, and what it does with them.

Without ``nproc`` the script runs in this process under a redirect; with it, the
run is handed to torchrun, each worker running under ``torchport run`` again.
Importing this module never imports torch (the torchrun launcher does not need it).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from torchport.errors import ConfigError
from torchport.run._launch import Rendezvous, launch, torchrun_argv
from torchport.run._shutdown import die_by_signal
from torchport.run._target import Target, run_target

__all__ = ["RunOptions", "run_command"]


@dataclass(frozen=True)
class RunOptions:
    """What ``torchport run`` was asked to do.

    Attributes:
        command: The script path (or module name, with ``module=True``) and its arguments.
        module: Run ``command[0]`` as ``python -m`` would.
        device: Device string; None lets :func:`torchport.pick_device` choose.
        audit: Print an audit report to stderr at exit.
        strict: Raise on device mismatches.
        quiet: Do not say on stderr that CUDA is redirected.
        redirect_cuda: False runs without the redirect: on ``sim`` the script sees an
            accelerator that is not CUDA (``port --verify``'s second run).
        nproc: Workers per node; set, the run is handed to torchrun.
        rendezvous: torchrun's options for finding the other workers.
    """

    command: tuple[str, ...]
    module: bool = False
    device: str | None = None
    audit: bool = False
    strict: bool = False
    quiet: bool = False
    redirect_cuda: bool = True
    nproc: int | None = None
    rendezvous: Rendezvous = field(default_factory=Rendezvous)


def run_command(options: RunOptions) -> int:
    """Run what ``options`` name; return the exit status ``python`` (or torchrun) gave.

    When Ctrl-C or a forwarded signal ended the run, this process ends by the
    same signal (so a shell loop around it stops), after flushing its output.

    Raises:
        torchport.ConfigError: nothing to run, or the target cannot be started.
        torchport.DeviceError: ``device`` is malformed or not present.
    """
    if not options.command:
        raise ConfigError("nothing to run; give a script path or -m MODULE, then its arguments")
    target = Target(options.command[0], options.command[1:], module=options.module)
    try:
        if options.nproc is None:
            code = run_target(
                target,
                options.device,
                audit=options.audit,
                strict=options.strict,
                quiet=options.quiet,
                redirect_cuda=options.redirect_cuda,
            )
        else:
            argv = torchrun_argv(
                target,
                nproc=options.nproc,
                rendezvous=options.rendezvous,
                device=options.device,
                audit=options.audit,
                strict=options.strict,
                quiet=options.quiet,
            )
            code = launch(argv, target)
    except KeyboardInterrupt:  # Ctrl-C before the script started (importing torch)
        code = -signal.SIGINT
    if code < 0:  # ended by a signal: end the same way
        return die_by_signal(-code)
    return code
