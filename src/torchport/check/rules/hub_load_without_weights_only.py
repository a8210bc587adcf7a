"""TP307 hub-load-without-weights-only: ``torch.hub.load_state_dict_from_url(url)``."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from torchport.check._context import Context
from torchport.check._match import add_keyword, keyword
from torchport.check._rule import Example, Finding, Fix, FixSafety, Intent, Rule
from torchport.check.rules._loading import HUB_LOADS, LOAD_ATTRS, is_load, unpacks

_POSITIONAL = 7  # url, model_dir, map_location, progress, check_hash, file_name, weights_only


class HubLoadWithoutWeightsOnly(Rule):
    """## What it does
    Finds `torch.hub.load_state_dict_from_url(...)` (also
    `torch.utils.model_zoo.load_url`) without `weights_only=True`.

    ## Why is this bad?
    Unlike `torch.load`, these download helpers still default to
    `weights_only=False`, even in PyTorch 2.6 and later: whatever the URL serves
    (or a mirror, a cache entry, a man in the middle of a plain-HTTP download)
    is unpickled in full, and a crafted file runs any code it likes. A state
    dict needs nothing more than `weights_only=True`.

    ## Fix safety
    The fix adds `weights_only=True`. A file that holds more than tensors,
    containers and primitive types (a whole pickled model, custom classes) then
    fails to load until those classes are allowed with
    `torch.serialization.add_safe_globals`.
    """

    code = "TP307"
    name = "hub-load-without-weights-only"
    intent = Intent.SAFETY
    default = False  # under the 90% bar over samples A-Y: check/_default_scope.py
    message = (
        "pass `weights_only=True`: `load_state_dict_from_url` defaults to `False`, which "
        "runs any code in the downloaded file"
    )
    fix_safety = FixSafety.UNSAFE
    node_types = (ast.Call,)
    call_attrs = LOAD_ATTRS
    valid = (
        "import torch\n\nsd = torch.hub.load_state_dict_from_url(url, weights_only=True)\n",
        "from torch.hub import load_state_dict_from_url\n\n"
        "sd = load_state_dict_from_url(url, progress=False, weights_only=True)\n",
        "import torch\n\nmodel = torch.hub.load(repo, name)\n",
    )
    invalid = (
        Example(
            "import torch\n\nsd = torch.hub.load_state_dict_from_url(url, progress=False)\n",
            fixed="import torch\n\n"
            "sd = torch.hub.load_state_dict_from_url(url, progress=False, weights_only=True)\n",
        ),
        Example(
            "from torch.utils import model_zoo\n\nsd = model_zoo.load_url(URLS[arch])\n",
            fixed="from torch.utils import model_zoo\n\n"
            "sd = model_zoo.load_url(URLS[arch], weights_only=True)\n",
        ),
        Example(
            "from torch.hub import load_state_dict_from_url\n\n"
            "sd = load_state_dict_from_url(url, weights_only=False)\n"
        ),
        Example("import torch\n\nsd = torch.hub.load_state_dict_from_url(url, **kw)\n"),
    )

    def check(self, node: ast.AST, ctx: Context) -> Iterator[Finding]:
        assert isinstance(node, ast.Call)
        flag = keyword(node, "weights_only")
        if len(node.args) >= _POSITIONAL or not is_load(node, ctx, HUB_LOADS):
            return
        if flag is not None:
            value = flag.value
            if isinstance(value, ast.Constant) and not value.value:
                yield ctx.finding(self, flag)  # chosen explicitly: reported, not changed
            return
        if unpacks(node):
            yield ctx.finding(self, node)  # `**kw` may hold it: adding it could clash
            return
        add = add_keyword(node, "weights_only=True", ctx)
        yield ctx.finding(self, node, fix=Fix((add,), FixSafety.UNSAFE))
