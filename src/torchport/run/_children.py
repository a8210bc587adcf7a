"""Carry a redirect into the processes a redirected script starts.

* ``fork``: the child is a copy of the parent, patches and function mode included.
* ``spawn`` and ``forkserver`` (``multiprocessing`` and ``torch.multiprocessing.spawn``):
  the child is a fresh interpreter that first unpickles a "preparation data"
  dict from its parent, then re-imports the parent's ``__main__``, then
  unpickles the process object. The parent adds one entry to that dict whose
  unpickling enters the same redirect in the child, for the child's whole life,
  so the main module's top-level code, the target function and everything they
  start are redirected. No ``sitecustomize``, ``.pth`` file or environment
  variable is involved, and nothing outside this run sees a change.
* ``subprocess`` running this same interpreter on a script or on one of the
  project's own modules, found in the child's working directory or on
  ``PYTHONPATH`` (``[sys.executable, *options, "script.py", *args]`` or
  ``[..., "-m", "pkg.worker", *args]``, the forms scripts use to start
  helpers): the command becomes ``[sys.executable, *options, "-m", "torchport",
  "run", "--quiet", "--device", D, "script.py", *args]``, which runs the child
  exactly as python would, redirected. Anything else is left as it is:
  ``-m`` modules of the standard library or site-packages (``-m pip`` must
  stay pip), ``-c`` commands, other interpreters, ``shell=True`` strings,
  ``os.system`` and ``os.exec*``, code inside torch or torchport, and calls
  that torch and torchport make.
"""

from __future__ import annotations

import multiprocessing.spawn
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from torchport._origin import Origin, caller_is_library, is_library, origin
from torchport.run._cuda_shim import Patch
from torchport.run._module_spec import find_runnable

__all__ = ["child_patches", "through_torchport"]

# Interpreter options that take no value, and those that take one (python --help).
_FLAGS = frozenset(
    (
        "-b",
        "-bb",
        "-B",
        "-d",
        "-E",
        "-I",
        "-O",
        "-OO",
        "-P",
        "-q",
        "-R",
        "-s",
        "-S",
        "-u",
        "-v",
        "-x",
    )
)
_WITH_VALUE = frozenset(("-W", "-X", "--check-hash-based-pycs"))
_PASSED_THROUGH = (os.path.dirname(os.path.abspath(__file__)) + os.sep, subprocess.__file__)

_KEY = "torchport_redirect"  # spawn.prepare() ignores keys it does not know


def through_torchport(args: object, device: str, cwd: object = None) -> list[str] | None:
    """``args`` rewritten to run under ``torchport run --device device``, or None to leave it.

    Rewritten: ``[this interpreter, *options, script, *arguments]`` and
    ``[this interpreter, *options, "-m", module, *arguments]`` where the module
    is the project's own (found, without importing it, outside the standard
    library and site-packages: ``-m pip`` stays pip). ``cwd`` is the child's
    working directory, where relative paths and ``-m`` modules are looked up.
    See the module docstring for what else is left alone.
    """
    if not isinstance(args, list | tuple) or not args:
        return None
    if not all(isinstance(arg, str | os.PathLike) for arg in args):
        return None
    argv = [os.fsdecode(arg) for arg in args]
    found = shutil.which(argv[0]) if os.sep not in argv[0] else argv[0]
    if found is None or os.path.abspath(found) != os.path.abspath(sys.executable):
        return None
    index = 1
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-m":
        option = argv[index]
        if option in _FLAGS:
            index += 1
        elif option in _WITH_VALUE:
            index += 2
        elif option[:2] in ("-W", "-X"):  # -Wignore, -Xutf8: the value attached
            index += 1
        else:
            return None  # -c, -, or an option this code does not know
    if index >= len(argv):
        return None
    folder = os.path.abspath(os.fsdecode(cwd) if isinstance(cwd, str | os.PathLike) else ".")
    if argv[index] == "-m":
        if index + 1 >= len(argv) or not _own_module(argv[index + 1], folder):
            return None
    else:
        script = os.path.join(folder, argv[index])
        if not os.path.isfile(script) or is_library(os.path.abspath(script)):
            return None
    run = ["-m", "torchport", "run", "--quiet", "--device", device]
    return [*argv[:index], *run, *argv[index:]]


def _own_module(name: str, folder: str) -> bool:
    """Whether ``python -m name`` in ``folder`` runs the project's own code, not a library's.

    The project's own modules are those the child finds in its working
    directory or on ``PYTHONPATH``; installed packages are libraries.
    """
    extra = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    spec = find_runnable(name, [folder, *extra])
    found = getattr(spec, "origin", None)
    if not isinstance(found, str) or not os.path.isfile(found):
        return False
    return origin(os.path.abspath(found)) is Origin.USER


def _called_by_library() -> bool:
    """Whether the code that started the process (past ``subprocess.run``) is torch or torchport."""
    return caller_is_library(past=_PASSED_THROUGH)


def child_patches(device: str, in_child: object) -> list[Patch]:
    """The patches that make children started with multiprocessing or subprocess redirected.

    ``in_child`` goes into a spawned child's preparation data: unpickling it there
    enters the redirect (the redirect's own ``_InChild``, so that this module, which
    the redirect installs, never imports the redirect back).
    """
    original: Callable[[str], dict[str, Any]] = multiprocessing.spawn.get_preparation_data
    popen_init: Callable[..., None] = subprocess.Popen.__init__

    def get_preparation_data(name: str) -> dict[str, Any]:
        data = original(name)
        data[_KEY] = in_child
        return data

    def __init__(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
        # Only the plain keyword form: a positional bufsize/executable/shell is left alone.
        plain = not rest and not kwargs.get("shell") and kwargs.get("executable") is None
        if plain and not _called_by_library():
            args = through_torchport(args, device, kwargs.get("cwd")) or args
        popen_init(self, args, *rest, **kwargs)

    return [
        (multiprocessing.spawn, "get_preparation_data", get_preparation_data),
        (subprocess.Popen, "__init__", __init__),
    ]
