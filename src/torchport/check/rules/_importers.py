"""Which files of a repository import one of its modules, as the project view finds modules.

``rules/_cuda_projects.py`` asks it of a helper module that only CUDA-only scripts import
(fast_adversarial's ``CIFAR10/utils.py``, imported by three training scripts built on
apex's ``amp.initialize``; sample X, issue 34). The answer is the Python files of the
repository (``rules/_project_calls.repository_texts``: the tree under the nearest folder
holding ``.git``) with an import statement, anywhere in them, that the project view
(``port/_module_files.find_module``: beside the importer, at the root above its packages, a
package higher up, relative imports) resolves to the module: ``import utils``, ``from utils
import clamp``, ``from pkg import utils``, ``from . import utils``, ``import pkg.utils as u``.

**None, for "not known"**, whenever the module may run in another way, any doubt counting:

* no repository, more files than it reads, or a Python file of it that does not parse;
* the module may be installed with its project (a packaging file in its folder or above:
  code outside the repository may import it), is a package's ``__init__``, or is a script
  itself (an ``if __name__ == "__main__":`` block);
* an import naming the module's name (the last part of the dotted name it imports) that the
  project view resolves to no file of the repository (a ``sys.path`` edit or the environment
  may make it this module), unless the importing file's own folder, or one below it, holds
  another module of that name (Python looks there first: fast_adversarial's
  ``ImageNet/main_fast.py`` reads ``from utils import *`` of ``ImageNet/lib/utils.py``,
  which its missing ``init_paths`` puts on ``sys.path``);
* a Python string spelling it (``"utils"``, ``"pkg.utils"``, ``"utils.py"``:
  ``importlib.import_module``, ``runpy``, a command line), or a text file that is not Python
  naming its file, a dotted path through it, or it on an ``import`` line (a shell script
  running ``python utils.py``, a config naming ``utils.build``, a notebook's ``from utils
  import clamp``).

Not seen, so not counted: a name assembled at run time (``importlib.import_module(name)``).
Kept per module path for the run with the paths it read (``check/_listing.remembered``).
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

from torchport.check._listing import remembered
from torchport.check._syntax import parsed_module
from torchport.check.port._module_files import Lookups, find_module
from torchport.check.rules._project_calls import (
    installed_module,
    repository_of,
    repository_texts,
)

__all__ = ["importers_of", "is_main_block", "is_script"]

_SEEN: dict[object, object] = {}


def importers_of(path: str) -> tuple[str, ...] | None:
    """The repository's Python files that import the module at ``path`` (the module
    docstring), sorted; None when it may also run in another way."""
    path = os.path.abspath(path)
    folder, stem = os.path.dirname(path), os.path.splitext(os.path.basename(path))[0]
    root = repository_of(folder)
    if root is None or stem == "__init__" or not path.endswith(".py"):
        return None
    if installed_module(folder, root):
        return None
    found = remembered(_SEEN, ("importers", path), lambda: _importers(root, path, stem))
    return found if isinstance(found, tuple) else None


def is_script(tree: ast.Module) -> bool:
    """Whether the module has an ``if __name__ == "__main__":`` block at its top level."""
    return any(isinstance(s, ast.If) and is_main_block(s) for s in tree.body)


def is_main_block(stmt: ast.If) -> bool:
    """Whether ``stmt`` tests ``__name__ == "__main__"`` (either way round)."""
    test = stmt.test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, *test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def _importers(root: str, path: str, stem: str) -> tuple[str, ...] | None:
    texts = repository_texts(root)
    if texts is None:
        return None
    word = re.compile(rb"(?<![\w])" + re.escape(stem.encode()) + rb"(?![\w])")
    # a text that is not Python naming the file, a dotted path through the module, or
    # importing it (a notebook's `from utils import clamp`)
    name = re.escape(stem.encode())
    spelled = re.compile(
        rb"(?<![\w])" + name + rb"\.py(?![\w])|\w\." + name + rb"(?![\w])|(?<![\w.])"
        + name + rb"\.[A-Za-z_]|(?:from|import)[ \t][^\n]*?(?<![\w.])" + name + rb"(?![\w])"
    )  # fmt: skip
    # other modules of that name (a file `stem.py`, a package `stem/`), by folder
    others = {
        os.path.dirname(f) if os.path.basename(f) == stem + ".py" else os.path.dirname(
            os.path.dirname(f)
        )
        for f, _ in texts
        if f != path
        and (
            os.path.basename(f) == stem + ".py"
            or f.endswith(os.sep + os.path.join(stem, "__init__.py"))
        )
    }  # fmt: skip
    lookups = Lookups()
    found: list[str] = []
    for file, data in texts:
        if file == path:
            continue
        if stem.encode() not in data or word.search(data) is None:
            continue
        if not file.endswith(".py"):
            if spelled.search(data):
                return None
            continue
        try:
            tree = parsed_module(file, data.decode("utf-8", "surrogateescape"))
        except (SyntaxError, ValueError):
            return None
        verdict = _imports(tree, file, path, stem, others, lookups)
        if verdict is None:
            return None
        if verdict:
            found.append(file)
    return tuple(sorted(found))


def _imports(
    tree: ast.Module, file: str, path: str, stem: str, others: set[str], lookups: Lookups
) -> bool | None:
    """Whether the file at ``file`` imports the module at ``path``; None: a doubt."""
    strings = {stem, stem + ".py"}
    near = any(o == os.path.dirname(file) or o.startswith(os.path.dirname(file) + os.sep)
               for o in others)  # fmt: skip
    imports = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text in strings or text.endswith(("." + stem, "/" + stem + ".py")):
                return None
            continue
        # (the dotted name asked, its level, the module a name is imported from)
        asked: list[tuple[str, int, str | None]] = []
        if isinstance(node, ast.Import):
            asked = [(a.name, 0, None) for a in node.names if a.name.rpartition(".")[2] == stem]
        elif isinstance(node, ast.ImportFrom):
            module = node.module
            if module and module.rpartition(".")[2] == stem:
                asked.append((module, node.level, None))
            if any(a.name == stem for a in node.names):
                asked.append((f"{module}.{stem}" if module else stem, node.level, module))
        for dotted, level, source in asked:
            target = find_module(Path(file), dotted, level, lookups)
            if target is not None:
                imports = imports or lookups.resolved(str(target)) == lookups.resolved(path)
            elif source is not None or level:
                # `from m import stem`: a name of the project's module `m`, not a module
                if find_module(Path(file), source, level, lookups) is None and not near:
                    return None
            elif not near:
                return None  # maybe this module, through sys.path or the environment
    return imports
