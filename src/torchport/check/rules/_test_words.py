"""The words and marks that say a test is about an accelerator (read by ``_test_code.py``
and ``_cuda_gates.py``): a name naming its hardware, a marker or skip naming it, a mock
patch of its API, a block that leaves the test without it."""

from __future__ import annotations

import ast

from torchport.check._patterns import lazy_pattern

__all__ = ["SUBJECT_WORDS"]

# The words that name an accelerator, or the hardware it drives, in a test's name, a
# marker (``@pytest.mark.tpu``) or a skip condition (``skipif(not has_xla_support)``).
SUBJECT_WORDS: dict[str, tuple[str, ...]] = {
    "cuda": ("cuda", "gpu", "nccl"),
    "xla": ("xla", "tpu"),
    "mps": ("mps",),
    "xpu": ("xpu",),
    "npu": ("npu",),
    "hpu": ("hpu", "habana"),
    "mtia": ("mtia",),
}
# CUDA's hardware named by its architecture (sample Q: xformers, flash-attention gate their
# kernel tests on it): ``compute_capability``, ``IS_SM100``, ``sm80_or_better_only``,
# ``torch.version.hip`` and ``rocm_only`` (ROCm runs as "cuda"). Whole words only: "ship".
_CUDA_ARCH = lazy_pattern(r"capability|(?:^|_)(?:sm_?\d{2,3}[a-z]?|rocm|hip)(?:_|$)")
_SKIPS = frozenset({"skip", "skipif", "skipIf", "skipUnless", "SkipTest", "importorskip"})


def _names(name: str, words: tuple[str, ...]) -> bool:
    lowered = name.lower()
    if any(word in lowered for word in words):
        return True
    return "cuda" in words and _CUDA_ARCH.search(lowered) is not None


def _callee_tail(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None


def _mentions(expr: ast.AST, words: tuple[str, ...]) -> bool:
    """Whether ``expr`` names the accelerator (``torch.cuda.is_available()``, ``has_xla``)."""
    return any(
        (isinstance(n, ast.Attribute) and _names(n.attr, words))
        or (isinstance(n, ast.Name) and _names(n.id, words))
        for n in ast.walk(expr)
    )


_GATES = ("skip", "require", "only")


def _marks(decorator: ast.expr, words: tuple[str, ...]) -> bool:
    """``@pytest.mark.tpu``, ``@skipif(<names it>)``, ``@skipUnless(<names it>)``, and a
    project's own gate named for it (``@skipifnocuda``, ``@requires_gpu``, ``@cuda_only``)."""
    func = decorator.func if isinstance(decorator, ast.Call) else decorator
    tail = _callee_tail(func)
    if tail is None:
        return False
    if tail in _SKIPS and isinstance(decorator, ast.Call):
        return any(_mentions(arg, words) for arg in decorator.args[:1])
    if _patch(func) and isinstance(decorator, ast.Call) and decorator.args:
        target = decorator.args[0]  # `patch("torch.cuda.is_available")`, `patch.object(torch.cuda,`
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            return any(_names(part, words) for part in target.value.split("."))
        return _mentions(target, words)
    if _names(tail, words) and _names(tail, _GATES):
        return True
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "mark"
        and _names(tail, words)
    )


def _patch(func: ast.expr) -> bool:
    """``patch``, ``mock.patch``, ``patch.object``, ``mock.patch.object``: a mock patch."""
    if _callee_tail(func) == "object" and isinstance(func, ast.Attribute):
        func = func.value
    return _callee_tail(func) == "patch"


def _skips(expr: ast.AST) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr in _SKIPS)
        or (isinstance(n, ast.Name) and n.id in _SKIPS)
        for n in ast.walk(expr)
    )
