"""TP106 leaves a tensor made once a run to TP905, and reports one made per step.

Generated modules define ``make()``, which creates a tensor on the host and moves it,
and refer to ``make`` from places drawn at random: a call at the top level or under
``if __name__ == "__main__":``, a call in a loop or a comprehension, a call from
another function, a reference that is not a call (a callback list). Some modules
have no ``__main__`` test (they may be imported and ``make`` called from anywhere).
The oracle is what was generated: the copy runs once a run only in a script whose
every reference to ``make`` is a call at the top level outside loops (at least
one); only then is it left, and every other module is reported. The same holds
for the creation written at the module's own top level, script or not: once
outside loops, comprehensions and functions (a class body runs once too). Each
finding is TP106's or TP905's, never both and never neither.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

ONCE = {"top": "make()", "main": "make()", "try": "try:\n    make()\nexcept OSError:\n    pass"}
MANY = {
    "loop": "for _ in range(3):\n    make()",
    "while": "while busy():\n    make()",
    "comprehension": "outs = [make() for _ in range(3)]",
    "caller": "def train():\n    return make()",
    "callback": "hooks = [make]",
    "lambda": "later = lambda: make()",
}
CREATIONS = ("torch.zeros(4).to(device)", "torch.randn(2, 2).cuda()", "torch.ones(3).to(dev)")


def codes(source: str) -> list[str]:
    """What TP106 (copies that repeat) and TP905 (copies made once) report in ``source``."""
    return [
        f.code for f in check_text(source, "m.py", ruleset_for(["TP106", "TP905"], None)).findings
    ]


def indent(text: str, by: str) -> str:
    return "\n".join(by + line for line in text.splitlines())


@given(
    places=st.lists(st.sampled_from(sorted(ONCE) + sorted(MANY)), max_size=4),
    script=st.booleans(),
    creation=st.sampled_from(CREATIONS),
)
def test_a_function_a_script_calls_once_is_left(
    places: list[str], script: bool, creation: str
) -> None:
    top = [ONCE.get(p) or MANY[p] for p in places if p != "main"]
    main = [ONCE["main"] for p in places if p == "main"]
    lines = ["import torch", "", "", f"def make():\n    return {creation}", "", "", *top]
    if script:
        lines.append('if __name__ == "__main__":\n' + indent("\n".join([*main, "pass"]), "    "))
    else:
        lines += main
    source = "\n".join(lines) + "\n"
    once = script and bool(places) and all(p in ONCE for p in places)
    assert codes(source) == ["TP905" if once else "TP106"], source


WRAPPERS = {  # a block around the creation, and whether it repeats what it holds
    "for _ in range(3):": True,
    "while busy():": True,
    "if ready:": False,
    "with lock:": False,
    "try:": False,
    "class Buffers:": False,
    "def later():": True,  # a function nothing in the file calls: its callers are unknown
}


@given(
    script=st.booleans(),
    wrappers=st.lists(st.sampled_from(sorted(WRAPPERS)), max_size=3),
    comprehension=st.booleans(),
    creation=st.sampled_from(CREATIONS),
)
def test_a_module_s_own_statements_run_once_outside_loops(
    script: bool, wrappers: list[str], comprehension: bool, creation: str
) -> None:
    # over a count the file does not write out (a fixed `range(3)` is made once: see
    # test_create_then_move_once_comprehensions.py)
    made = f"x = [{creation} for _ in range(n)]" if comprehension else f"x = {creation}"
    lines = [made]
    for wrapper in reversed(wrappers):
        tail = ["except OSError:", "    pass"] if wrapper == "try:" else []
        lines = [wrapper, *("    " + line for line in lines), *tail]
    source = "import torch\n\n" + "\n".join(lines) + "\n"
    if script:
        source += 'if __name__ == "__main__":\n    pass\n'
    once = not comprehension and not any(WRAPPERS[w] for w in wrappers)
    assert codes(source) == ["TP905" if once else "TP106"], source


GUARDS = {  # the guard, and the attribute of self it keeps (None: no memo of self)
    'if not hasattr(self, "queue"):': "queue",
    "if self.queue is None:": "queue",
    "if queue is None:": None,  # a parameter the caller may leave out every call
    'if not hasattr(other, "queue"):': None,
    "if self.queue is not None:": None,
    "if self.ready:": None,
}
TARGETS = ("self.queue", "self.other", "queue")


@given(
    guard=st.sampled_from(sorted(GUARDS)),
    target=st.sampled_from(TARGETS),
    looped=st.booleans(),
    creation=st.sampled_from(CREATIONS),
)
def test_a_value_an_object_makes_once_and_keeps_is_left(
    guard: str, target: str, looped: bool, creation: str
) -> None:
    body = [guard, f"    {target} = {creation}"]
    if looped:
        body = ["for x in batches:", *("    " + line for line in body)]
    method = ["def add(self, batches, queue=None, other=None):", *("    " + ln for ln in body)]
    source = "import torch\n\n\nclass Pool:\n" + "\n".join("    " + ln for ln in method) + "\n"
    kept = GUARDS[guard]
    once = kept is not None and target == f"self.{kept}"
    assert codes(source) == ["TP905" if once else "TP106"], source


RESETS = {  # another method of the class, and whether it drops self.queue again
    "def reset(self):\n    self.queue = None": True,
    "def reset(self):\n    del self.queue": True,
    'def reset(self):\n    delattr(self, "queue")': True,
    "def reset(self):\n    self.other = None": False,
    "def __init__(self):\n    self.queue = None": False,
    "def size(self):\n    return len(self.queue)": False,
}


@given(
    guard=st.sampled_from(['if not hasattr(self, "queue"):', "if self.queue is None:"]),
    resets=st.lists(st.sampled_from(sorted(RESETS)), max_size=2),
    creation=st.sampled_from(CREATIONS),
)
def test_a_kept_value_the_class_drops_again_is_reported(
    guard: str, resets: list[str], creation: str
) -> None:
    add = f"def add(self, x):\n    {guard}\n        self.queue = {creation}"
    methods = [add, *resets]
    body = "\n".join("    " + ln for m in methods for ln in m.splitlines())
    source = f"import torch\n\n\nclass Pool:\n{body}\n"
    again = any(RESETS[r] for r in resets)
    assert codes(source) == ["TP106" if again else "TP905"], source


BASES = {"nn.Module": True, "torch.nn.Module": True, "object": False}
METHODS = {  # the method making the tensor, who calls it, and whether it runs once per module
    "__init__": ("", True),
    "_probe": ("__init__", True),
    "_shared": ("__init__ forward", False),
    "probe": ("__init__", False),  # public: may be called from anywhere
    "forward": ("", False),
}
GUARDS_BAD = {  # a test around the creation, and whether it is a fallback for bad values
    "if torch.isnan(k).any():": True,
    "if k.isinf().any():": True,
    "if k.sum() > 0:": False,
}


def module_source(base: str, method: str, made: list[str]) -> str:
    callers, _ = METHODS[method]
    methods: dict[str, list[str]] = {"__init__": [], "forward": []}
    methods[method] = ["k = self.k", *made]
    for caller in callers.split():
        methods[caller].append(f"self.{method}()")
    lines = ["import torch", "from torch import nn", "", "", f"class Net({base}):"]
    for name, body in methods.items():
        lines.append(f"    def {name}(self):")
        lines += [f"        {line}" for line in body or ["pass"]]
    return "\n".join(lines) + "\n"


@given(base=st.sampled_from(sorted(BASES)), method=st.sampled_from(sorted(METHODS)))
def test_what_builds_a_module_runs_once(base: str, method: str) -> None:
    source = module_source(base, method, ["x = torch.zeros(3).to(device)"])
    once = BASES[base] and METHODS[method][1]
    assert codes(source) == ["TP905" if once else "TP106"], source


@given(guard=st.sampled_from(sorted(GUARDS_BAD)), creation=st.sampled_from(CREATIONS))
def test_a_fallback_for_bad_values_runs_once(guard: str, creation: str) -> None:
    source = module_source("object", "forward", [guard, f"    x = {creation}"])
    assert codes(source) == ["TP905" if GUARDS_BAD[guard] else "TP106"], source


OWNERS = {  # a statement of a plain class's __init__, and whether it makes the class own a model
    "self.opt = optim.Adam(self.net.parameters(), lr=lr)": True,
    "self.opt = torch.optim.SGD(params, lr=lr)": True,
    "self.net.load_state_dict(state)": True,
    "state = torch.load(path)": True,
    "for p in self.target.parameters():\n    p.requires_grad = False": True,
    "self.items = list(items)": False,
    "self.opt = make_optimizer(cfg)": False,
    "self.state = load(path)": False,
}
MADE = {  # where the file makes an instance, and whether that repeats
    "agent = Agent(args)": False,
    "for seed in seeds:\n    agent = Agent(args)": True,
    "agents = [Agent(a) for a in configs]": True,
    "": False,
}


@given(
    owns=st.lists(st.sampled_from(sorted(OWNERS)), min_size=1, max_size=2),
    made=st.sampled_from(sorted(MADE)),
    method=st.sampled_from(["__init__", "_setup", "setup", "act"]),
    creation=st.sampled_from(CREATIONS),
)
def test_what_builds_a_model_owner_runs_once(
    owns: list[str], made: str, method: str, creation: str
) -> None:
    init = [*owns, "self._setup()" if method == "_setup" else "pass"]
    methods = {"__init__": init, method: [f"x = {creation}"]} if method != "__init__" else {}
    if method == "__init__":
        methods = {"__init__": [*init, f"x = {creation}"]}
    lines = ["import torch", "from torch import optim", "", "", "class Agent:"]
    for name, body in methods.items():
        lines.append(f"    def {name}(self, args=None):")
        lines += [f"        {ln}" for stmt in body for ln in stmt.splitlines()]
    source = "\n".join(lines) + "\n\n\n" + made + "\n"
    # the oracle: an owner's __init__ and the private helper only it calls run once
    once = any(OWNERS[o] for o in owns) and not MADE[made] and method in ("__init__", "_setup")
    assert codes(source) == ["TP905" if once else "TP106"], source


CHECKS = {  # a call in the function, and whether it makes the function a gradient check
    "print(gradcheck(func, (x,), eps=1e-6))": True,
    "assert torch.autograd.gradcheck(func, (x,))": True,
    "ok = gradgradcheck(func, (x,))": True,
    "out = func(x)": False,
    "check(func, (x,))": False,
}


@given(
    calls=st.lists(st.sampled_from(sorted(CHECKS)), max_size=2),
    looped=st.booleans(),
    creation=st.sampled_from(CREATIONS),
)
def test_a_gradient_check_runs_once(calls: list[str], looped: bool, creation: str) -> None:
    made = [f"for _ in range(3):\n    x = {creation}"] if looped else [f"x = {creation}"]
    body = [ln for stmt in [*made, *calls, "return x"] for ln in stmt.splitlines()]
    source = "import torch\n\n\ndef check_gradient():\n" + "".join(f"    {ln}\n" for ln in body)
    once = any(CHECKS[c] for c in calls) and not looped
    assert codes(source) == ["TP905" if once else "TP106"], source
