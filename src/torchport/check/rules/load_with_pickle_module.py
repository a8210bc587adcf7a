"""TP304 load-with-pickle-module: ``torch.load(f, pickle_module=pickle)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import keyword
from torchport.check._rule import Example, Finding, Intent, Rule
from torchport.check.rules._loading import LOAD_ATTRS, is_load


class LoadWithPickleModule(Rule):
    """## What it does
    Finds `torch.load` calls that pass a `pickle_module`, by keyword or as the
    third positional argument (`torch.load(f, map_location, pickle)`).

    ## Why is this bad?
    When `pickle_module` is given and `weights_only` is not, `torch.load`
    turns `weights_only` off: the checkpoint is unpickled in full, and a crafted
    file runs any code it likes (`pickle_module=pickle` with a pickled
    `os.system` call runs that call). With `weights_only=True` as well, the load
    fails instead. The default unpickler is the safe one; classes your
    checkpoint needs can be allowed with `torch.serialization.add_safe_globals`.

    There is no automatic fix: a checkpoint written with another pickler
    (`dill`, `cloudpickle`) may need it to load.

    ## Why is it off by default?
    Under 90% real on the judged samples (0 of 1); `--extend-select TP304` runs it as before.
    """

    code = "TP304"
    name = "load-with-pickle-module"
    intent = Intent.SAFETY
    default = False
    message = (
        "drop `pickle_module`: it turns `weights_only` off, so loading runs any code in the "
        "file; load with the default unpickler and `torch.serialization.add_safe_globals`"
    )
    node_types = (ast.Call,)
    call_attrs = LOAD_ATTRS
    valid = (
        'import torch\n\nstate = torch.load("ckpt.pt", map_location="cpu")\n',
        'import torch\n\nstate = torch.load("ckpt.pt", "cpu")\n',
        "import pickle\n\nobj = pickle.load(fh)\n",
    )
    invalid = (
        Example(
            "import pickle\n\nimport torch\n\n"
            'state = torch.load("ckpt.pt", map_location="cpu", pickle_module=pickle)\n'
        ),
        Example("import dill\nimport torch\n\nstate = torch.load(path, device, dill)\n"),
        Example(
            "import pickle\nimport torch\n\n"
            "state = torch.serialization.load(path, pickle_module=pickle, weights_only=False)\n"
        ),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        given = _pickle_module_given(node)
        if given is not None and is_load(node, ctx):
            yield ctx.finding(self, given)


def _pickle_module_given(call: ast.Call) -> ast.AST | None:
    """Where a ``pickle_module`` other than None is given: the keyword, or the third argument."""
    given = keyword(call, "pickle_module")
    arg: ast.AST | None = given.value if given is not None else None
    if arg is None and len(call.args) >= 3 and not isinstance(call.args[2], ast.Starred):
        arg = call.args[2]
    if arg is None or (isinstance(arg, ast.Constant) and arg.value is None):
        return None
    return given or arg
