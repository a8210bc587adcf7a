"""Whether the port itself puts a creator's tensor on the device (TP503's fix).

``X = torch.tensor([1, 2, 3, 4], dtype=torch.float32)`` read next to the model's weights is
made with ``device=device`` by TP503's fix. The value kinds (:mod:`~torchport.check.port._kinds`)
read the original code: they took ``X`` for a CPU tensor, so a parameter given ``5`` at one
call and ``X`` at another was "cannot tell" (TP520), and one given ``X`` alone was moved again
at the top of the function (a TP502 move of a tensor already there). :func:`placed_by_the_port`
asks TP503's own conditions, so the kinds and the fix cannot disagree.
"""

from __future__ import annotations

import ast

from torchport.check._match import keyword
from torchport.check.port._calls import CREATORS, TYPED_CONSTRUCTORS, is_move

TYPE_CHECKING = False  # as typing's; typing is not imported (start-up)
if TYPE_CHECKING:
    from torchport.check.port._facts import PortFacts

__all__ = [
    "guessed_default",
    "only_guessed",
    "placed_by_the_port",
    "placed_by_the_program",
    "to_place",
]


def placed_by_the_port(node: ast.Call, facts: PortFacts) -> bool:
    """Whether TP503 fixes ``node``, a torch creator, to make its tensor on the device."""
    chosen = to_place(node, facts, helpers=False)
    if chosen is not None and only_guessed(node, facts):
        return False  # reported, not moved (`_guesses`)
    from torchport.check.port._shared_memory import shared_memory

    if chosen is not None and shared_memory(node, facts):
        return False  # reported, not moved: it shares its memory with an array
    found = facts.device_at(node) if chosen is not None else None
    if chosen is None or found is None:
        return False
    target = facts.ctx.target_torch
    if target is None:
        return True
    # A fix writing an API the target torch lacks is dropped after the walk
    # (`_torch_api.within_target`): the finding stays, the tensor on the CPU.
    from torchport.check._torch_api import writes_within
    from torchport.check.rules.tensor_not_on_device import made_on

    name, cast, _ = chosen
    device, edits = found
    moved = made_on(device, node, name, cast, False, facts, facts.ctx)
    return writes_within((*moved, *edits), facts.ctx.source, target)


def to_place(
    node: ast.Call, facts: PortFacts, *, helpers: bool
) -> tuple[str | None, ast.expr | None, bool] | None:
    """TP503's conditions short of the device: ``node`` makes a host tensor in code the port
    reaches, not moved where it is made, with no ``**kwargs`` that may carry ``device=``.
    Then (its qualified name, the end of its cast chain or None, whether it is a project
    function returning a CPU tensor: asked only with ``helpers``); else None."""
    if not _reaches_the_device(node, facts):  # (first: it reads two sets)
        return None
    name = facts.ctx.qualname(node.func)
    helper = helpers and facts.cpu_tensor_call(node)  # `make_mask(n)`: returns a CPU tensor
    if not _makes_a_host_tensor(node, name, helper=helper):
        return None
    from torchport.check.port._chains import cast_end  # on first use

    cast = cast_end(node, facts.parents) if name not in TYPED_CONSTRUCTORS else None
    if _moved_at_once(cast or node, facts) or any(k.arg is None for k in node.keywords):
        return None
    return name, cast, helper


def _makes_a_host_tensor(node: ast.Call, name: str | None, *, helper: bool) -> bool:
    """A creator without ``device=``, or a project function that returns a CPU tensor."""
    if helper:
        return True
    creates = name in CREATORS or name in TYPED_CONSTRUCTORS
    return creates and keyword(node, "device") is None


def _reaches_the_device(node: ast.Call, facts: PortFacts) -> bool:
    """In code the port reaches, where the value meets a device tensor or model, or is a
    side computation the port places (:mod:`~torchport.check.port._side_computations`)."""
    scope = facts.scope_of.get(id(node))
    if scope is None or scope.internal:
        return False
    key = id(node)
    if key in scope.sink_nodes or key in scope.reach_values or key in scope.guess_nodes:
        return True
    from torchport.check.port._side_computations import PLACE, side_computations

    return side_computations(facts).get(key, ("", ""))[0] == PLACE


def only_guessed(node: ast.AST, facts: PortFacts) -> bool:
    """Whether ``node`` meets only device values the flow guesses (``_guesses``): the port
    reports it and does not move it."""
    scope = facts.scope_of.get(id(node))
    key = id(node)
    return (
        scope is not None
        and key in scope.guess_nodes
        and key not in scope.sink_nodes
        and key not in scope.reach_values
    )


def _moved_at_once(made: ast.AST, facts: PortFacts) -> bool:
    """``torch.zeros(3).to(x)``: the tensor (after its cast) is moved where it is made (to
    the CPU too: ``.to("cpu")``, the program's own choice, which TP523 names)."""
    parent = facts.parents.get(id(made))
    up = facts.parents.get(id(parent), parent)
    scope = facts.scope_of.get(id(made)) or facts.module
    if not isinstance(parent, ast.Attribute) or not isinstance(up, ast.Call):
        return False
    return is_move(up) or facts.to_cpu(up, scope)


def placed_by_the_program(facts: PortFacts, node: ast.AST) -> str | None:
    """TP503's message where the program places its model per process, or chose its own
    device out of ``node``'s sight (None: the rule's own)."""
    placed = facts.own_placement
    if placed is None:
        return facts.device_name.kept_message(node)
    from torchport.check.rules._snippets import short_call

    return (
        "make the tensor on the device the program put its model on "
        f"(`{short_call(placed)}`, line {placed.lineno}); the port does not "
        "overrule the program's own placement"
    )


def guessed_default(node: ast.Call, facts: PortFacts) -> str | None:
    """TP503's message where ``node`` makes a host tensor (a creator, a project helper
    returning one) as a parameter's default that meets only guessed device values
    (``_guesses._guessed_defaults``); None for any other call (``n=len(xs)``)."""
    why = facts.flow.defaults.get(id(node))
    name = facts.ctx.qualname(node.func)
    helper = why is not None and facts.cpu_tensor_call(node)
    return why if why is not None and _makes_a_host_tensor(node, name, helper=helper) else None
