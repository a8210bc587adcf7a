"""TP109 leaves the CUDA-or-CPU choices that decide nothing (``rules/_idle_choices.py``, and
CUDA's RNG state in ``rules/_cuda_choice.py``): issue 34, branch k34.

Three classes, each generated with its near misses, which stay reported:

* a branch whose CUDA is only saving or restoring CUDA's RNG state (OLMo's checkpoint,
  ``"cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() else None``): no
  device is chosen; one placing call beside it (``x.cuda()``, ``set_device``, a
  ``synchronize``) makes it a choice again;
* a choice bound to a name the very next statement binds again without reading it;
* a choice in a build script (``setup`` imported from setuptools or distutils, and
  ``torch.utils.cpp_extension``); one of the two imports alone is not one.

Each oracle reads the generated parts (labels, import lines), never the checker.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

RULES = ruleset_for(["TP109"], None)


def _reported(source: str) -> bool:
    return bool(check_text(source, "pkg/train.py", RULES).findings)


# (statement, places something on CUDA)
BRANCH = (
    ("gpu_state = torch.cuda.get_rng_state()", False),
    ("torch.cuda.set_rng_state(state)", False),
    ("states = torch.cuda.get_rng_state_all()", False),
    ("torch.cuda.set_rng_state_all(states)", False),
    ("torch.cuda.seed_all()", False),
    ("seed = torch.cuda.initial_seed()", False),
    ("x = x.cuda()", True),
    ("torch.cuda.set_device(0)", True),
    ('model.to("cuda")', True),
    ("torch.cuda.synchronize()", False),  # a timer's wait: samples Y and Z, judged low
    ("s = torch.cuda.Stream()", True),
)


@given(st.lists(st.sampled_from(BRANCH), min_size=1, max_size=3), st.booleans())
def test_a_branch_that_only_keeps_cudas_rng_state_chooses_no_device(
    body: list[tuple[str, bool]], in_function: bool
) -> None:
    lines = ["if torch.cuda.is_available():", *(f"    {stmt}" for stmt, _ in body)]
    if in_function:
        lines = ["def keep(state, x, model):", *(f"    {line}" for line in lines)]
    source = "\n".join(["import torch", "", *lines]) + "\n"
    assert _reported(source) == any(places for _, places in body), source


@given(st.sampled_from(["get_rng_state", "initial_seed", "current_device"]))
def test_an_rng_state_kept_in_a_conditional_expression(call: str) -> None:
    value = f"torch.cuda.{call}() if torch.cuda.is_available() else None"
    source = f'import torch\n\nstate = {{"cuda": {value}}}\n'
    # `current_device()` picks a device: the choice stays reported
    assert _reported(source) == (call == "current_device"), source


CHOICES = (
    'torch.device("cuda" if torch.cuda.is_available() else "cpu")',
    '"cuda" if torch.cuda.is_available() else "cpu"',
)
# (the statement after the choice, `{n}` the choice's name; whether it binds the name unread)
FOLLOWING = (
    ('{n} = torch.device("cpu")', True),
    ('{n} = "cpu"', True),
    ("{n} = pick(args)", True),
    ('{n}: torch.device = torch.device("cpu")', True),
    ('{n} = {n} if args.gpu else "cpu"', False),
    ("{n} = torch.device({n})", False),
    ('other = torch.device("cpu")', False),
    ("print({n})", False),
    ('{n} += ""', False),
    ("model.to({n})", False),
    ("", False),
)


@given(
    choice=st.sampled_from(CHOICES),
    following=st.sampled_from(FOLLOWING),
    name=st.sampled_from(["device", "my_device", "dev"]),
    in_function=st.booleans(),
)
def test_a_choice_bound_over_unread_at_once_decides_nothing(
    choice: str, following: tuple[str, bool], name: str, in_function: bool
) -> None:
    after, overwritten = following
    lines = [f"{name} = {choice}", *([after.format(n=name)] if after else []), "run(model)"]
    if in_function:
        lines = ["def main(args, model):", *(f"    {line}" for line in lines)]
    source = "\n".join(["import torch", "", *lines]) + "\n"
    # in a function, a choice whose only read is `print(name)` is only shown as text
    # (test_cuda_or_cpu_device_choice_shown.py); at a module's top another module may read it
    shown_only = in_function and after == "print({n})"
    # in a function, a choice no statement reads decides nothing either
    # (test_cuda_or_cpu_device_choice_never_read.py); `{n} += ""` is kept as a read
    never_read = in_function and "{n}" not in after
    assert _reported(source) != (overwritten or shown_only or never_read), source


IMPORTS = (
    "from setuptools import setup",
    "from setuptools import find_packages, setup",
    "from distutils.core import setup",
    "import setuptools",
    "from torch.utils.cpp_extension import BuildExtension, CUDAExtension",
    "from torch.utils import cpp_extension",
    "from torch.utils.cpp_extension import load",
    "import numpy as np",
    "from mysetup import setup",
)


def _build_script(imports: list[str]) -> bool:
    """``setup`` from setuptools or distutils.core, and torch.utils.cpp_extension, imported."""
    setup = extension = False
    for line in imports:
        words = line.replace(",", " ").split()
        if words[0] == "from" and words[1] in ("setuptools", "distutils.core"):
            setup = setup or "setup" in words[3:]
        if words[0] == "from" and words[1].startswith("torch.utils"):
            extension = extension or "cpp_extension" in (words[1].split(".") + words[3:])
    return setup and extension


@given(
    imports=st.lists(st.sampled_from(IMPORTS), max_size=3, unique=True),
    choice=st.sampled_from(
        [
            "suffices = ['cpu', 'cuda'] if WITH_CUDA else ['cpu']",
            "if WITH_CUDA:\n    device = torch.device('cuda')",
            "device = 'cuda' if WITH_CUDA else 'cpu'",
        ]
    ),
)
def test_a_choice_in_a_build_script_is_what_to_compile(imports: list[str], choice: str) -> None:
    source = "\n".join(
        ["import torch", *imports, "", "WITH_CUDA = torch.cuda.is_available()", choice]
    )
    assert _reported(source + "\n") != _build_script(imports), source
