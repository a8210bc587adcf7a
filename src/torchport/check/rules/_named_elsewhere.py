"""Whether a public name of a module is named by no other file of its repository.

``rules/_class_constructions.py`` follows a class's constructions within its file; a public
class (a dict of classes) is followed there only when nothing outside the file may build it:
no other file of the repository names it (a word of any text file: another module, a
config, a notebook, a document), none uses its module as a value where it introspects
(``getattr(mod, name)``), and the module is not a library's (``rules/_shipped.py``: a
``setup.py`` or ``pyproject.toml`` that ships it). The reading is ``rules/_project_calls.py``'s,
where every mention elsewhere is an escape. Not seen, so not kept (as there): a name built
from a string at run time, or given from outside the repository.
"""

from __future__ import annotations

import os

from torchport.check._listing import remembered
from torchport.check._patterns import whole_word
from torchport.check._syntax import parsed_module
from torchport.check.rules._project_calls import (
    INTROSPECTS,
    file_in_repository,
    module_as_value,
    repository_texts,
)
from torchport.check.rules._shipped import shipped_module

__all__ = ["named_only_here"]

_SEEN: dict[object, object] = {}  # remembered answers


def named_only_here(path: str, name: str) -> bool:
    """Whether no file of the repository other than ``path`` names ``name`` (a word of
    any text file, or its module used as a value where a file introspects it), and that
    module is not a library's (:func:`every_call_passes`'s points, every mention elsewhere
    an escape). Any doubt (no repository, a package's ``__init__``): False. A public class
    of a script so named is followed within its file (``rules/_class_constructions.py``)."""
    found = file_in_repository(path)
    if found is None:
        return False
    root, full = found
    answer = remembered(_SEEN, ("here", full, name), lambda: _only_here(root, full, name))
    return bool(answer)


def _only_here(root: str, path: str, name: str) -> bool:
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == "__init__" or shipped_module(path, root):
        return False
    texts = repository_texts(root)
    if texts is None:
        return False
    word, module_word = whole_word(name), whole_word(stem)
    needle, module_needle = name.encode(), stem.encode()
    own = False
    for file, data in texts:
        if file == path:
            own = True
            continue
        if needle in data and word.search(data) is not None:
            return False  # another module, a config, a notebook, a document naming it
        if not (
            file.endswith(".py")
            and module_needle in data
            and any(w in data for w in INTROSPECTS)
            and module_word.search(data) is not None
        ):
            continue
        try:
            tree = parsed_module(file, data.decode("utf-8", "surrogateescape"))
        except (SyntaxError, ValueError):
            return False
        if module_as_value(tree, name, stem):
            return False  # the module as a value: `getattr(mod, name)`
    return own
