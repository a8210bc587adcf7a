"""TP109 leaves a CUDA-or-CPU choice bound in a function to a name the function never reads
(held-out sample AE's E1, judged low (e): contrastive-gap's ``src/prepare_config.py``, whose
``prepare_config`` and ``prepare_default_clip_config`` end with ``device =
torch.device(config_cuda_device if torch.cuda.is_available() else "cpu")``, a local read
nowhere): the value is never used, so picking the accelerator there changes nothing.

Programs are a function binding a choice (four forms, two of them near misses whose call uses
the choice: ``model.to(<choice>)``, ``pick(<choice>)``) followed by up to three statements drawn
from a table. The oracle is Python's own ``symtable``, not the checker's walk: the choice is
left alone exactly when the bound name is referenced (loaded, free, global or nonlocal) in no
symbol table of the function or a scope nested in it (nor loaded in a comprehension: 3.12+
inlines those and its ``symtable`` loses their reads), and no statement marked by hand as one
the rule keeps on purpose (a namespace or frame reader, an augmented assignment) is there; or
when the next statement binds the name again (``device = "cpu"``: branch k34's narrowing,
``_idle_choices._overwritten_unread``, older than this one).
"""

from __future__ import annotations

import ast
import symtable

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

CHOICE = '"cuda" if torch.cuda.is_available() else "cpu"'
# a binding form -> whether a call there uses the choice (a near miss: always reported)
FORMS = {
    f"device = {CHOICE}": False,
    f"device = torch.device({CHOICE})": False,
    f"device: str = {CHOICE}": False,
    f"device = model.to({CHOICE})": True,
    f"device = pick({CHOICE})": True,
}
# a statement after the binding -> whether the rule keeps the finding by design whatever
# symtable says (namespace and frame readers, `device += ...`)
AFTER = {
    'print("done")': False,
    "x = 1": False,
    'device = "cpu"': False,
    "del device": False,
    "model.to(device)": False,
    "return device": False,
    "items = [device for _ in range(2)]": False,
    "def inner():\n        return device": False,
    "def inner():\n        nonlocal device\n        device = 'cpu'": False,
    "class Holder:\n        d = device": False,
    'log(f"{device}")': False,
    "lambda: device": False,
    'device += ":0"': True,
    "print(locals())": True,
    'eval("1")': True,
    "frame = inspect.currentframe()": True,
    "frame = sys._getframe()": True,
}
OVERWRITE = 'device = "cpu"'
PREFIX = {"": False, "global device": False, "def early():\n        return device": False}


def program(prefix: str, form: str, after: list[str]) -> str:
    body = [s for s in (prefix, form, *after) if s]
    lines = "".join(f"    {s}\n" for s in body)
    return f"import inspect\nimport sys\n\nimport torch\n\n\ndef main(model):\n{lines}"


def referenced(table: symtable.SymbolTable, name: str) -> bool:
    """Whether ``name`` is read, free, global or nonlocal in ``table`` or a table under it."""
    names = table.get_identifiers()
    if name in names:
        sym = table.lookup(name)
        if sym.is_referenced() or sym.is_free() or sym.is_global() or sym.is_nonlocal():
            return True
    return any(referenced(child, name) for child in table.get_children())


def read_in_a_comprehension(source: str, name: str) -> bool:
    """Whether a comprehension loads ``name``: Python 3.12+ inlines comprehensions (PEP 709)
    and its ``symtable`` then marks an outer local they read as unreferenced (3.12.1, 3.13.0),
    so the oracle asks ``ast`` for that one case."""
    return any(
        isinstance(sub, ast.Name) and sub.id == name and isinstance(sub.ctx, ast.Load)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp))
        for sub in ast.walk(node)
    )


def expected_left(source: str, form: str, after: list[str]) -> bool:
    main = next(t for t in symtable.symtable(source, "m.py", "exec").get_children())
    assert main.get_name() == "main"
    if after and after[0] == OVERWRITE:
        return True  # the next statement binds it unread: an earlier narrowing (k34's)
    if FORMS[form] or any(AFTER[s] for s in after):
        return False
    return not (referenced(main, "device") or read_in_a_comprehension(source, "device"))


def reported(source: str) -> bool:
    findings = check_text(source, "train.py", ruleset_for(["TP109"], None)).findings
    return any(f.code == "TP109" for f in findings)


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(sorted(PREFIX)),
    st.sampled_from(sorted(FORMS)),
    st.lists(st.sampled_from(sorted(AFTER)), max_size=3),
)
@example("", f"device = {CHOICE}", ["items = [device for _ in range(2)]"])  # CI's 3.13 find
def test_a_choice_its_function_never_reads_is_left_alone(
    prefix: str, form: str, after: list[str]
) -> None:
    source = program(prefix, form, after)
    try:
        compile(source, "m.py", "exec")
    except SyntaxError:  # `global device` with an annotation, `nonlocal` of a global
        assume(False)
    assert reported(source) is not expected_left(source, form, after), source


def test_the_sampled_lines() -> None:
    """contrastive-gap's shape: the choice is the function's last statement."""
    source = (
        "import os\n\nimport torch\n\n\n"
        "def prepare_config(cuda_device='cuda', seed=2):\n"
        "    config_cuda_device = cuda_device\n"
        "    torch.manual_seed(seed)\n"
        "    os.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'\n"
        '    device = torch.device(config_cuda_device if torch.cuda.is_available() else "cpu")\n'
    )
    assert not reported(source)
    assert reported(source + "    return device\n")
    assert reported(source.replace("    device = ", "    global device\n    device = "))


def test_a_module_level_or_class_level_choice_is_not_this() -> None:
    assert reported(f"import torch\n\nclass Run:\n    device = {CHOICE}\n")
    assert reported(f"import torch\n\ndef f():\n    class Run:\n        device = {CHOICE}\n")
