"""Code a test runner collects: where a CUDA-or-CPU device default is low value (TP109).

One standard, for every sample judged (benchmarks/RESULTS.md, "sample I"): a test's
device choice decides where the test runs, not where the program does; on MPS or XPU
the test still runs (on the CPU) and passes, so nothing that matters changes. Test code is

* a file in a folder named ``test`` or ``tests`` (any folder of the path as given), or a
  ``conftest.py``;
* a file named as pytest collects it (``test_*.py``, ``*_test.py``) that imports
  ``pytest`` or ``unittest``: its module-level set-up (``device = ...`` above the
  tests) decides where its tests run;
* a file in a folder named ``testing`` that imports ``pytest`` or ``unittest``: a
  project's test helpers (``captum/testing/helpers/``); a ``testing`` package that
  imports no test framework is a library's public API (``torch.testing``), not test code;
* a ``test*`` function, a ``Test*`` class or a fixture (``@pytest.fixture``,
  parametrized or not: a test's inputs) in a file that imports ``pytest`` or
  ``unittest``.

A program is not a test because of its name: an experiment driver named
``attack_defense_test.py`` with ``test_*`` functions that no test framework imports is a
program (its ``__main__`` runs them), and its device choice is where its work runs.

In test code CUDA may also be what is tested (:func:`cuda_is_the_subject`): a test
that runs only where CUDA is, or a helper named for it, uses CUDA on purpose, and
another device would change what it tests (TP101 leaves it).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Sequence

from torchport.check._context import Context
from torchport.check._patterns import lazy_pattern
from torchport.check.rules._test_words import (
    _SKIPS,
    SUBJECT_WORDS,
    _callee_tail,
    _marks,
    _mentions,
    _names,
    _skips,
)

__all__ = [
    "SUBJECT_WORDS",
    "accelerator_is_the_subject",
    "benchmark_code",
    "collected_by_a_test_runner",
    "cuda_is_the_subject",
    "cuda_quirk",
    "decides_where_a_test_runs",
    "leaves",
    "main_guard",
    "next_statement",
    "several_devices",
    "timing_program",
]

_TEST_FOLDERS = frozenset({"test", "tests"})
_FRAMEWORKS = frozenset({"pytest", "unittest"})
_TEST_MODULE = lazy_pattern(r"test_\w*\.py|\w+_test\.py")  # pytest's default `python_files`
_TEST_FILE = "test_code.file"  # Context.memo's key: the file's answer where it is one


def collected_by_a_test_runner(ctx: Context) -> bool:
    """Whether the node being checked is test code by the standard above."""
    whole = _test_file(ctx)
    if whole is not None:
        return whole
    return any(
        (
            isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (outer.name.startswith("test") or any(map(_fixture, outer.decorator_list)))
        )
        or (isinstance(outer, ast.ClassDef) and outer.name.startswith("Test"))
        for outer in ctx.ancestors
    )


def _test_file(ctx: Context) -> bool | None:
    """True: every node of the file is test code; False: none is (it imports no test
    framework); None: a node is where it sits (once per file: asked per node and rule)."""
    known = ctx.memo.get(_TEST_FILE, _TEST_FILE)
    if known is not _TEST_FILE:
        return known  # type: ignore[return-value]
    parts = ctx.path.replace("\\", "/").split("/")
    framework = _imports_a_framework(ctx)
    found: bool | None = None
    if parts[-1] == "conftest.py" or any(p in _TEST_FOLDERS for p in parts[:-1]):
        found = True
    elif framework and _TEST_MODULE.fullmatch(parts[-1]):  # (the pattern read only then)
        found = True  # a module pytest collects: its set-up at module level is its tests'
    elif "testing" in parts[:-1] and framework:
        found = True  # a project's test helpers (`captum/testing/`), not `torch.testing`'s API
    elif not framework:
        found = False  # a test function's name or a fixture counts only beside a framework
    ctx.memo[_TEST_FILE] = found
    return found


def _imports_a_framework(ctx: Context) -> bool:
    return any((target or "").partition(".")[0] in _FRAMEWORKS for _local, target in ctx.imported)


def _fixture(decorator: ast.expr) -> bool:
    """``@pytest.fixture``, ``@pytest.fixture(params=[...])``, ``@fixture``: a test's set-up."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    return _callee_tail(func) == "fixture"


def cuda_is_the_subject(node: ast.AST, ctx: Context) -> bool:
    """Whether test code is about CUDA itself, where ``node`` sits (see below)."""
    return accelerator_is_the_subject(node, ctx, "cuda")


def accelerator_is_the_subject(node: ast.AST, ctx: Context, accelerator: str) -> bool:
    """Whether test code is about ``accelerator`` itself (``"cuda"``, ``"xla"``, ...).

    A file named as a test (pytest's ``test_*.py``, ``*_test.py``) and for the accelerator
    or its hardware, collected by a test runner or a script run by hand (held-out sample AB:
    spatialconv's ``test_cuda_vs_cpu.py`` compares a CUDA run with a CPU one,
    upstageailab's ``test_basic_cuda.py`` hunts a CUDA crash; judged low (b)): its author
    names CUDA as what it tests. Test code (:func:`collected_by_a_test_runner`) in a module
    named for the accelerator or its hardware (tnt's ``test_timer_gpu.py``, BigVGAN's
    ``test_cuda_vs_torch_model.py``: every test there is about it), or inside a
    function or class

    * named for the accelerator or its hardware (``train_picklable_cuda_net``,
      ``TestCuda``, ``test_create_supervised_trainer_on_tpu``);
    * marked for it or skipped without it, for CUDA also by its GPU architecture
      (``@skipif(COMPUTE_CAPABILITY != 9)``, ``@sm80_or_better_only``, ``@rocm_only``;
      ``_test_words``), (``@pytest.mark.tpu``, ``@skipifnocuda``,
      ``@pytest.mark.skipif(not idist.has_xla_support, ...)``,
      ``@pytest.mark.skipif(torch.cuda.device_count() < 1, ...)``): a
      ``parametrize`` naming it beside other devices is not this;
    * decorated with a mock patch of its API (``@patch("torch.cuda.is_available",
      lambda: True)``, ``@mock.patch.object(torch.cuda, "synchronize")``): the test
      fakes the accelerator to test the code's path for it (texar's, sample O);
    * whose body, before the node, returns, skips or raises when the accelerator is
      missing (``if not torch.cuda.is_available(): return``) or asserts it is there
      (``assert torch.cuda.is_available()``, that assert included): the test runs
      only where it is;
    * naming two or more of its devices by index (:func:`several_devices`: a
      multi-GPU test, ``torch.device("cuda:0")`` beside ``torch.device("cuda:1")``,
      ``device_ids=[0, 1]``), or, for CUDA, in a module that starts an NCCL process
      group (``init_process_group("nccl")``: a multi-process GPU test, sample M);
    * for CUDA, a test of an object's own ``cuda()`` method: ``y = x.cuda()`` whose
      next statement asserts ``y`` is on CUDA (``assertEqual(y.device.type,
      "cuda")``, ``assert y.is_cuda``; pytorch3d's, sample M). ``y = x.to("cuda:0")``
      asserted equal to a device is not this: any accelerator's device tests ``to``.

    So is test code whose gate is one step away (:mod:`._cuda_gates`): a module-level
    ``pytestmark`` skipping without it, a unittest class whose ``setUp`` (or its base's,
    imported from the project too) skips without it, a test spawned once per CUDA device
    count, and a helper, worker or model class that only such tests name.

    Such a test uses the accelerator on purpose: another device changes what it
    tests. Words per accelerator: :data:`SUBJECT_WORDS` (another: its own name).
    """
    words = SUBJECT_WORDS.get(accelerator, (accelerator,))
    file = ctx.path.replace("\\", "/").rpartition("/")[2]
    # (each of the pattern's forms holds "test": the pattern compiled only for such a name)
    if "test" in file and _TEST_MODULE.fullmatch(file) and _names(file.removesuffix(".py"), words):
        return True  # a test module or script named for it (`test_basic_cuda.py`, sample AB)
    if not collected_by_a_test_runner(ctx):
        return False
    if _names(file.removesuffix(".py"), words):
        return True  # the module's name: `test_device_gpu.py` (tnt), sample O
    if accelerator == "cuda" and (_starts_nccl(ctx) or _tests_the_cuda_method(node, ctx)):
        return True
    line = getattr(node, "lineno", 0)
    for outer in ctx.ancestors:
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if _names(outer.name, words) or any(_marks(d, words) for d in outer.decorator_list):
            return True
        if isinstance(outer, ast.ClassDef):
            continue
        if several_devices(outer, accelerator, ctx):
            return True
        for stmt in outer.body:
            if getattr(stmt, "lineno", line) > line:
                break
            if isinstance(stmt, ast.Assert) and _mentions(stmt.test, words):
                return True  # (the assert itself too: the test's demand, not a program's)
            if stmt.lineno == line:
                break
            if isinstance(stmt, ast.If) and _mentions(stmt.test, words) and leaves(stmt.body):
                return True
    from torchport.check.rules._cuda_gates import gated_definitions  # on first use

    gated = gated_definitions(ctx, accelerator, words)  # a gate one step away
    return id(ctx.tree) in gated or any(
        (after := gated.get(id(outer))) is not None and (not after or after < line)
        for outer in ctx.ancestors
    )


def several_devices(
    function: ast.FunctionDef | ast.AsyncFunctionDef, accelerator: str, ctx: Context
) -> bool:
    """Whether ``function`` names two or more of the accelerator's devices by index.

    ``"cuda:0"`` and ``"cuda:1"`` (alone or in ``torch.device(...)``),
    ``torch.device("cuda", 1)``, and for CUDA ``device_ids=[0, 1]`` (DataParallel's):
    pytorch3d's EGL context per CUDA device, captum's sort of CUDA devices by index,
    a synchronized BatchNorm over two GPUs (samples K and M). One device, however
    written (``"cuda:0"`` throughout), is not this: that test runs on any one device.
    Memoized per function (a file's findings share it).
    """
    memo = ctx.memo.setdefault(f"several_devices:{accelerator}", {})
    assert isinstance(memo, dict)
    found = memo.get(id(function))
    if found is None:
        found = memo[id(function)] = len(_device_indices(function, accelerator)) > 1
    return bool(found)


def _device_indices(function: ast.AST, accelerator: str) -> set[int]:
    prefix, seen = f"{accelerator}:", set[int]()
    for node in ast.walk(function):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            index = node.value.removeprefix(prefix)
            if index != node.value and index.isdigit():
                seen.add(int(index))
        elif isinstance(node, ast.Call) and _callee_tail(node.func) == "device":
            kind, *rest = [*node.args, None]  # `torch.device("cuda", 1)`
            if isinstance(kind, ast.Constant) and kind.value == accelerator:
                seen.update(_ints(rest[:1]))
        if isinstance(node, ast.Call) and accelerator == "cuda":
            for kw in node.keywords:  # `DataParallel(m, device_ids=[0, 1])`
                if kw.arg == "device_ids" and isinstance(kw.value, (ast.List, ast.Tuple)):
                    seen.update(_ints(kw.value.elts))
    return seen


def _ints(exprs: Sequence[ast.expr | None]) -> list[int]:
    return [e.value for e in exprs if isinstance(e, ast.Constant) and type(e.value) is int]


def _starts_nccl(ctx: Context) -> bool:
    """A module calling something with the ``"nccl"`` backend: first argument or
    ``backend=`` (``dist.init_process_group("nccl", ...)``). Once per file."""
    found = ctx.memo.get("starts_nccl")
    if found is None:
        found = ctx.memo["starts_nccl"] = any(
            isinstance(n, ast.Call)
            and any(
                isinstance(v, ast.Constant)
                and isinstance(v.value, str)
                and v.value.lower() == "nccl"
                for v in [*n.args[:1], *(k.value for k in n.keywords if k.arg == "backend")]
            )
            for n in ast.walk(ctx.tree)
        )
    return bool(found)


def _tests_the_cuda_method(node: ast.AST, ctx: Context) -> bool:
    call, assign = node, ctx.parent
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
        return False
    if call.func.attr != "cuda" or not isinstance(assign, ast.Assign) or assign.value is not call:
        return False
    name = assign.targets[0]
    then = _next_statements(ctx).get(id(assign))
    return (
        isinstance(name, ast.Name)
        and isinstance(then, (ast.Expr, ast.Assert))
        and any(isinstance(n, ast.Name) and n.id == name.id for n in ast.walk(then))
        and any(
            (isinstance(n, ast.Constant) and n.value == "cuda")
            or (isinstance(n, ast.Attribute) and n.attr == "is_cuda")
            for n in ast.walk(then)
        )
    )


def next_statement(stmt: ast.AST, ctx: Context) -> ast.stmt | None:
    """The statement after ``stmt`` in its block (``body``, ``orelse``, ``finalbody``), if any."""
    return _next_statements(ctx).get(id(stmt))


def _next_statements(ctx: Context) -> dict[int, ast.stmt]:
    """Each statement's next one in its block, for the whole file: built once (linear)."""
    found = ctx.memo.get("next_statements")
    if not isinstance(found, dict):
        found = ctx.memo["next_statements"] = {
            id(first): then
            for node in ast.walk(ctx.tree)
            for field in _TIMED_BLOCKS
            if isinstance(block := getattr(node, field, None), list)
            for first, then in itertools.pairwise(block)
        }
    return found


def decides_where_a_test_runs(ctx: Context) -> bool:
    """Whether the node is in a skip's arguments (``skipif(...)``, ``skipUnless``) in test code.

    ``@pytest.mark.skipif(torch.cuda.device_count() < 1, ...)``: the query decides
    where a test runs (skipped elsewhere), not where a program does; by the standard
    above, low value (TP401 leaves it).
    """
    if not collected_by_a_test_runner(ctx):
        return False
    return any(
        isinstance(outer, ast.Call) and _callee_tail(outer.func) in _SKIPS
        for outer in ctx.ancestors
    )


_BENCH = lazy_pattern(r"bm_\w*")  # fvcore's `benchmark()` convention (pytorch3d's tests)


def _bm_name(name: str) -> bool:
    # the pattern is compiled only for a name that may match it (start-up)
    return name.startswith("bm_") and _BENCH.fullmatch(name) is not None


def benchmark_code(ctx: Context) -> bool:
    """Whether the node is benchmark code by its shape: where it runs is its choice.

    * a file named ``bm_*.py`` or code in a function named ``bm_*`` (fvcore's
      benchmark convention: ``bm_rasterize_points``);
    * in test code (:func:`collected_by_a_test_runner`), a timing closure: a function
      whose last statement returns a function defined directly in it
      (``def compute_packed_with_init(): ...; def compute_packed(): ...; return
      compute_packed``: the workload handed to a timer), both functions included;
    * a module that is a timing program (:func:`timing_program`: its structure).

    A benchmark measures one device on purpose (benchmarks/RESULTS.md, sample M: low
    value); TP101, TP102, TP109 and TP401 leave it. A folder or file named
    ``benchmark`` is not this: PARL keeps its training programs in ``benchmark/``,
    and a project's ``benchmark.py`` is often a program's timing mode (judged real).
    """
    if _bm_name(ctx.path.replace("\\", "/").rpartition("/")[2].removesuffix(".py")):
        return True
    functions = [f for f in ctx.ancestors if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if any(_bm_name(f.name) for f in functions):
        return True
    if any(map(_returns_a_closure, functions)) and collected_by_a_test_runner(ctx):
        return True
    found = ctx.memo.get("timing_program")
    if found is None:
        found = ctx.memo["timing_program"] = timing_program(ctx.tree)
    return bool(found)


# Clock reads (``time.perf_counter()``, ``timeit.default_timer()``, ``perf_counter()``
# after ``from time import perf_counter``); ``time()`` only as ``time.time()``.
_CLOCKS = frozenset(
    {"perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "default_timer"}
)


def timing_program(tree: ast.Module) -> bool:
    """Whether the module is a program that times repeated, synchronized work: a benchmark.

    By its structure, not its name: it runs as a program (``if __name__ ==
    "__main__":`` at module level) and, in one block, reads a clock right after a
    synchronization, repeats some work in a ``for ... in range(...)`` loop, and reads
    the clock right after a synchronization again (``torch.cuda.synchronize(); start =
    time.perf_counter(); for _ in range(iters): fn(); torch.cuda.synchronize();
    elapsed = time.perf_counter() - start``). Such a program measures one device on
    purpose, and its device queries and reports are its figures (benchmarks/RESULTS.md,
    samples M and N: low value). A program that times the work it does (an evaluation
    timing each batch of its data: ``for batch in loader:``, judged real) is not this,
    nor a training program in a ``benchmark/`` folder (PARL's), nor library code.
    """
    if not any(map(main_guard, tree.body)):
        return False
    # Blocks are statements' (and except handlers' and match cases'): only those are
    # walked, not the expressions, nine nodes in ten (a lambda's body is no block).
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        for field in _BLOCK_FIELDS:
            block = getattr(node, field, None)
            if block.__class__ is list:
                if field in _TIMED_BLOCKS and _times_repeated_work(block):
                    return True
                todo.extend(block)
    return False


_TIMED_BLOCKS = ("body", "orelse", "finalbody")
_BLOCK_FIELDS = (*_TIMED_BLOCKS, "handlers", "cases")  # every field holding a statement


def _times_repeated_work(block: list[ast.stmt]) -> bool:
    reads = [i for i in range(len(block) - 1) if _synced_clock(block[i], block[i + 1])]
    return any(
        isinstance(stmt, ast.For)
        and isinstance(stmt.iter, ast.Call)
        and isinstance(stmt.iter.func, ast.Name)
        and stmt.iter.func.id == "range"
        for before, after in itertools.pairwise(reads)
        for stmt in block[before + 2 : after]
    )


def main_guard(stmt: ast.stmt) -> bool:
    """``if __name__ == "__main__":``."""
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _synced_clock(first: ast.stmt, then: ast.stmt) -> bool:
    """``<a sync call>`` followed by a statement that reads a clock."""
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)):
        return False
    tail = _callee_tail(first.value.func) or ""
    if "sync" not in tail.lower() or "async" in tail.lower():
        return False
    return any(isinstance(n, ast.Call) and _clock(n.func) for n in ast.walk(then))


def _clock(func: ast.expr) -> bool:
    if isinstance(func, ast.Name):
        return func.id in _CLOCKS
    return isinstance(func, ast.Attribute) and (
        func.attr in _CLOCKS
        or (func.attr == "time" and isinstance(func.value, ast.Name) and func.value.id == "time")
    )


def _returns_a_closure(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    last = function.body[-1]
    if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)):
        return False
    name = last.value.id
    return any(
        isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name == name
        for stmt in function.body
    )


def leaves(body: list[ast.stmt]) -> bool:
    """A block that ends the test: ``return``, ``raise``, or a skip call."""
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    return isinstance(last, ast.Expr) and _skips(last.value)


def cuda_quirk(branch: ast.AST, ctx: Context) -> bool:
    """An ``if`` in test code whose arm does nothing but ``pass``, with an ``elif``/``else``.

    ``if resample == "nearest" and degrees.is_cuda: pass  # grid_sample returns NaN on
    CUDA`` ``elif ...: <check>`` (kornia's tests, sample M): the test exempts CUDA from a
    check because of a CUDA kernel's quirk. Another device does not share the quirk, so
    testing ``device.type != "cpu"`` instead would exempt it wrongly (TP103 leaves it).
    """
    return (
        isinstance(branch, ast.If)
        and bool(branch.orelse)
        and all(isinstance(s, ast.Pass) for s in branch.body)
        and collected_by_a_test_runner(ctx)
    )
