"""Sphinx configuration: API and rule reference built from the code (`python -m sphinx docs OUT`).

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (what
``tests/test_docs.py`` runs, warnings as errors). Nothing is fetched from the
network: no intersphinx, the built-in theme.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import torchport

project = "torchport"
author = "The torchport authors"
copyright = "the torchport authors; Apache-2.0"
release = version = torchport.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "myst_parser",
    "torchport_reference",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"members": True, "show-inheritance": True}
napoleon_google_docstring = True
napoleon_numpy_docstring = False
myst_heading_anchors = 3

html_theme = "alabaster"
html_title = f"torchport {release}"
