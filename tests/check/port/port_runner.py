"""Run tutorial scripts in this process, one after another, and report what they did as JSON.

Usage: ``python port_runner.py cpu|meta|sim JOBS.json OUT.json`` where JOBS.json is a list
of ``{"name", "script", "workdir"}``. Each script runs as ``__main__`` in its own
working directory with its stdout captured (one process for all: importing torch
costs seconds on a loaded machine).

``cpu``: the plain run; records what each script printed.

``sim``: the simulated accelerator (``torchport.testing.simulate_accelerator``): real
values and CUDA's device rules, so a script runs to its end and a mixed-device op
raises; a forward pre-hook records modules whose tensors are all left on the CPU.

``meta``: ``meta`` stands in for the accelerator. ``torch.accelerator`` reports
it as available and current, so a ported script's ``device`` line picks it; a
global forward pre-hook records, for every forward, the module's mode (train or
eval) and every parameter, buffer and tensor input (positional, and keyword through
a wrapper of ``Module.__call__``) that is NOT on ``meta``.
Meta tensors hold no data, so reads back to the host (``.item()``, ``.cpu()``,
``float(t)``, formatting, ``bool(t)``) are answered with zeros: the script runs to
its end, through training and evaluation, and the printed numbers are
meaningless. What fails on a real accelerator fails here too: ``.numpy()`` of a
device tensor raises, and so does a mismatch (a CPU batch meeting meta weights);
the error is recorded with whether it is about devices. Loaders are not pinned
(their pinning thread asks the real runtime for the accelerator).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import runpy
import signal
import sys
import traceback
from typing import Any

import torch
from torch.utils._pytree import tree_leaves

META = torch.device("meta")
_DEVICE_WORDS = ("device", "meta", "cuda", "cpu")


def device_leaves(tree: Any) -> list[Any]:
    """The leaves of a forward's inputs that belong on the accelerator.

    A ``PackedSequence``'s ``batch_sizes`` stay on the CPU by torch's own rule
    (``pack_padded_sequence`` puts them there on every device), so they are no
    leftover; its data and indices are.
    """
    from torch.nn.utils.rnn import PackedSequence

    leaves: list[Any] = []
    for leaf in tree_leaves(tree, is_leaf=lambda x: isinstance(x, PackedSequence)):
        if isinstance(leaf, PackedSequence):
            leaves += [leaf.data, leaf.sorted_indices, leaf.unsorted_indices]
        else:
            leaves.append(leaf)
    return leaves


def _zeros_like_host(t: torch.Tensor) -> torch.Tensor:
    return torch.zeros(t.shape, dtype=t.dtype)


def install_meta_accelerator(record: dict[str, Any]) -> None:
    """Make ``meta`` the accelerator and watch every forward (see the module docstring)."""
    torch.accelerator.is_available = lambda: True  # type: ignore[assignment]
    torch.accelerator.current_accelerator = lambda check_available=False: META  # type: ignore[assignment]
    tensor = torch.Tensor
    orig_item, orig_tolist, orig_cpu = tensor.item, tensor.tolist, tensor.cpu
    orig_to, orig_numpy, orig_format = tensor.to, tensor.numpy, tensor.__format__
    orig_bool, orig_float, orig_int = tensor.__bool__, tensor.__float__, tensor.__int__
    orig_pin = tensor.pin_memory

    def item(self: torch.Tensor) -> Any:
        return orig_item(_zeros_like_host(self)) if self.is_meta else orig_item(self)

    def tolist(self: torch.Tensor) -> Any:
        return orig_tolist(_zeros_like_host(self)) if self.is_meta else orig_tolist(self)

    def cpu(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return _zeros_like_host(self) if self.is_meta else orig_cpu(self, *args, **kwargs)

    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if self.is_meta:
            options = {k: v for k, v in kwargs.items() if k != "copy"}
            device = torch._C._nn._parse_to(*args, **options)[0]
            if device is not None and device.type == "cpu":
                return _zeros_like_host(self)
        return orig_to(self, *args, **kwargs)

    def numpy(self: torch.Tensor, *args: Any, force: bool = False) -> Any:
        if self.is_meta and not force:
            # as on any accelerator: numpy reads host memory only
            raise TypeError("can't convert meta device type tensor to numpy; call .cpu() first")
        host = _zeros_like_host(self) if self.is_meta else self
        return orig_numpy(host, *args)

    def fmt(self: torch.Tensor, spec: str) -> str:
        if self.is_meta and self.dim() == 0:
            return format(item(self), spec)
        return orig_format(self, spec)

    def pin_memory(self: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self  # nothing to pin for a device with no memory; the copy is what we watch

    tensor.item = item  # type: ignore[method-assign]
    tensor.tolist = tolist  # type: ignore[method-assign]
    tensor.cpu = cpu  # type: ignore[method-assign]
    tensor.to = to  # type: ignore[method-assign]
    tensor.numpy = numpy  # type: ignore[method-assign]
    tensor.__format__ = fmt  # type: ignore[method-assign]
    tensor.__bool__ = lambda self: False if self.is_meta else orig_bool(self)  # type: ignore[method-assign]
    tensor.__float__ = lambda self: 0.0 if self.is_meta else orig_float(self)  # type: ignore[method-assign]
    tensor.__int__ = lambda self: 0 if self.is_meta else orig_int(self)  # type: ignore[method-assign]
    tensor.pin_memory = pin_memory  # type: ignore[method-assign]
    del orig_pin
    # Comparisons that answer with a Python bool read the data too.
    for name in ("allclose", "equal"):
        orig = getattr(torch, name)

        def compare(*args: Any, _orig: Any = orig, **kwargs: Any) -> Any:
            if any(isinstance(a, torch.Tensor) and a.is_meta for a in args):
                return True
            return _orig(*args, **kwargs)

        setattr(torch, name, compare)

    def hook(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        mode = "train" if module.training else "eval"
        record["forwards"][mode] += 1
        where = type(module).__name__
        off = record["off_device"]
        for name, p in module.named_parameters():
            if p.device != META and len(off) < 20:
                off.append(f"{mode} {where}: parameter {name} on {p.device}")
        for name, b in module.named_buffers():
            if b.device != META and len(off) < 20:
                off.append(f"{mode} {where}: buffer {name} on {b.device}")
        for i, leaf in enumerate(device_leaves(args)):
            if isinstance(leaf, torch.Tensor) and leaf.device != META and len(off) < 20:
                off.append(f"{mode} {where}: input {i} on {leaf.device}")

    torch.nn.modules.module.register_module_forward_pre_hook(hook)

    # Global pre-hooks see positional inputs only: keyword inputs are checked here.
    module_call = torch.nn.Module.__call__

    def call(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        off = record["off_device"]
        for name, leaf in kwargs.items():
            for t in device_leaves(leaf):
                if isinstance(t, torch.Tensor) and t.device != META and len(off) < 20:
                    mode = "train" if self.training else "eval"
                    off.append(f"{mode} {type(self).__name__}: input {name}= on {t.device}")
        return module_call(self, *args, **kwargs)

    torch.nn.Module.__call__ = call  # type: ignore[method-assign]

    # Pinning is a host-side speed-up with nothing to say about placement, and the
    # loader's pinning thread asks the real runtime for the accelerator: leave it out.
    loader_init = torch.utils.data.DataLoader.__init__

    def unpinned(self: Any, *args: Any, **kwargs: Any) -> None:
        kwargs["pin_memory"] = False
        loader_init(self, *args, **kwargs)

    torch.utils.data.DataLoader.__init__ = unpinned  # type: ignore[method-assign]


def install_sim_watch(record: dict[str, Any]) -> None:
    """The simulated accelerator (real values, CUDA's device rules), every forward watched.

    Mixed-device ops and ``.numpy()`` of a device tensor raise by themselves; the
    hook records a forward whose parameters, buffers and tensor inputs are all on
    the CPU too (a model never moved runs there without an error).
    """
    from torchport.testing import simulate_accelerator

    sim = simulate_accelerator()

    def hook(module: torch.nn.Module, args: tuple[Any, ...]) -> None:
        mode = "train" if module.training else "eval"
        record["forwards"][mode] += 1
        where, off = type(module).__name__, record["off_device"]
        tensors = [*module.named_parameters(), *module.named_buffers()]
        tensors += [(f"input {i}", t) for i, t in enumerate(device_leaves(args))]
        for name, t in tensors:
            if isinstance(t, torch.Tensor) and t.device != sim and len(off) < 20:
                off.append(f"{mode} {where}: {name} on {t.device}")

    torch.nn.modules.module.register_module_forward_pre_hook(hook)


def _no_pauses() -> None:
    """``PORT_RUNNER_NO_PAUSE=1``: plotting scripts neither sleep nor block (benchmarks)."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        return
    plt.pause = lambda interval: None  # type: ignore[assignment]
    plt.show = lambda *args, **kwargs: None  # type: ignore[assignment]


def _seed_everything() -> None:
    random.seed(0)
    torch.manual_seed(0)
    try:
        import numpy as np
    except ImportError:
        return
    np.random.seed(0)


class ScriptTimeout(Exception):
    """A script ran past ``PORT_RUNNER_TIMEOUT`` seconds (benchmarks on fetched code)."""


def _too_long(signum: int, frame: object) -> None:
    raise ScriptTimeout(f"ran past {os.environ.get('PORT_RUNNER_TIMEOUT')} s")


_RECORD: dict[str, Any] = {}  # what the installed hooks write to: one per process


def run_jobs(
    mode: str, jobs: list[dict[str, str]], *, install: bool = True
) -> list[dict[str, Any]]:
    """Run ``jobs`` in this process; ``install=False``: ``mode`` is installed already."""
    if os.environ.get("PORT_RUNNER_NO_PAUSE") == "1":
        _no_pauses()
    results: list[dict[str, Any]] = []
    record = _RECORD
    if install and mode == "meta":
        install_meta_accelerator(record)
    elif install and mode == "sim":
        install_sim_watch(record)
    # Imported once up front: a time limit that fires inside torch's lazy import of
    # sympy (an optimizer's first step) would leave it half-imported for every later script.
    import torch._dynamo  # noqa: F401

    home = os.getcwd()
    for job in jobs:
        record.clear()
        record.update(forwards={"train": 0, "eval": 0}, off_device=[])
        out = io.StringIO()
        error = None
        device_error = False
        os.chdir(job["workdir"])
        sys.path.insert(0, job["workdir"])  # `import data_util` beside the script, as python does
        modules = set(sys.modules)
        argv, sys.argv = sys.argv, [job["script"]]
        limit = int(os.environ.get("PORT_RUNNER_TIMEOUT", "0"))
        try:
            if limit:
                signal.signal(signal.SIGALRM, _too_long)
                signal.alarm(limit)
            _seed_everything()  # a script that seeds nothing prints the same both times
            with contextlib.redirect_stdout(out):
                runpy.run_path(job["script"], run_name="__main__")
        except SystemExit as exc:
            if exc.code not in (None, 0):
                error = f"SystemExit({exc.code!r})"
        except Exception as exc:  # recorded: the test decides what it means
            error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            device_error = any(word in str(exc).lower() for word in _DEVICE_WORDS)
            error += "\n" + traceback.format_exc(limit=-3)
        finally:
            signal.alarm(0)
            os.chdir(home)
            sys.argv = argv
            sys.path.remove(job["workdir"])
            for name in set(sys.modules) - modules:  # the script's own modules, fresh each time
                if (getattr(sys.modules[name], "__file__", None) or "").startswith(job["workdir"]):
                    del sys.modules[name]
        results.append(
            {
                "name": job["name"],
                "stdout": out.getvalue(),
                "error": error,
                "device_error": device_error,
                "forwards": dict(record["forwards"]),
                "off_device": list(record["off_device"]),
            }
        )
    return results


def serve(mode: str) -> None:
    """``python port_runner.py MODE --serve``: one process for many batches (a test's examples).

    Each line on stdin names ``JOBS.json OUT.json``; the batch runs as in a one-shot run
    (``run_jobs``: the mode is installed once, as it is for the scripts of one batch) and
    ``done`` answers on the process's original stdout. The scripts' own writes to file
    descriptor 1 go to stderr, so they never reach the answers.
    """
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    installed = False
    for line in sys.stdin:
        jobs_path, out_path = line.split()
        with open(jobs_path) as fh:
            todo = json.load(fh)
        results = run_jobs(mode, todo, install=not installed)
        installed = True
        with open(out_path, "w") as fh:
            json.dump(results, fh, indent=1)
        answers.write("done\n")
        answers.flush()


if __name__ == "__main__" and sys.argv[2:3] == ["--serve"]:
    serve(sys.argv[1])
elif __name__ == "__main__":
    run_mode, jobs_path, out_path = sys.argv[1:4]
    with open(jobs_path) as fh:
        todo = json.load(fh)
    with open(out_path, "w") as fh:
        json.dump(run_jobs(run_mode, todo), fh, indent=1)
