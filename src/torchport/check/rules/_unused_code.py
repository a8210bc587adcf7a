"""Code nothing in the repository runs: a module-level function whose name it never spells again.

The held-out samples U-Y judge about 25 rows low as (e), "code nothing in the project runs"
(benchmarks/precision_standard.md): 3DDFA's ``utils/io._load_tensor`` (``.cuda()`` under
``mode='gpu'``, a function whose name occurs only at its ``def``), and the like. A default run
leaves what the hard-coded device rules (``_select.UNUSED_CODE_RULES``) find in such a
function to a run that names them (``--select ALL``, ``--extend-select TP101``), as it does
code that needs CUDA anyway (``_select.CUDA_NAMING``).

The invariant: a finding is in **unused code** when the statement of its module's body
holding it is a function definition (``def``/``async def``, not in a class: a method may be
a framework's hook, ``training_step``, called by a name the repository never spells), and

* the repository (the tree under the nearest folder above holding ``.git``, read once per
  run: ``rules/_project_calls.repository_texts``, every text file, not only Python: configs,
  notebooks, shell scripts, documents) spells the function's name as a word exactly once:
  at its ``def``. Any other mention keeps the finding: a call, the name as a value (a
  registry, ``map(f, xs)``), a string (``__all__``, ``getattr(m, "f")``, a YAML
  ``_target_``), a comment, a README, even another function of the same name;
* the function is not decorated (a decorator may register it: ``@register``,
  ``@app.command``, ``@pytest.fixture``), not a dunder, not named ``test*`` (a test runner
  collects it by its name), not defined twice at module level;
* its module may not be installed with its project (no ``setup.py``, ``pyproject.toml``
  or ``setup.cfg`` in its folder or above: ``_project_calls.installed_module``; code
  outside the repository may import and call a library's function), is not a package's
  ``__init__``, nor a file whose functions a tool calls by name (``conftest.py``,
  ``hubconf.py``: ``torch.hub.load(repo, "resnet50")``, ``setup.py``);
* its module reaches no name of its own by a string (:data:`_OWN_INTROSPECTION`:
  ``globals()``, ``eval(...)``, ``sys.modules``, ``fire.Fire()`` exposing every function,
  ...; a method's ``model.eval()`` is none), and no file of the repository naming the
  module's stem as a word may (:func:`_reaches`: the module as a value, ``getattr(drn,
  args.arch)``, ``build(m)`` or ``m.__dict__`` of the stem or a name an ``import ... as m``
  binds; or ``globals()``, ``eval(...)``, ``import_module``, ``sys.modules``, a star
  import: any module's names; ``drn.drn_d_54(...)`` and ``getattr(args, k)`` are none).

Any doubt keeps the finding: no repository near, more files than it reads, the file not
among its texts. Not seen, so not kept: a caller that builds the name at run time from
outside the repository (a ``--arch drn_c_26`` read by ``getattr(importlib.import_module(m),
name)`` where the module's stem is assembled too), a caller behind a symbolic link to a
folder, a non-Python text over 4 MiB.
"""

from __future__ import annotations

import ast
import os
import re

from torchport.check._context import Context
from torchport.check._listing import remembered
from torchport.check.rules._project_calls import (
    installed_module,
    repository_of,
    repository_texts,
)

__all__ = ["in_unused_code"]

_TOOL_FILES = frozenset({"__init__.py", "conftest.py", "hubconf.py", "setup.py"})
# what reaches a module's functions by a string, in the module itself (a builtin's call, not
# a method's: `model.eval()` is none) ...
_OWN_INTROSPECTION = re.compile(
    r"(?<!\w)(?:globals|locals|vars|exec|__import__|Fire)\s*\(|(?<![\w.])eval\s*\("
    r"|builtins\.eval|__dict__|getmembers|sys\.modules|import_module"
)
# ... and in a file naming the module's stem: a way to any module's names, or the module as
# a value (below)
_DYNAMIC = re.compile(
    rb"(?<!\w)(?:globals|locals|exec|__import__|Fire)\s*\(|(?<![\w.])eval\s*\("
    rb"|builtins\.eval|import_module|sys\.modules|import\s*\*|runpy|run_path|run_module"
    rb"|spec_from|exec_module|load_source|load_module"
)
_ALIAS = re.compile(rb"\bas\s+(\w+)")
_IMPORT_LINE = re.compile(rb"\s*(?:import|from)\s")
_SEEN: dict[object, object] = {}
_FILE = "unused_code.file"  # Context.memo's keys: the file's repository (None: none to ask)
_MEMO = "unused_code.functions"  # id(def) -> answer


def in_unused_code(ctx: Context, node: ast.AST | None = None) -> bool:
    """Whether ``node``, the node being checked, is in unused code (the module docstring)."""
    ancestors = ctx.ancestors
    if not ancestors or not isinstance(ancestors[0], ast.Module):
        return False
    top = ancestors[1] if len(ancestors) > 1 else node
    if not isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    known = ctx.memo.get(_MEMO)
    if not isinstance(known, dict):
        known = ctx.memo[_MEMO] = {}
    answer = known.get(id(top))
    if answer is None:
        answer = known[id(top)] = _unused(ctx, top)
    return bool(answer)


def _unused(ctx: Context, top: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    name = top.name
    if top.decorator_list or name.startswith(("__", "test")) or name.endswith("__"):
        return False
    if _FILE not in ctx.memo:
        ctx.memo[_FILE] = _repository(ctx)
    root = ctx.memo[_FILE]
    if not isinstance(root, str):
        return False
    defined = [
        s
        for s in ctx.tree.body
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == name
    ]
    if len(defined) != 1:
        return False
    path = os.path.abspath(ctx.path)
    answer = remembered(_SEEN, ("unused", path, name), lambda: _spelled_once(root, path, name))
    return bool(answer)


def _repository(ctx: Context) -> str | None:
    """The root of the file's repository, where its functions may be unused code: a file
    of a repository, not installable, not a tool's, reaching no name of its own by a string."""
    path = ctx.path
    if not path or path.startswith("<") or os.path.basename(path) in _TOOL_FILES:
        return None
    if not os.path.isfile(path) or _OWN_INTROSPECTION.search(ctx.source):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    root = repository_of(folder)
    if root is None or installed_module(folder, root):
        return None
    return root


def _spelled_once(root: str, path: str, name: str) -> bool:
    """Whether the repository at ``root`` spells ``name`` once, in ``path``, and no file
    naming the module's stem reaches its names by a string (the module docstring)."""
    texts = repository_texts(root)
    if texts is None:
        return False
    stem = os.path.splitext(os.path.basename(path))[0].encode()
    needle = name.encode()
    word = re.compile(rb"(?<![\w])" + re.escape(needle) + rb"(?![\w])")
    module_word = re.compile(rb"(?<![\w])" + re.escape(stem) + rb"(?![\w])")
    own = [data for file, data in texts if file == path]
    if len(own) != 1:
        return False
    if len(word.findall(own[0])) != 1:
        return False  # the own file first: most functions are called beside their def
    for file, data in texts:
        if file == path:
            continue
        if needle in data and word.search(data) is not None:
            return False
        if stem in data and module_word.search(data) is not None and _reaches(data, stem):
            return False
    return True


def _reaches(data: bytes, stem: bytes) -> bool:
    """Whether a file naming the module's ``stem`` may reach its names by a string: a way to
    any module's names (:data:`_DYNAMIC`), or, outside an import line, the stem or a name an
    ``as`` binds on a line naming it (``import pkg.stem as m``) followed by neither ``.``
    nor ``(`` (the module as a value: ``getattr(drn, args.arch)``, ``vars(m)``, ``build(m)``,
    ``(stem,)``; a module is not called, ``model.train()`` is another name) or followed by
    ``.__dict__``. Comments and strings count: any doubt keeps the finding."""
    if _DYNAMIC.search(data) is not None:
        return True
    stem_word = re.compile(rb"(?<!\w)" + re.escape(stem) + rb"(?!\w)")
    lines = data.splitlines()
    names = {stem}
    for line in lines:
        if stem in line and stem_word.search(line) is not None:
            names.update(_ALIAS.findall(line))
    value = re.compile(
        rb"(?<![\w])(?:"
        + b"|".join(re.escape(n) for n in sorted(names))
        + rb")(?!\w)(?!\s*\.(?!\s*__dict__))(?!\s*\()"
    )
    return any(value.search(line) is not None for line in lines if not _IMPORT_LINE.match(line))
