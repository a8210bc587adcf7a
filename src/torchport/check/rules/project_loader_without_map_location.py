"""TP310 project-loader-without-map-location: a project loader called without ``map_location``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import in_tests, keyword
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.semantic import BindingKind

_LOADER = (
    "import torch\n\n\n"
    "class Net(torch.nn.Module):\n"
    "    @classmethod\n"
    "    def load_from_file(cls, path, map_location=None):\n"
    "        state = torch.load(path, map_location=map_location)\n"
    "        return state\n\n\n"
)


class ProjectLoaderWithoutMapLocation(Rule):
    """## What it does
    Finds a call of one of the project's own loaders without `map_location`: a
    `classmethod` or `staticmethod` named for loading (`load` in its name), called
    on its class by the class's capitalised name, whose `map_location` parameter
    defaults to None and goes straight to `torch.load(..., map_location=map_location)`
    (`MPNN.load_from_file(path)`), defined in the file or in a project module it
    imports the class from, of the class's own or through a base.

    ## Why is this bad?
    `torch.load` does not report such a load: it is given `map_location`, which is
    None. So the checkpoint's tensors are restored to the device they were saved
    from, and a model trained on a GPU fails to load on a CPU-only or Apple
    machine. The call is the place to say where it should load. Reported without
    a fix: the loader's callers decide where their model lives.
    """

    code = "TP310"
    name = "project-loader-without-map-location"
    intent = Intent.DEVICE
    message = (
        'pass `map_location=` (the device, or `"cpu"`): this loader hands its default '
        "`map_location=None` to `torch.load`"
    )
    node_types = (ast.Call,)
    valid = (
        _LOADER + 'net = Net.load_from_file("net.pt", map_location="cpu")\n',
        _LOADER + 'net = Net.load_from_file("net.pt", "cpu")\n',
        "import torch\n\n\nclass Net:\n    @classmethod\n"
        '    def load_from_file(cls, path, map_location="cpu"):\n'
        "        return torch.load(path, map_location=map_location)\n\n\n"
        'net = Net.load_from_file("net.pt")\n',
    )
    invalid = (
        Example(_LOADER + 'net = Net.load_from_file("net.pt")\n'),
        Example(_LOADER + "class Big(Net):\n    pass\n\n\nbig = Big.load_from_file(path)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        func = node.func
        if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
            return
        if "load" not in func.attr or not func.value.id[:1].isupper():
            # a loader's name says so (`load_from_file`; _prefilter.NEEDS: "load"), and a
            # class's name is capitalised (`MPNN`, not `torch.load`, `json.load`)
            return
        if keyword(node, "map_location") is not None or any(k.arg is None for k in node.keywords):
            return
        if in_tests(ctx):
            return  # a test loading its own fixture (asked first: it needs no project view)
        place = _place(func.value, func.attr, ctx)
        if place is None or any(isinstance(a, ast.Starred) for a in node.args):
            return
        if 0 <= place < len(node.args):
            return  # passed by position
        from torchport.check.rules._cpu_projects import cpu_only_project  # on first use

        if not cpu_only_project(ctx):
            yield ctx.finding(self, node)


def _place(name: ast.Name, method: str, ctx: Context) -> int | None:
    """Where ``name.method(...)`` takes ``map_location``, if it is a loader of the project's."""
    from torchport.check.port._project_owners import loader_place, may_own  # on first use

    binding = ctx.scopes.binding_at(name)  # the class itself, not a name that shadows it
    if binding is None or binding.kind not in (BindingKind.CLASS, BindingKind.IMPORT):
        return None
    if not may_own(ctx, name.id):
        return None  # no loader of the project's by that name: no project view built
    methods = _loaders(ctx).get(name.id)
    return None if methods is None else loader_place(methods, method)


def _loaders(ctx: Context) -> dict[str, frozenset[str]]:
    """The methods (loaders among them) of the classes the file defines or imports from
    the project, by name; once per file."""
    found = ctx.memo.get("loaders")
    if found is None:
        from torchport.check.port._project_owners import owners_of  # on first use
        from torchport.check.port._project_view import project_owners

        project = project_owners(ctx)
        owned = dict(owners_of(ctx, project, frozenset()))
        found = ctx.memo["loaders"] = {
            name: methods
            for name, (_, methods, lineage) in owned.items()
            if lineage != "unresolved" and any("(map_location=" in m for m in methods)
        }
    return found  # type: ignore[return-value]
