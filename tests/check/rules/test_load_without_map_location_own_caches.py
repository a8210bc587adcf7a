"""TP301 leaves the loads of a program's own cache (``rules/_own_caches.py``): issue 34,
branch k34.

* ``x = torch.load(p)`` in a ``try`` whose function saves ``x`` itself to the same path in a
  handler or after the ``try`` (safari's synthetic datasets: ``try: train = torch.load(p)``,
  ``except: pass``, then build and ``torch.save(train, p)``). Near misses stay reported: a
  save of another value (``model.state_dict()``: a checkpoint a later run resumes from), to
  another path, a load not bound to a name, no ``try``.
* ``torch.load(self.processed_paths[i])`` in a class deriving from a ``torch_geometric.data``
  dataset whose ``process()`` writes them with ``torch.save``. Another base, no
  ``process()``, one that saves nothing, or another path stay reported.

The oracles read the generated parts, never the checker.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

RULES = ruleset_for(["TP301"], None)


def _reported(source: str) -> bool:
    return bool(check_text(source, "pkg/data/synthetic.py", RULES).findings)


PATHS = ("p", 'os.path.join(root, f"train_{n}.pt")', 'root + "/train.pt"')


def _spaced(path: str) -> str:
    """The same expression, spaced otherwise (the check compares expressions, not text)."""
    return path.replace(", ", ",\n            ").replace(" + ", "+")


@given(
    path=st.sampled_from(PATHS),
    saved=st.sampled_from(["x", "model.state_dict()", "y"]),
    save_path=st.sampled_from(["same", "spaced", "other"]),
    where=st.sampled_from(["handler", "after", "nowhere"]),
    in_try=st.booleans(),
    bound=st.booleans(),
)
def test_a_load_the_same_function_saves_back_on_a_miss_is_its_cache(
    path: str, saved: str, save_path: str, where: str, in_try: bool, bound: bool
) -> None:
    target = {"same": path, "spaced": _spaced(path), "other": "q"}[save_path]
    save = f"torch.save({saved}, {target})"
    load = f"x = torch.load({path})" if bound else f"parts.append(torch.load({path}))"
    if in_try:
        handler = ["        x = build(n)", f"        {save}"] if where == "handler" else []
        lines = ["    try:", f"        {load}", "    except FileNotFoundError:"]
        lines += handler or ["        pass"]
    else:
        lines = [f"    {load}"]
    lines += (
        ["    if x is None:", "        x = build(n)", f"        {save}"] if where == "after" else []
    )
    body = ["def setup(p, q, root, n, model, parts, y):", "    x = None", *lines, "    return x"]
    source = "\n".join(["import os", "import torch", "", *body]) + "\n"
    cache = in_try and bound and where != "nowhere" and saved == "x" and save_path != "other"
    assert _reported(source) != cache, source


BASES = (
    ("from torch_geometric.data import InMemoryDataset", "InMemoryDataset", True),
    ("from torch_geometric.data import Dataset", "Dataset", True),
    ("import torch_geometric.data as gd", "gd.InMemoryDataset", True),
    ("from torch.utils.data import Dataset", "Dataset", False),
    ("from mylib import InMemoryDataset", "InMemoryDataset", False),
)
PROCESSES = (
    # (the body of process(), whether it writes the processed files)
    ("torch.save(self.collate(rows), self.processed_paths[0])", True),
    (
        "for raw, out in zip(self.raw_paths, self.processed_paths):\n"
        "            torch.save(self.collate(read(raw)), out)",
        True,
    ),
    ("self.rows = read(self.raw_paths[0])", False),
    (None, False),
)


@given(
    base=st.sampled_from(BASES),
    process=st.sampled_from(PROCESSES),
    path=st.sampled_from(["self.processed_paths[0]", "self.processed_paths[i]", "self.ckpt"]),
)
def test_a_pyg_datasets_processed_files_are_its_own(
    base: tuple[str, str, bool], process: tuple[str | None, bool], path: str
) -> None:
    imports, name, pyg = base
    body, writes = process
    lines = [
        f"class Molecules({name}):",
        "    def __init__(self, root, i=0):",
        "        super().__init__(root)",
        f"        self.data, self.slices = torch.load({path})",
    ]
    if body is not None:
        lines += ["", "    def process(self):", f"        {body}"]
    source = "\n".join(["import torch", imports, "", "", *lines]) + "\n"
    own = pyg and writes and path.startswith("self.processed_paths")
    assert _reported(source) != own, source
