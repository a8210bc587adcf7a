"""A test class that runs only once a CUDA-only import succeeded needs CUDA anyway.

Sample U's vendored apex ``L0`` tests (TP104 judged low (a)(b), 3 rows): ``try: import amp_C
...; disabled = False`` / ``except ImportError: ...; disabled = True``, then
``class TestMultiTensorAxpby(unittest.TestCase)`` whose one test is ``@unittest.skipIf(
disabled, "amp_C is unavailable")``; ``setUp`` and the helper the test calls make
``torch.cuda.IntTensor``/``FloatTensor`` buffers for the kernel. They run only where amp_C
imported, so a default run leaves the rules naming CUDA out of them
(``rules/_import_gates.py``).

Two oracles, written apart from the code. Test modules are built for every combination of
the gate's form, the import, how the tests are skipped, which method holds the CUDA line, and
what else the module holds (a subclass with its own test, a later rebinding), then:

* run: the module is executed with the drawn package missing (an ``__import__`` raising
  ``ModuleNotFoundError`` for it) and its tests run by unittest's loader and runner; where the
  method holding the CUDA line ran, the code runs without the package, and a default run must
  report the line (no narrowing where it may run without it);
* by hand: :data:`GATES`, :data:`SKIPS`, :data:`METHODS` and :data:`EXTRA` mark which drawn
  parts the narrowing claims; a default run leaves the line exactly when every part is so
  marked and the package is CUDA-only.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import itertools
import types
import unittest
from collections.abc import Iterator

import pytest

from tests.check.rules.default_probes import on_by_default
from torchport.check._engine import check_text, ruleset_for


@pytest.fixture(autouse=True, scope="module")
def _probes_on_by_default() -> Iterator[None]:
    # the probes as on by default everywhere: what is left out must not hang on today's set
    with on_by_default("TP104"):
        yield


# The gate: the try's body line, the except arm's line, the decorator; whether it is one
GATES = {
    "skipIf": ("disabled = False", "disabled = True", "@unittest.skipIf(disabled, 'no')", True),
    "skipUnless": ("ok = True", "ok = False", "@unittest.skipUnless(ok, 'no')", True),
    "inverted": ("disabled = True", "disabled = False", "@unittest.skipIf(disabled, 'no')", False),
    "arm unset": ("disabled = False", "pass", "@unittest.skipIf(disabled, 'no')", False),
    "arm twice": (
        "disabled = False",
        "disabled = True\n    disabled = False",
        "@unittest.skipIf(disabled, 'no')",
        False,
    ),
}
IMPORTS = {"import amp_C": ("amp_C", True), "import fused_ops": ("fused_ops", False)}
# How the tests are skipped: every test, the class, one of two tests only
SKIPS = {"every test": True, "class": True, "one test": False}
# Where the CUDA line stands, and whether it runs only with a test (plain instance methods;
# not unittest's `setUpClass`, run before a class's tests however they are skipped, nor its
# `run`, which decides the skip, nor a method whose decorator calls it when the class is made)
METHODS = {
    "setUp": True,
    "helper": True,
    "test_one": True,
    "setUpClass": False,
    "run": False,
    "called at once": False,
}
# What else the module holds: nothing, a subclass with a test of its own, a later rebinding
EXTRA = {"none": True, "subclass": False, "rebound": False}
CUDA_LINE = "self.buf = torch.cuda.IntTensor(1)"  # TP104, probed as on by default in test code


def program(gate: str, imported: str, skip: str, method: str, extra: str) -> str:
    body, arm, decorator, _ = GATES[gate]
    line = CUDA_LINE if method != "setUpClass" else CUDA_LINE.replace("self.", "cls.")

    def method_lines(name: str, decorated: bool, calls: str = "") -> list[str]:
        head = ["    @classmethod"] if name == "setUpClass" else []
        head += ["    @call_at_once"] if name == "called at once" else []
        head += [f"    {decorator}"] if decorated else []
        own = "cls" if name == "setUpClass" else "self"
        arguments = f"{own}, result=None" if name == "run" else own
        defined = "early" if name == "called at once" else name
        out = [*head, f"    def {defined}({arguments}):", f"        RAN.append({name!r})"]
        if name == method:
            out.append("        " + line)
        if calls:
            out.append(f"        self.{calls}()")
        if name == "run":
            out.append("        return super().run(result)")
        return [*out, ""]

    lines = ["import unittest", "", "import torch", "", "try:", f"    {imported}", f"    {body}"]
    if method == "called at once":
        lines[4:4] = ["", "def call_at_once(f):", "    f(None)", "    return f", ""]
    lines += ["except ImportError:", f"    {arm}", ""]
    if extra == "rebound":
        lines += ["disabled = ok = bool(len(__name__) % 1)", ""]
    lines += ["", *([decorator] if skip == "class" else []), "class TestKernel(unittest.TestCase):"]
    if method in ("setUpClass", "run", "called at once"):
        lines += method_lines(method, False)
    lines += method_lines("setUp", False)
    lines += method_lines("helper", False)
    lines += method_lines("test_one", skip in ("every test", "one test"), calls="helper")
    lines += method_lines("test_two", skip == "every test")
    if extra == "subclass":
        lines += ["", "class TestMore(TestKernel):", "    def test_more(self):"]
        lines += ["        self.helper()", ""]
    return "\n".join(lines) + "\n"


def _ran(source: str, missing: str, method: str) -> bool:
    """Whether ``method`` ran when the module's tests ran with ``missing`` not installed."""
    real = builtins.__import__

    def guarded(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.partition(".")[0] == missing:
            raise ModuleNotFoundError(f"No module named {name!r}")
        if name == "torch":  # only imported (its one use is replaced below): a stand-in, so
            return types.ModuleType("torch")  # the checker's own leg, without torch, runs it too
        return real(name, *args, **kwargs)

    module = types.ModuleType("drawn_tests")
    module.__dict__["__builtins__"] = {**vars(builtins), "__import__": guarded}
    module.__dict__["RAN"] = ran = []
    text = source.replace(CUDA_LINE, "pass").replace(CUDA_LINE.replace("self.", "cls."), "pass")
    with contextlib.suppress(Exception):
        exec(compile(text, "<drawn>", "exec"), module.__dict__)
        suite = unittest.TestLoader().loadTestsFromModule(module)
        unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    return method in ran


def _reported(source: str) -> bool:
    """Whether a default run reports the CUDA line (TP104)."""
    at = 1 + next(i for i, text in enumerate(source.splitlines()) if "torch.cuda.IntTensor" in text)
    found = check_text(source, "test_kernels.py", ruleset_for(None, None)).findings
    return any(f.code == "TP104" and f.line == at for f in found)


def test_a_test_class_gated_by_a_cuda_only_import() -> None:
    """Every drawn combination (the tables are small: 540 programs, each checked and run):
    a sample of them let mutants of the narrowing through (each fails on 4 to 30 of them)."""
    for parts in itertools.product(*(sorted(t) for t in (GATES, IMPORTS, SKIPS, METHODS, EXTRA))):
        gate, imported, skip, method, extra = parts
        source = program(gate, imported, skip, method, extra)
        package, cuda_only = IMPORTS[imported]
        reported = _reported(source)
        if _ran(source, package, method):
            assert reported, source  # it runs without the package: no narrowing
        claimed = GATES[gate][3] and SKIPS[skip] and METHODS[method] and EXTRA[extra]
        assert reported is not (cuda_only and claimed), source
        named = check_text(source, "test_kernels.py", ruleset_for(["TP104"], None)).findings
        assert [f.code for f in named] == ["TP104"], source  # named, reported all the same


def test_the_oracle_sees_the_gated_case_skipped() -> None:
    """The run oracle itself: the apex shape never runs its ``setUp`` without the package, and
    runs it with an ungated test beside."""
    gated = program("skipIf", "import amp_C", "every test", "setUp", "none")
    assert not _ran(gated, "amp_C", "setUp")
    assert _ran(program("skipIf", "import amp_C", "one test", "setUp", "none"), "amp_C", "setUp")
