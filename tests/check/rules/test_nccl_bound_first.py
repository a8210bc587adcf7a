"""TP404 at a backend bound to a name or attribute before ``init_process_group`` (issue 34).

rf-detr's form (p34al; DETR's ``init_distributed_mode``, copied widely):
``args.dist_backend = "nccl"`` then ``init_process_group(backend=args.dist_backend)``, and
``backend = "nccl"`` then ``init_process_group(backend)``, were not reported even under
``--select TP404`` (a recall miss): the rule read only a literal argument. The
invariant: the call is reported exactly when every value that can reach its backend argument
names NCCL; a name that may hold another value (a conditional, a rebinding in a branch, a
parameter) is not. Oracle: what each generated program's bindings can give the name, known by
construction.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (text binding `backend`, what can reach the call names NCCL)
_BINDINGS = {
    "nccl": ('backend = "nccl"\n', True),
    "NCCL upper": ('backend = "NCCL"\n', True),
    "per device": ('backend = "cuda:nccl,cpu:gloo"\n', True),
    "gloo": ('backend = "gloo"\n', False),
    "conditional": ('backend = "nccl" if torch.cuda.is_available() else "gloo"\n', False),
    "rebound in a branch": (
        'backend = "nccl"\nif not torch.cuda.is_available():\n    backend = "gloo"\n',
        False,
    ),
    "rebound before": ('backend = "gloo"\nbackend = "nccl"\n', True),
}
_CALLS = ("dist.init_process_group(backend)\n", "dist.init_process_group(backend=backend)\n")


@settings(max_examples=30, deadline=None)
@given(
    binding=st.sampled_from(sorted(_BINDINGS)),
    call=st.sampled_from(_CALLS),
    in_function=st.booleans(),
)
def test_a_backend_bound_first_is_reported_when_only_nccl_reaches_it(
    binding: str, call: str, in_function: bool
) -> None:
    text, names_nccl = _BINDINGS[binding]
    body = text + call
    if in_function:
        body = "def setup():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    source = "import torch\nimport torch.distributed as dist\n\n" + body
    found = [f for f in check_source(source, select=["TP404"]) if f.code == "TP404"]
    lines = source.splitlines()
    call_line = 1 + next(i for i, line in enumerate(lines) if "init_process_group" in line)
    assert [f.line for f in found] == ([call_line] if names_nccl else []), source
    assert all(f.fix is None for f in found)  # the string is elsewhere: said, not rewritten


def test_a_parameter_is_not_a_bound_backend() -> None:
    source = (
        "import torch.distributed as dist\n\n\n"
        'def setup(backend="nccl"):\n    dist.init_process_group(backend)\n'
    )
    assert [f for f in check_source(source, select=["TP404"]) if f.code == "TP404"] == []


# Statements between `args.dist_backend = "nccl"` and the call, and whether NCCL alone can
# still reach the call there: only reads of `args`'s other attributes keep it.
_BETWEEN = {
    "nothing": ("", True),
    "a read of another attribute": ("print(args.rank, args.dist_url)\n", True),
    "args handed on whole": ("configure(args)\n", False),
    "a store in a branch": ('if args.cpu:\n    args.dist_backend = "gloo"\n', False),
    "args rebound": ("args = configure(None)\n", False),
    "the attribute read into a call": ("use(args.dist_backend)\n", False),
}


@settings(max_examples=30, deadline=None)
@given(between=st.sampled_from(sorted(_BETWEEN)), stored=st.sampled_from(["nccl", "gloo"]))
def test_an_attribute_stored_first_is_reported_when_only_nccl_reaches_it(
    between: str, stored: str
) -> None:
    text, reaches = _BETWEEN[between]
    body = f'args.dist_backend = "{stored}"\n{text}'
    body += "dist.init_process_group(backend=args.dist_backend, init_method=args.dist_url)\n"
    source = "import torch.distributed as dist\n\n\ndef init_distributed_mode(args):\n" + "".join(
        f"    {line}\n" for line in body.splitlines()
    )
    found = [f for f in check_source(source, select=["TP404"]) if f.code == "TP404"]
    assert len(found) == (1 if reaches and stored == "nccl" else 0), source
