"""Python children forked from a server that has already imported torch (``python -c`` without
the start-up).

Most of the suite's children (the simulated accelerator's checks, ported programs run against
their originals) begin with ``import torch``: about 1.5 s of CPU on the 2-core machine, paid
again by every child. Here one server per test process imports torch,
``torchport.testing`` and what the simulated accelerator's install and first op import once
(about 1 s more of CPU a child), then forks a child per request; the child runs the source as
``python -c`` would (a fresh ``__main__``, ``sys.argv``, the working directory, its own
stdout and stderr) and ends as the interpreter's shutdown does (waits for its threads, runs its
``atexit`` handlers, flushes), less tearing down every module, which with torch loaded would
copy each of the server's pages into the fork. Nothing has run a torch op in the server, so no
thread pool is copied into a fork.

A child's environment is the request's. What a fork cannot give it is another interpreter
start: a request whose environment differs from the server's in anything but pytest's
``PYTEST_CURRENT_TEST`` (another ``PYTHONPATH``, ``OMP_NUM_THREADS``, a ``TORCHPORT_*``
variable torch or torchport read on import) gets a server started for it, in place of the
last one. Without ``fork`` each child is a fresh interpreter.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

_SERVER = r"""
import atexit, json, os, sys, threading, types
import torch  # noqa: F401  (the point of the server)
import torchport.testing  # noqa: F401
# What installing the simulated accelerator and its first op import, paid once here, not in
# each child that installs it (~1 s of CPU each): torchport's runtime, and what torch imports
# on the first op on `sim` (torch.distributed.tensor, sympy). Not the install itself, nor the
# modules that name the device (the install imports those).
import torchport.diagnose
import torchport.place
import torchport.sim
try:
    import torch.distributed.tensor
except ImportError:  # a torch built without distributed: the child imports what it needs
    pass

print("ready", flush=True)
for line in sys.stdin:
    request = json.loads(line)
    pid = os.fork()
    if pid:
        print(pid, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)
        continue
    # The child: become `python -c SOURCE ARGS...`.
    null = os.open(request["stdin"] or os.devnull, os.O_RDONLY)
    out = os.open(request["stdout"], os.O_WRONLY | os.O_TRUNC)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_TRUNC)
    for fd, target in ((null, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, closefd=False)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = ["-c", *request["argv"]]
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    code = 0
    try:
        exec(compile(request["source"], "<string>", "exec"), main.__dict__)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
        if not isinstance(stop.code, int | None):
            print(stop.code, file=sys.stderr)
    except BaseException as exc:  # as the interpreter reports it, without this server's frame
        exc.__traceback__ = exc.__traceback__.tb_next
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = 1
    # The interpreter's shutdown, less tearing down the modules: that writes to every page
    # the server's imports made, a copy of each in this fork (seconds, with torch loaded).
    threading._shutdown()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
"""

_lock = threading.Lock()
_server: _Server | None = None
_refused = False  # the server could not start (no torch: the checker's legs): never again


def run_python(
    source: str,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    input: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """What ``subprocess.run([sys.executable, "-c", source, *args], capture_output=True,
    text=True, env=env, timeout=timeout, input=input)`` returns, from a child forked off the
    preloaded server where ``env`` (default: this process's) is the server's own."""
    env = dict(os.environ if env is None else env)
    command = [sys.executable, "-c", source, *args]
    if not hasattr(os, "fork"):
        return _fresh(command, env, timeout, input)
    with _lock:
        server = _started(env)
        if server is None:
            return _fresh(command, env, timeout, input)
        return _forked(server, source, args, env, timeout, input)


def _fresh(
    command: list[str], env: dict[str, str], timeout: float | None, input: str | None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=timeout, input=input,
        check=False,
    )  # fmt: skip


# What pytest sets for each test phase; nothing reads it at start-up. A child is given it
# (its whole environment is the request's), but it does not make a server of its own.
_PER_TEST = frozenset({"PYTEST_CURRENT_TEST"})


def _start_up(env: dict[str, str]) -> dict[str, str]:
    """``env`` less what only a running program reads (:data:`_PER_TEST`)."""
    return {k: v for k, v in env.items() if k not in _PER_TEST}


def _started(env: dict[str, str]) -> _Server | None:
    """The server for ``env``: the running one, or one started now (in place of a server for
    another environment: no more starts than fresh children would make); None where none
    can start."""
    global _server, _refused
    if _server is not None and _server.process.poll() is None:
        if _start_up(env) == _start_up(_server.env):
            return _server
        _server.stop()
    if _refused:
        return None
    _server = _Server(env)
    if _server.line() != "ready":
        _server.stop()
        _server, _refused = None, True
    return _server


class _Server:
    """The server process and its replies, read from the pipe's descriptor without a buffer
    that could hold a reply ``select`` no longer sees."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # each child writes its own; the server says nothing
            env=env,
        )
        assert self.process.stdout is not None
        self._fd = self.process.stdout.fileno()
        self._pending = b""

    def line(self, timeout: float | None = None) -> str | None:
        """The server's next line; None when none came within ``timeout`` seconds."""
        with selectors.DefaultSelector() as selector:
            selector.register(self._fd, selectors.EVENT_READ)
            while b"\n" not in self._pending:
                if not selector.select(timeout):
                    return None
                chunk = os.read(self._fd, 4096)
                if not chunk:
                    return ""
                self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return line.decode()

    def send(self, request: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request).encode() + b"\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        for pipe in (self.process.stdin, self.process.stdout):
            assert pipe is not None
            pipe.close()


def _forked(
    server: _Server,
    source: str,
    args: tuple[str, ...],
    env: dict[str, str],
    timeout: float | None,
    input: str | None,
) -> subprocess.CompletedProcess[str]:
    global _server
    command = [sys.executable, "-c", source, *args]
    with tempfile.TemporaryDirectory() as folder:
        out, err = Path(folder, "out"), Path(folder, "err")
        out.touch()
        err.touch()
        stdin = None
        if input is not None:  # the child reads it as its stdin (text mode: UTF-8)
            stdin = Path(folder, "in")
            stdin.write_text(input, encoding="utf-8")
        try:
            server.send(
                {"source": source, "argv": list(args), "cwd": os.getcwd(), "env": env,
                 "stdout": str(out), "stderr": str(err), "stdin": stdin and str(stdin)}
            )  # fmt: skip
            pid = int(server.line() or "-1")
            if pid <= 0:
                raise RuntimeError("the preloaded server stopped")
            code = server.line(timeout)
            if code is None:  # past the timeout: the child is killed, its code read
                os.kill(pid, signal.SIGKILL)
                server.line()
        except BaseException:  # a test's own timeout, a dead server: never reuse it midway
            server.stop()
            _server = None
            raise
        stdout = out.read_text(encoding="utf-8", errors="replace")
        stderr = err.read_text(encoding="utf-8", errors="replace")
    if code is None:
        raise subprocess.TimeoutExpired(command, timeout or 0, stdout, stderr)
    return subprocess.CompletedProcess(command, int(code), stdout, stderr)


@atexit.register
def _stop() -> None:
    if _server is not None and _server.process.poll() is None:
        assert _server.process.stdin is not None
        _server.process.stdin.close()
        _server.process.wait(timeout=30)
