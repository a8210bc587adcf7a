"""Shared test configuration: hypothesis profiles sized for a 2-core CI machine, the
one fake accelerator (``fake_accelerator``) installed at the hardware floor, and the
watchdog that ends a run hung with the GIL held."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

try:
    import torch

    from torchport.hardware import Backend, install
except ModuleNotFoundError:  # the checker alone, without torch (.ci/run's Python 3.12/3.13 legs)
    Backend = object  # type: ignore[misc,assignment]
    TORCH_MISSING = True
else:
    TORCH_MISSING = False

# One thread per torch op, here and in every child a test starts (unless OMP_NUM_THREADS says
# otherwise): the run already keeps every core busy (xdist, one worker per core), and an op's
# extra threads then spin waiting on each other. That cost is large: a tiny LSTM script took
# 1.5 s of CPU with 2 threads, 0.03 s with 1, on the loaded 2-core machine. The ops the tests
# run are small (below torch's grain for splitting an op), so they take the same code path.
if "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"
    if not TORCH_MISSING:
        torch.set_num_threads(1)

# torch older than the simulated accelerator's API (2.6, the floor): tests that run on it skip.
NO_SIMULATOR = TORCH_MISSING or not __import__("torchport.sim", fromlist=["supported"]).supported()
_SIMULATOR_REFUSED = "lacks the Python device-backend API the simulated accelerator is built on"
# What a child says when it fails for want of torch: Python's own error, or torchport's
# (a runtime name asked for without the `torch` extra names the packages it needs).
_WANTS_TORCH = ("No module named 'torch'", "needs the Python packages 'torch'")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Without torch, a test module that imports it is skipped, saying so, not an error."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if TORCH_MISSING and report.failed and "No module named 'torch'" in str(report.longrepr):
        report.outcome = "skipped"
        report.longrepr = (str(collector.path), 0, "Skipped: needs torch, not installed here")
        report.result = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Without torch, a checker test that runs the code it rewrote (here or in a child
    process) and fails only for want of torch is skipped, saying so; so is a test that
    fails only because this torch is too old for the simulated accelerator (the floor's
    legs of .ci/run), which says so in its TorchportError."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    said = f"{report.longrepr}\n{report.capstdout}\n{report.capstderr}"
    if TORCH_MISSING and report.failed and any(map(said.__contains__, _WANTS_TORCH)):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), 0, "Skipped: runs code that needs torch")
    elif NO_SIMULATOR and report.failed and _SIMULATOR_REFUSED in said:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), 0, "Skipped: the simulated accelerator needs torch 2.7+")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``needs_simulator`` skip up front where the simulator cannot install."""
    if not NO_SIMULATOR:
        return
    skip = pytest.mark.skip(reason="the simulated accelerator needs torch 2.7+")
    for item in items:
        if item.get_closest_marker("needs_simulator") is not None:
            item.add_marker(skip)


# One profile for every default run, CI's included: the README's test command is held to 10
# minutes on 2 cores, and CI (which sets CI=true) runs exactly that command, so the depth may not
# depend on who runs it. A loaded machine draws slowly: the too_slow health check would fail a
# test for the machine's load, not for the code. HYPOTHESIS_PROFILE=ci asks for the deeper run.
# Without torch a test that runs what it ported fails for want of torch, and the hook above
# makes that a skip, but only once the test is done: hypothesis would first shrink the
# failing example and explain it under its tracer, porting programs at every step (the
# checker-alone leg stalled past pytest-timeout's 300 s in test_port_creation_forms and
# test_stdlib_numbers so, wherever the example database did not yet hold the failure).
# There a failure ends at its first failing example, shown as drawn.
_EVERY_PROFILE: dict[str, Any] = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
if TORCH_MISSING:
    _EVERY_PROFILE["phases"] = (Phase.explicit, Phase.reuse, Phase.generate)
settings.register_profile("dev", max_examples=25, **_EVERY_PROFILE)
settings.register_profile("ci", max_examples=60, **_EVERY_PROFILE)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


# --- one way to fake an accelerator: a Backend at the hardware floor -------------------

GIB = 1024**3


class FakeStream:
    """Stands in for a stream: records the events it was told to wait on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.waited: list[Any] = []

    def wait_event(self, event: Any) -> None:
        self.waited.append(event)


class FakeEvent:
    """Stands in for an event: remembers the stream it was recorded on."""

    def __init__(self) -> None:
        self.recorded_on: FakeStream | None = None

    def record(self, stream: FakeStream) -> None:
        self.recorded_on = stream

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass


class FakeBackend(Backend):
    """An accelerator of type ``kind`` with one device per entry of ``free``.

    Answers the floor's questions (type, count, names, memory, current index);
    records synchronizations, streams made, stream switches, events and
    ``record_stream`` calls instead of making them. Copies are real torch copies,
    so code under test uses the meta device as its target; what needs a real
    accelerator is tested under ``@pytest.mark.gpu``.
    """

    def __init__(self, free: list[int | None], kind: str | None = "cuda", current: int = 0) -> None:
        self.free = free
        self.kind = kind
        self.current = current
        self.synchronized: list[torch.device] = []
        self.memory_reads = 0
        self.streams: list[FakeStream] = []
        self.consumer = FakeStream("consumer")
        self.active: list[FakeStream] = []
        self.recorded: list[tuple[int, FakeStream]] = []

    def accelerator(self) -> str | None:
        return self.kind

    def count(self, kind: str) -> int:
        return len(self.free) if kind == self.kind else 0

    def current_index(self, kind: str) -> int:
        return self.current

    def built(self, kind: str) -> bool:
        return kind == self.kind

    def available(self, kind: str) -> bool:
        return kind == self.kind

    def properties(self, kind: str, index: int) -> tuple[str, str, int] | None:
        return (self.name(kind, index), "9.0" if kind == "cuda" else "", 80 * GIB)

    def arch_list(self) -> tuple[str, ...]:
        return ("sm_90",) if self.kind == "cuda" else ()

    def name(self, kind: str, index: int) -> str:
        return "NVIDIA H100" if kind == "cuda" else f"Fake {kind.upper()}"

    def memory(
        self, kind: str, index: int, *, allow_context: bool
    ) -> tuple[int | None, int | None]:
        assert kind == self.kind
        self.memory_reads += 1
        value = self.free[index]
        return (value, 80 * GIB) if value is not None else (None, None)

    def synchronize(self, device: torch.device, *, stream_only: bool) -> None:
        self.synchronized.append(device)

    def new_stream(self, device: torch.device) -> Any:
        self.streams.append(FakeStream("side"))
        return self.streams[-1]

    def current_stream(self, device: torch.device) -> Any:
        return self.active[-1] if self.active else self.consumer

    def new_event(self, *, timing: bool) -> Any:
        return FakeEvent()

    @contextlib.contextmanager
    def use_stream(self, stream: Any) -> Iterator[None]:  # type: ignore[override]
        self.active.append(stream)
        try:
            yield
        finally:
            self.active.pop()

    def record_stream(self, tensor: torch.Tensor, stream: Any) -> None:
        self.recorded.append((id(tensor), stream))


@pytest.fixture
def fake_accelerator() -> Iterator[Callable[..., FakeBackend]]:
    """Install a :class:`FakeBackend`: ``fake_accelerator([free bytes per device], kind=...)``.

    The one way tests stand in for an accelerator: at ``torchport.hardware``.
    """
    with contextlib.ExitStack() as stack:

        def install_fake(
            free: list[int | None], kind: str = "cuda", current: int = 0
        ) -> FakeBackend:
            stack.close()
            return stack.enter_context(install(FakeBackend(free, kind, current)))

        yield install_fake


@pytest.fixture
def no_accelerator() -> Iterator[FakeBackend]:
    """Install a backend that reports no accelerator, as a CPU-only machine's torch does.

    For a test whose premise is "no accelerator here": it then holds on a machine with a
    GPU too (issue 36: such tests failed on the lent H200). A test may still call
    ``fake_accelerator`` afterwards to put one in.
    """
    backend = FakeBackend([], kind=None)
    with install(backend):
        yield backend


@pytest.fixture
def child_pytest_env() -> dict[str, str]:
    """This process's environment for a fresh ``python -m pytest`` a test starts.

    Without pytest-xdist's ``PYTEST_XDIST_*`` and ``PYTEST_CURRENT_TEST``: a child that
    inherits ``PYTEST_XDIST_WORKER`` believes it is a worker, and pytest-benchmark (installed
    on the lent GPU machine) then warns at configure time, which our ``filterwarnings =
    error`` turns into an INTERNALERROR (issue 36, the H200's suite).
    """
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PYTEST_XDIST") and key != "PYTEST_CURRENT_TEST"
    }


@pytest.fixture
def process_pools(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The worker count of each process pool a test's code starts, in order.

    The checker imports the pool where it needs one (start-up), so the class is swapped
    at its source, ``concurrent.futures``; the pools still run.
    """
    import concurrent.futures

    started: list[int] = []

    class CountingPool(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, max_workers: int, **kwargs: Any) -> None:
            started.append(max_workers)
            super().__init__(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", CountingPool)
    return started


# --- no test can hang the run ------------------------------------------------------------
# pytest-timeout (pyproject: timeout, timeout_method = "signal") fails a test that runs past
# its limit, with every thread's stack, and the run goes on. Its SIGALRM handler is Python
# and needs the GIL: a test hung in C code that holds it (a join on a thread that needs the
# GIL, as the gloo deadlock of issue 30 did) never lets it run. faulthandler's watchdog is a
# C thread: HANG_GRACE seconds later it dumps every thread's stack to the terminal and ends
# the process, so CI fails with the stack instead of hanging until its own limit.
HANG_GRACE = float(os.environ.get("TORCHPORT_TEST_HANG_GRACE", "60"))
_terminal: list[int] = []


def pytest_configure(config: pytest.Config) -> None:
    # Capture is off here: the duplicate is the real stderr, which outlives fd capture.
    _terminal.append(os.dup(sys.stderr.fileno()))


def pytest_unconfigure(config: pytest.Config) -> None:
    while _terminal:
        os.close(_terminal.pop())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    marker = item.get_closest_marker("timeout")
    given = item.config.getoption("timeout", None)  # `--timeout N` (0: none), as pytest-timeout
    try:
        setting = item.config.getini("timeout") if given is None else given
        limit = float(marker.args[0] if marker and marker.args else setting)
    except (ValueError, TypeError):  # pytest-timeout absent: no limit to back up
        limit = 0.0
    if limit > 0 and _terminal:
        faulthandler.dump_traceback_later(limit + HANG_GRACE, exit=True, file=_terminal[0])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


_SIM_FOUND = False


def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Fail the test that installs the simulated accelerator in the suite's own process.

    Installing it changes a process for good (torch reports an accelerator to every later
    test there: ``pick_device`` picks it, device lists name it), so tests run it in a
    child (``tests/sim/isolated.run_isolated``, or a pytest child with
    ``TORCHPORT_TEST_SIM_PROCESS=1``, where this check is off). Said once, at the test
    that did it.
    """
    global _SIM_FOUND
    install = sys.modules.get("torchport.sim._install")
    if _SIM_FOUND or os.environ.get("TORCHPORT_TEST_SIM_PROCESS") or install is None:
        return
    if not install.installed():
        return
    _SIM_FOUND = True
    pytest.fail(
        f"{item.nodeid} installed the simulated accelerator in the test process, which "
        "changes it for every later test: run it in a child (tests/sim/isolated.py)",
        pytrace=False,
    )


# --- a failure's traceback as it happens ---------------------------------------------------
# A run cut at its time limit (the GPU proof's suite, benchmarks/gpu_proof.sh) never reaches
# pytest's summary, so a failure there lost its traceback (issue 36: `test_real_gpu_facts`,
# twice). With TORCHPORT_TEST_FAILURES naming a file, each failed phase's report is appended
# to it the moment it comes in; under pytest-xdist only the controller writes.
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = os.environ.get("TORCHPORT_TEST_FAILURES")
    if not path or not report.failed or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")
