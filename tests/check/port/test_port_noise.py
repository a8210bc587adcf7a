"""The port's leftover reports name what to move, or say nothing (issue 31, "noise down").

One test per class of report that the long port fuzz (or a sampled real repository)
found on programs that, ported, ran to their end with everything on the device, or
that named a value no tensor is (a replay buffer, a number, a loop target) as the
thing to move. The oracle is the run itself: every ported program here is run on the
CPU (same values as the original) and with ``meta`` as the accelerator (every forward
watched, ``test_port_fuzz.run``); a program the port says nothing about must run
there with nothing off the device, and where the run shows a leftover, the port must
report it and name where it is made.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.check.port.siblings import load
from torchport.check.port import port_text

HERE = Path(__file__).parent
fuzz = load("port_fuzz_oracle", HERE / "test_port_fuzz.py")
fix_fuzz = load("fix_fuzz_checks", HERE.parent / "test_fix_fuzz.py")
project_fuzz = load("project_fuzz_checks", HERE / "test_project_fuzz.py")

MODEL = "import torch\n\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n"


def _indent(text: str) -> str:
    return "".join("    " + line if line.strip() else line for line in text.splitlines(True))


def wrap(body: str, where: str) -> str:
    """``body`` at module level, under an ``if``, in a function, or two functions deep."""
    if where == "if":
        return f"if OUT is not None:\n{_indent(body)}"
    if where == "function":
        return f"def main():\n{_indent(body)}main()\n"
    if where == "nested":
        return f"def outer():\n{_indent(f'def main():{chr(10)}{_indent(body)}main()')}\nouter()\n"
    return body


def placed(source: str) -> tuple[list[str], bool]:
    """What the port left of ``source``, and whether the ported program ran on the
    accelerator (meta) with every forward's parameters and inputs there; the ported
    program gives what the original gives on the CPU."""
    outcome = port_text(source)
    assert outcome.failures == []
    before, _ = fuzz.run(source, meta=False)
    after, _ = fuzz.run(outcome.source, meta=False)
    assert not isinstance(before, BaseException), before
    assert fix_fuzz.same(before, after), outcome.source
    on_meta, off = fuzz.run(outcome.source, meta=True)
    clean = not isinstance(on_meta, BaseException) and off == []
    return [str(f) for f in outcome.remaining], clean


WHERE = st.sampled_from(["module", "if", "function", "nested"])


@given(
    WHERE,
    st.sampled_from(["torch.randn(2, 4)", "torch.ones(1, 4) * 2", "x0"]),
    st.sampled_from(["", ", mask=None", ", scale=0.5"]),
)
def test_a_function_defined_under_an_if_or_in_a_function_knows_its_callers(
    where: str, arg: str, extra: str
) -> None:
    """Class 1: a function defined under an ``if`` or inside another function was taken
    for one called from elsewhere, and every parameter of it reported (TP520), though
    its only callers pass a tensor, ``None`` or a float. Its callers are those calls."""
    body = (
        "x0 = torch.zeros(1, 4)\n"
        f"def given(net, x{extra}):\n"
        "    out = net(x)\n"
        "    return out\n"
        f"OUT.append(given(model, {arg}).detach())\n"
    )
    left, clean = placed(MODEL + wrap(body, where))
    assert clean, left
    assert left == []


@given(WHERE, st.sampled_from(["OUT", "records"]))
def test_an_item_appended_to_a_list_never_read_back_meets_nothing(where: str, name: str) -> None:
    """Class 2: a list that is only appended to (``OUT.append(...)``, records) holds
    device outputs; an output moved back to the CPU, or a function's name, appended to
    it was reported as meeting the model (TP523). Its items never meet each other."""
    body = (
        (f"{name} = []\n" if name != "OUT" else "")
        + f"{name}.append(model(torch.ones(1, 4)).detach())\n"
        + "CPU = torch.device('cpu')\n"
        + f"{name}.append(model(torch.ones(1, 4)).to(CPU).detach())\n"
        + f"{name}.append(wrap.__name__)\n"
        + (f"if {name} is not None:\n    OUT.append(len({name}))\n" if name != "OUT" else "")
    )
    left, clean = placed(MODEL + "def wrap():\n    pass\n" + wrap(body, where))
    assert clean, left
    assert left == []


def test_a_cpu_item_in_a_list_that_is_concatenated_is_still_reported() -> None:
    """Class 2's limit: once the list is read back (``torch.cat``), an item the code put
    on the CPU meets the device items: reported, and the run confirms it."""
    source = MODEL + (
        "outs = []\n"
        "outs.append(model(torch.ones(1, 4)))\n"
        "outs.append(model(torch.ones(1, 4)).to('cpu'))\n"
        "OUT.append(torch.cat(outs).detach())\n"
    )
    left, clean = placed(source)
    assert not clean and any("TP523" in f for f in left), left


BUFFER = (
    "class Buffer:\n"
    "    def __init__(self):\n"
    "        self.items = [[float(i)] * 4 for i in range(4)]\n"
    "    def {method}(self, n):\n"
    "        rows = self.items[:n]\n"
    "        return torch.tensor(rows), torch.tensor([[1.0, 0.0]] * n)\n"
)


@given(
    WHERE,
    st.sampled_from(["sample", "get_batch", "draw"]),
    st.sampled_from(["batch_size", "2"]),
)
def test_an_object_is_not_what_to_move_what_its_method_returns_is(
    where: str, method: str, size: str
) -> None:
    """Class 3: a replay buffer handed to a training function (``memory.sample(n)``)
    was reported as the value to move (TP520 on ``memory``, TP523 "made by
    ``Buffer()``"); no tensor has ``.sample``. What meets the model is what the call
    returns, on the CPU: that is reported, once, by the call's name."""
    train = (
        "def train(net, memory, batch_size):\n"
        f"    s, target = memory.{method}({size})\n"
        "    out = net(s)\n"
        "    return ((out - target) ** 2).mean()\n"
    )
    body = "memory = Buffer()\nOUT.append(train(model, memory, 2).detach())\n"
    source = MODEL + BUFFER.format(method=method) + train + wrap(body, where)
    left, clean = placed(source)
    assert not clean  # the batch is on the CPU: a real leftover, so it must be reported
    assert len(left) == 1, left
    assert f"`memory.{method}({size})`" in left[0], left
    assert "`memory`" not in left[0] and "Buffer()" not in left[0], left


@given(st.sampled_from(["64", "0.99", "'train'", "True"]))
def test_a_parameter_with_a_number_default_is_no_tensor_to_move(default: str) -> None:
    """Class 4: ``def train(self, buffer, batch_size=64)`` called from another file:
    ``batch_size`` was reported (TP520) as maybe a tensor; its default says it is a
    number (or a string), and it is used as one."""
    source = MODEL + (
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.net = model\n"
        f"    def act(self, k={default}):\n"
        "        x = torch.ones(1, 4)\n"
        "        return self.net(x) * (1 if k else 0)\n"
    )
    left = [str(f) for f in port_text(source).remaining]
    assert not any("`k`" in f for f in left), left


@given(st.sampled_from(["0", "0.99", "discount", "'DISCRETE'"]))
def test_an_attribute_the_class_sets_to_a_number_is_no_tensor(value: str) -> None:
    """Class 5: ``self.total_it`` (``= 0``, ``+= 1``) or ``self.discount`` (a number,
    or a parameter whose default is one) was reported (TP523) as made where the port
    cannot follow. A tensor attribute (``self.scale = torch.ones(2)``) still is."""
    bump = "        self.value += 1\n" if value != "'DISCRETE'" else ""
    use = "self.value" if value != "'DISCRETE'" else "(self.value == 'DISCRETE')"
    source = MODEL + (
        "class Agent:\n"
        "    def __init__(self, discount=0.99):\n"
        "        self.net = model\n"
        f"        self.value = {value}\n"
        "        self.scale = torch.ones(2)\n"
        "    def step(self):\n"
        f"{bump}"
        "        out = self.net(torch.ones(1, 4))\n"
        f"        return out * {use} * self.scale\n"
        "agent = Agent()\n"
        "OUT.append(agent.step().detach())\n"
    )
    left, clean = placed(source)
    assert not clean  # `self.scale` is a CPU tensor meeting a device output
    assert not any("`self.value`" in f for f in left), left
    assert any("`self.scale`" in f for f in left), left


def test_a_loop_over_two_models_parameters_puts_no_model_in_a_container() -> None:
    """Class 6: ``for to_model, from_model in zip(to_model.parameters(), ...)`` (the
    loop reusing the models' names, as DeepRL code does): the loop's target tuple was
    taken for a container the models go into (TP523)."""
    source = MODEL + (
        "target = torch.nn.Linear(4, 2)\n"
        "def soft_update(from_model, to_model, tau):\n"
        "    for to_model, from_model in zip(to_model.parameters(), from_model.parameters()):\n"
        "        to_model.data.copy_(tau * from_model.data + (1.0 - tau) * to_model.data)\n"
        "soft_update(model, target, 0.5)\n"
        "OUT.append(target(torch.ones(1, 4)).detach())\n"
    )
    left, clean = placed(source)
    assert clean, left
    assert not any("goes into a tuple" in f for f in left), left


@given(WHERE)
def test_what_a_partial_of_the_model_is_called_with_is_moved(where: str) -> None:
    """Class 7: ``f = functools.partial(step, model)``: what ``f`` is called with goes
    to the model, so it is moved as a forward's input is (it was left on the CPU). The
    port follows ``step`` (``model`` in ``m``, ``f``'s arguments in the rest), so a
    tensor ``step`` makes is moved too and the partial, only ever called, is no escape
    (it was reported, TP523, though the run was clean)."""
    body = "y = f(torch.ones(1, 4))\nOUT.append(y.detach())\n"
    source = (
        MODEL
        + (
            "import functools\n"
            "def step(m, x):\n"
            "    return m(x) * torch.ones(2)\n"
            "f = functools.partial(step, model)\n"
        )
        + wrap(body, where)
    )
    left, clean = placed(source)
    assert clean, left
    assert left == [], left


def test_a_partial_handed_on_is_still_reported() -> None:
    """Class 7's limit: a partial of the model handed to another function (its calls out
    of the port's sight) is still reported."""
    source = MODEL + (
        "import functools\n"
        "def step(m, x):\n"
        "    return m(x) * torch.ones(2)\n"
        "def run(g):\n"
        "    return g(torch.ones(1, 4))\n"
        "OUT.append(run(functools.partial(step, model)).detach())\n"
    )
    left, _ = placed(source)
    assert any("functools.partial" in f for f in left), left


@given(
    WHERE,
    st.sampled_from(
        [
            "for m in [model]:\n    y = m(torch.ones(1, 4))\n",
            "models = {'a': model}\ny = models['a'](torch.ones(1, 4))\n",
            "pair = (model, model)\ny = pair[0](torch.ones(1, 4))\n",
        ]
    ),
)
def test_what_a_model_taken_from_a_literal_is_called_with_is_moved(where: str, use: str) -> None:
    """Class 9: a model taken back out of a list, tuple or dict literal (``for m in
    [model]``, ``models["a"](x)``): its input was left on the CPU (moved before only when
    the output went into ``OUT``, which class 2 no longer counts as meeting the model),
    and the container reported (TP523). The input is moved as a forward's input, and a
    container whose models are only taken out to be called is no escape: nothing said."""
    body = use + "OUT.append(y.detach())\n"
    left, clean = placed(MODEL + wrap(body, where))
    assert clean, left
    assert left == []


def test_a_container_of_models_handed_on_is_still_reported() -> None:
    """Class 9's limit: a dict of models handed to a function (its forwards out of the
    flow's sight, its input made on the CPU there) is still reported, and the run shows
    why."""
    source = MODEL + (
        "models = {'a': model}\n"
        "def run_all(ms):\n"
        "    return [m(torch.ones(1, 4)) for m in ms.values()]\n"
        "y = models['a'](torch.ones(1, 4))\n"
        "OUT.append([t.detach() for t in run_all(models)])\n"
    )
    left, clean = placed(source)
    assert not clean
    assert any("goes into a dict" in f for f in left), left


@given(
    WHERE,
    st.sampled_from(
        [
            "data.narrow(0, 0, n * batch_size)",
            "data.view(batch_size, -1)",
            "data.reshape(batch_size, -1)",
            "data.narrow(0, 0, n * batch_size).view(batch_size, -1)",
        ]
    ),
)
def test_a_size_handed_to_a_tensor_shape_method_is_no_data(where: str, shaped: str) -> None:
    """Class 10 (locuslab/TCN's ``batchify``, three copies in the n31 sample): ``batch_size``
    in ``data.narrow(0, 0, n * batch_size)`` / ``data.view(batch_size, -1)`` was taken for
    data meeting the device tensor and reported (TP520: "cannot tell whether the argument
    `batch_size` is a tensor"), in a function nobody in the file calls. A shape method's
    arguments are sizes; the function's data is still followed."""
    body = (
        "def batchify(data, batch_size):\n"
        "    n = data.size(0) // batch_size\n"
        f"    data = {shaped}\n"
        "    return model(data.float())\n"
    )
    source = MODEL + wrap(body, where)
    left = [str(f) for f in port_text(source).remaining]
    assert not any("`batch_size`" in f for f in left), left
    assert any("`data`" in f for f in left), left  # data of unknown callers: still said


@given(st.sampled_from(["use_cuda", "args.cuda", "not args.no_cuda"]), st.booleans())
def test_data_the_script_moves_where_it_moves_its_model_is_not_reported(
    flag: str, same_guard: bool
) -> None:
    """Class 11 (locuslab/TCN: ``if args.cuda: model.cuda(); X_train = X_train.cuda()``):
    the script places its model and its data itself, under its own flag; the port moves
    neither, and the data's CPU binding was reported (TP521/TP523) as if it met a model the
    port had put on the accelerator. Moved under another condition, it is still said."""
    guard = flag if same_guard else "X.dim() > 1"
    source = (
        "import argparse\nimport torch\n"
        "args = argparse.Namespace(cuda=False, no_cuda=True)\n"
        "use_cuda = torch.cuda.is_available()\n"
        "model = torch.nn.Linear(4, 2)\n"
        "def make():\n"
        "    data = {'x': torch.randn(2, 4)}\n"
        "    return data['x']\n"
        "X = make()\n"
        f"if {flag}:\n"
        "    model.cuda()\n"
        f"if {guard}:\n"
        "    X = X.cuda()\n"
        "OUT.append(model(X).detach())\n"
    )
    last = source.count("\n")  # the line where `X` meets the model
    left = port_text(source).remaining
    about_x = [f for f in left if f.line == last and f.code in ("TP521", "TP523")]
    assert (about_x == []) is same_guard, [str(f) for f in left]


ARGUMENTS = st.sampled_from(
    [
        ("'--gamma', type=float, default=0.99", "args.gamma"),
        ("'--n-step', type=int, default=3", "args.n_step"),
        ("'--mode', type=str, default='train'", "(args.mode == 'train')"),
        ("'-s', '--scale', default=2.0", "args.scale"),
        ("'--no-norm', action='store_true'", "args.no_norm"),
        ("'--clip', dest='max_clip', type=float, default=0.5", "args.max_clip"),
    ]
)


@given(WHERE, ARGUMENTS, st.sampled_from(["parse_args([])", "parse_known_args([])[0]"]))
def test_a_setting_argparse_makes_is_no_tensor(
    where: str, argument: tuple[str, str], parse: str
) -> None:
    """Class 12 (ikostrikov/pytorch-trpo's ``args.gamma``, ``args.l2_reg``, ``args.max_kl``:
    four TP523 in the n31c sample): an attribute of ``parser.parse_args()`` declared with
    ``type=float``/``int``/``str``, a flag, or a literal default is a number, string or bool
    argparse made from the command line; it was reported as "made by `args.gamma`, which
    the port cannot follow"."""
    declared, use = argument
    body = (
        "import argparse\n"
        "parser = argparse.ArgumentParser()\n"
        f"parser.add_argument({declared})\n"
        f"args = parser.{parse}\n"
        "out = model(torch.ones(1, 4))\n"
        f"OUT.append((out * {use}).detach())\n"
    )
    left, clean = placed(MODEL + wrap(body, where))
    assert clean, left
    assert not any("`args." in f for f in left), left


@given(st.booleans())
def test_a_tensor_setting_of_argparse_is_still_reported(stored: bool) -> None:
    """Class 12's other side: a ``type=`` that makes a tensor (argparse runs it on a string
    default too), or a setting the file stores a tensor into, may be a CPU tensor meeting
    the model: still reported."""
    if stored:
        declared = "type=float, default=2.0"
        after = "args.scale = torch.full((2,), args.scale)\n"
    else:
        declared = "type=lambda s: torch.full((2,), float(s)), default='2.0'"
        after = ""
    source = MODEL + (
        "import argparse\n"
        "parser = argparse.ArgumentParser()\n"
        f"parser.add_argument('--scale', {declared})\n"
        "args = parser.parse_args([])\n"
        f"{after}"
        "OUT.append((model(torch.ones(1, 4)) * args.scale).detach())\n"
    )
    left, clean = placed(source)
    assert not clean
    assert any("`args.scale`" in f for f in left), left


@given(
    st.sampled_from(
        [
            "torch.linspace(0, 1, 2).to(device=dev)",
            "torch.tensor([1.0, 2.0], device=self.device)",
            "torch.ones(2, device=dev) * 0.5",
            "torch.zeros(2).to(self.device) + 1",
        ]
    ),
    st.booleans(),
)
def test_an_attribute_made_on_the_device_is_placed(made: str, cpu_store_too: bool) -> None:
    """Class 13 (Kaixhin/Rainbow's ``self.support = torch.linspace(...).to(device=
    args.device)`` and ``self.n_step_scaling = torch.tensor(..., device=self.device)``:
    three TP523 in the n31c sample): an attribute every store of which makes its tensor on
    the code's own device (or moves it there) is on the device; it was reported as "made
    by `self.support`, which the port cannot follow". One store on the CPU and it is
    still reported."""
    reset = "    def reset(self):\n        self.support = torch.ones(2)\n" if cpu_store_too else ""
    source = (
        "import torch\n\ntorch.manual_seed(0)\ndevice = torch.device('cpu')\n"
        "model = torch.nn.Linear(4, 2).to(device)\n"
        "class Agent:\n"
        "    def __init__(self, dev):\n"
        "        self.device = dev\n"
        "        self.net = model\n"
        f"        self.support = {made}\n"
        f"{reset}"
        "    def act(self, x):\n"
        "        return self.net(x) * self.support\n"
        "agent = Agent(device)\n"
        + ("agent.reset()\n" if cpu_store_too else "")
        + "OUT.append(agent.act(torch.ones(1, 4).to(device)).detach())\n"
    )
    left, clean = placed(source)
    assert clean is not cpu_store_too, left
    assert any("`self.support`" in f for f in left) is cpu_store_too, left


@given(
    st.sampled_from(
        ["lr_actor", "actor_lr", "lr_critic", "policy_noise", "model_path", "n_critics"]
    ),
    st.sampled_from(["", "=3e-4", "=None"]),
)
def test_a_setting_named_after_a_model_is_no_model(name: str, default: str) -> None:
    """Class 14 (nikhilbarhate99/PPO-PyTorch's ``{'params': self.policy.actor.parameters(),
    'lr': lr_actor}``: two TP523 in the n31c sample): a parameter whose name joins a model
    word with a setting's (``lr_actor``, ``policy_noise``, ``model_path``) was taken for a
    model, and the optimizer's parameter group for "a dict the model goes into". So was
    one whose default is a number (``actor=3e-4``). A model so named still is one."""
    source = MODEL + (
        f"def make(net, {name}{default}, actor=0.1):\n"
        f"    group = {{'params': net.parameters(), 'lr': {name} or 0.1, 'momentum': actor}}\n"
        "    return torch.optim.SGD([group])\n"
        f"opt = make(model, {name}=0.1)\n"
        "OUT.append(model(torch.ones(1, 4)).detach())\n"
    )
    left, clean = placed(source)
    assert clean, left
    assert not any("goes into a dict" in f for f in left), left


def test_a_model_named_as_one_in_a_dict_is_still_reported() -> None:
    """Class 14's other side: ``{'actor': actor}`` with ``actor`` a model parameter."""
    source = MODEL + (
        "def make(actor):\n"
        "    nets = {'actor': actor}\n"
        "    return nets\n"
        "nets = make(model)\n"
        "OUT.append(nets['actor'](torch.ones(1, 4)).detach())\n"
    )
    left = [str(f) for f in port_text(source).remaining]
    assert any("goes into a dict" in f for f in left), left


SIBLINGS = st.sampled_from(
    [
        # (what the imported module holds, whether it is torch the file gets through it)
        ("import tensorflow as tf\n\ndef mlp(x):\n    return tf.layers.dense(x, 2)\n", False),
        ("import numpy as np\n\nclass Buffer:\n    def __init__(self):\n"
         "        self.obs = np.zeros(4)\n", False),
        ("import torch\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
         "        super().__init__()\n        self.fc = torch.nn.Linear(4, 2)\n", True),
        ("import torch\n\nSCALE = torch.ones(2)\n", True),
    ]
)  # fmt: skip


@given(SIBLINGS, st.sampled_from(["from pkg import core", "import pkg.core as core"]))
def test_a_file_without_torch_importing_no_torch_is_no_pytorch_program(
    sibling: tuple[str, bool], spelled: str
) -> None:
    """Class 15 (openai/spinningup's ``algos/tf1``: 67 TP520-TP523 on TensorFlow files
    when checked from the repository's root): a file with no torch in it that imports a
    module of its project was a PyTorch program whatever the module held, so a parameter
    named ``actor_critic`` was a model and everything it met reported. A project module
    makes a file without torch one only when it gives it something torch (a model class,
    a factory, a tensor, a device)."""
    import tempfile

    from torchport.check.port import port_paths

    held, torch_given = sibling
    user = (
        f"{spelled}\n\n"
        "def train(env_fn, actor_critic=core.mlp, gamma=0.99):\n"
        "    pi = actor_critic(env_fn())\n"
        "    return pi * gamma\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pkg").mkdir()
        (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
        (root / "pkg" / "core.py").write_text(held, encoding="utf-8")
        (root / "pkg" / "train.py").write_text(user, encoding="utf-8")
        result = port_paths([root / "pkg" / "train.py"], diff=True, jobs=1)
    if not torch_given:
        assert result.remaining == [], [str(f) for f in result.remaining]
    else:
        assert result.remaining, "a torch module's user says nothing"


@given(
    st.sampled_from(["torch.nn.Linear(4, 2)", "make()", "torch.nn.Sequential(*[make()])"]),
    st.sampled_from(
        [
            "get_policy(torch.ones(1, 4))",
            "get_policy(torch.as_tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float32))",
            "get_policy(obs=x0)",
            "get_action(x0)",
        ]
    ),
    st.sampled_from(["function", "nested"]),
)
def test_a_closure_over_the_enclosing_functions_model_gets_its_input_moved(
    built: str, call: str, where: str
) -> None:
    """A silent leftover (openai/spinningup's ``pg_math/1_simple_pg.py``, found running
    the n31d sample ported on ``sim``): ``def train(): logits_net = mlp(...); def
    get_policy(obs): return logits_net(obs)``, called with a CPU tensor. The closure's
    free name was looked up in the module's models only, so ``logits_net(obs)`` was no
    forward to the port: nothing moved, nothing reported ("0 left"), and the program
    stopped on the device. A free name is the enclosing function's, up to the module."""
    relay = "def get_action(obs):\n    return get_policy(obs) * 2\n" if "action" in call else ""
    body = (
        f"net = {built}\n"
        "x0 = torch.ones(1, 4)\n"
        "def get_policy(obs):\n"
        "    return net(obs)\n"
        f"{relay}"
        f"OUT.append({call}.detach())\n"
    )
    source = MODEL + "def make():\n    return torch.nn.Linear(4, 2)\n" + wrap(body, where)
    left, clean = placed(source)
    assert clean or left, "data left off the device and nothing said"
    assert clean, left


@given(
    st.sampled_from(
        [
            ("net(obs)", "(get_policy(obs) * act).sum()"),
            ("net(obs) * 2", "torch.cat([get_policy(obs), act], 1).sum()"),
            (
                "torch.distributions.Categorical(logits=net(obs), validate_args=False)",
                "get_policy(obs).log_prob(act.long().view(-1)).sum()",
            ),
        ]
    ),
    st.sampled_from(["module", "function", "nested"]),
)
def test_what_meets_a_forward_returned_by_a_function_is_moved(
    returned: tuple[str, str], where: str
) -> None:
    """A silent leftover (openai/spinningup's ``pg_math``: ``-(get_policy(obs).log_prob(act)
    * weights).mean()``, found running the n31d sample ported on ``sim``): a call of the
    file's function that returns the model's output was no device value where it is
    made, so what meets it there (``act``, a CPU tensor its caller passes) was neither
    moved nor reported ("0 left"), and the program stopped on the device."""
    made, use = returned
    body = (
        "net = model\n"
        "def get_policy(obs):\n"
        f"    return {made}\n"
        "def compute_loss(obs, act):\n"
        f"    return {use}\n"
        "OUT.append(compute_loss(torch.ones(1, 4), torch.ones(1, 2)).detach())\n"
    )
    left, clean = placed(MODEL + wrap(body, where))
    assert clean or left, "data left off the device and nothing said"
    assert clean, left


@given(
    WHERE,
    st.sampled_from(["1", "0.5", "-1", "2.0"]),
    st.sampled_from(["=", "*="]),
    st.booleans(),
)
def test_a_number_stored_on_an_object_from_outside_keeps_its_attribute_a_number(
    where: str, literal: str, op: str, tensor: bool
) -> None:
    """A2C's ``self.I = 1`` (``self.I *= self.GAMMA`` in ``learn``), reset from the main
    loop by ``agent.I = 1``: a store outside the class made the attribute unknown, and
    ``-self.I * adv`` was reported (TP523, noise). A number stored from outside is no
    tensor; a tensor stored from outside (``agent.I = torch.ones(2)``) stays reported,
    and the run confirms it."""
    value = "torch.ones(2)" if tensor else literal
    body = (
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.I = 1\n"
        "        self.gamma = 0.5\n"
        "    def learn(self, x):\n"
        "        out = model(x) * self.I\n"
        "        self.I *= self.gamma\n"
        "        return out\n"
        "agent = Agent()\n"
        "OUT.append(agent.learn(torch.ones(1, 4)).detach())\n"
        f"agent.I {op} {value}\n"
        "OUT.append(agent.learn(torch.ones(1, 4)).detach())\n"
    )
    left, clean = placed(MODEL + wrap(body, where))
    if tensor:
        assert not clean and left, left
    else:
        assert clean, left
        assert left == [], left


SETTINGS_CLASS = (
    "class Params({base}):\n"
    "    def __init__(self):\n"
    "        self.gamma = 0.99\n"
    "        self.clip = 0.2\n"
    "        self.num = 4\n"
    "        self.update = self.num - 1\n"
    "        self.name = 'run'\n"
    "        self.scale = {scale}\n"
)


@given(
    WHERE,
    st.sampled_from(["", "object"]),
    st.sampled_from(["0.5", "torch.full((1,), 0.5)"]),
    st.sampled_from(["", "params.gamma = 0.9\n", "params.gamma = torch.ones(1) * 0.9\n"]),
)
def test_an_attribute_of_a_settings_object_the_file_makes_is_a_number(
    where: str, base: str, scale: str, outside: str
) -> None:
    """Class 7 (n31f, Pytorch-DPPO's ``params = Params()`` then ``params.gamma``): the
    attribute of an object of the file's own base-less class, every store of which in
    the class is a number or string, was reported (TP523 "made by ``params.gamma``").
    What the class's methods (and the file, from outside) store there decides: a tensor
    stored in the class (``self.scale = torch.full(...)``) or from outside
    (``params.gamma = torch.ones(1) * 0.9``) is still reported, and the run confirms it."""
    body = (
        "params = Params()\n"
        f"{outside}"
        "def train(x):\n"
        "    out = model(x) * params.gamma\n"
        "    out = out.clamp(1 - params.clip, 1 + params.clip) * params.update\n"
        "    OUT.append((out * params.scale).detach())\n"
        "train(torch.ones(1, 4))\n"
    )
    source = MODEL + SETTINGS_CLASS.format(base=base, scale=scale) + wrap(body, where)
    left, clean = placed(source)
    tensor_gamma = "torch" in outside
    tensor_scale = "torch" in scale
    assert clean == (not tensor_gamma and not tensor_scale), (left, clean)
    assert any("`params.scale`" in f for f in left) == tensor_scale, left
    if not tensor_gamma:
        assert not any("`params.gamma`" in f for f in left), left
    else:
        assert any("params.gamma" in f for f in left), left
    assert not any("params.clip" in f or "params.update" in f for f in left), left


@given(
    st.sampled_from(["", "        self.scale = torch.ones(2)\n", "    def scaled(self, x):\n"
                     "        return x * torch.ones(2)\n"]),
    st.sampled_from(["Params()", "Params(0.99)"]),
)  # fmt: skip
def test_a_settings_object_handed_with_the_model_is_no_tensor(extra: str, made: str) -> None:
    """Class 7's object (Pytorch-DPPO's ``main.py``): ``params = Params()`` handed with the
    model to another module's function (``mp.Process(target=test, args=(params.n, params,
    model, n))``) was reported (TP523 "made by ``Params()``", and ``params.n``). An object
    of a base-less class with no method but ``__init__``, storing only numbers and strings,
    holds nothing to move; one that stores a tensor, or has a method that could give one,
    is reported as before."""
    import tempfile

    from torchport.check.port import port_paths

    init = "    def __init__(self, gamma=0.5):\n" if "0.99" in made else "    def __init__(self):\n"
    main = (
        "import torch\nimport torch.multiprocessing as mp\n\nfrom worker import work\n\n\n"
        f"class Params:\n{init}"
        "        self.seed = 1\n        self.n = 4\n" + ("        self.gamma = gamma\n" if
        "0.99" in made else "") + extra + "\n\n"
        "if __name__ == '__main__':\n"
        f"    params = {made}\n"
        "    model = torch.nn.Linear(4, 2)\n"
        "    n = torch.zeros(1)\n"
        "    p = mp.Process(target=work, args=(params.n, params, model, n))\n"
    )  # fmt: skip
    worker = (
        "import torch\n\n\ndef work(rank, params, model, n):\n"
        "    torch.manual_seed(params.seed + rank)\n"
        "    return model(torch.ones(1, 4)) + n\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "main.py").write_text(main, encoding="utf-8")
        (root / "worker.py").write_text(worker, encoding="utf-8")
        result = port_paths([root / "main.py"], diff=True, jobs=1)
    left = [str(f) for f in result.remaining if "main.py" in str(f.path)]
    about_params = [f for f in left if "Params(" in f or "params.n" in f]
    assert about_params == [] if not extra else about_params, left
    assert any("goes into a tuple" in f for f in left), left  # the model: as before


NUMPY_BUFFER = (
    "import numpy as np\n"
    "import torch\n\n"
    "torch.manual_seed(0)\n"
    "model = torch.nn.Linear(4, 2)\n"
    "class AC(torch.nn.Module):\n"
    "    def __init__(self):\n"
    "        super().__init__()\n"
    "        self.v = torch.nn.Linear(4, 1)\n"
    "    def step(self, obs):\n"
    "        with torch.no_grad():\n"
    "            return {returned}\n"
    "class Buffer:\n"
    "    def __init__(self, n=3, gamma=0.5):\n"
    "        self.rew_buf = np.zeros(n, dtype=np.float32)\n"
    "        self.val_buf = np.zeros(n, dtype=np.float32)\n"
    "        self.gamma = gamma\n"
    "    def store(self, i, r, v):\n"
    "        self.rew_buf[i] = r\n"
    "        self.val_buf[i] = v\n"
    "    def finish_path(self, last_val=0):\n"
    "        rews = np.append(self.rew_buf[0:3], last_val)\n"
    "        vals = np.append(self.val_buf[0:3], last_val)\n"
    "        return rews[:-1] + self.gamma * vals[1:] - vals[:-1]\n"
)


@given(
    WHERE,
    st.sampled_from(["self.v(obs).numpy()[0, 0]", "self.v(obs).item()", "self.v(obs)[0, 0]"]),
)
def test_numpy_buffers_on_self_and_a_model_method_returning_numpy_are_no_device_values(
    where: str, returned: str
) -> None:
    """Class 8 (spinningup's PPOBuffer, n31d's sample): ``self.rew_buf = np.zeros(n)``
    read by ``np.append(self.rew_buf[...], last_val)``, ``last_val`` from ``ac.step(obs)``
    of the file's own model class returning ``.numpy()``: the buffer was "made where the
    port cannot follow" (TP523) and ``last_val`` a model output numpy reads (TP522). A
    method of the file's model class whose every return is ``.numpy()`` / ``.item()`` /
    ``.tolist()`` gives host values; an attribute every store of which is numpy is numpy.
    A method that returns the tensor itself (``self.v(obs)[0, 0]``) is still a device
    value numpy reads: reported (TP522), and the run confirms it; the numpy buffer it
    meets is not named as a tensor to move."""
    body = (
        "ac = AC()\n"
        "buf = Buffer()\n"
        "for i in range(3):\n"
        "    buf.store(i, 0.5 * i, ac.step(torch.ones(1, 4) * i))\n"
        "OUT.append(buf.finish_path(ac.step(torch.ones(1, 4))).tolist())\n"
        "adv = torch.as_tensor(buf.finish_path()).sum()\n"
        "OUT.append((model(torch.ones(1, 4)) * adv).detach())\n"
    )
    left, clean = placed(NUMPY_BUFFER.format(returned=returned) + wrap(body, where))
    if "numpy()" in returned or "item()" in returned:
        assert clean, left
        assert left == [], left
    else:
        assert not clean, left
        assert any("TP522" in f for f in left), left  # the output numpy reads: `.cpu()` it
        assert not any("_buf`" in f for f in left), left  # not "move the numpy buffer"


@given(
    WHERE,
    st.sampled_from(
        ["torch.from_numpy(state).float()", "torch.FloatTensor(state)",
         "torch.tensor(state, dtype=torch.float32)", "torch.as_tensor(state).float()"]
    ),
    st.sampled_from(["state", "s"]),
)  # fmt: skip
def test_a_forward_converting_its_numpy_input_makes_the_tensor_where_the_model_is(
    where: str, made: str, name: str
) -> None:
    """Class 9 (nikhilbarhate99/Actor-Critic-PyTorch, n31f's sample): ``def forward(self,
    state): state = torch.from_numpy(state).float(); state = F.relu(self.affine(state))``
    was ported to ``torch.from_numpy(state).to(state.device)``: the rebound name's use
    (``self.affine(state)``) was taken for the parameter's, and a numpy array's device is
    the CPU, so the ported program stopped at its first forward. A parameter tells the
    device of the inputs only where the read sees the parameter itself; else the tensor is
    made where the model's parameters are."""
    source = MODEL.replace("model = torch.nn.Linear(4, 2)\n", "") + (
        "import numpy as np\n"
        "class Policy(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.affine = torch.nn.Linear(4, 2)\n"
        "    def forward(self, state):\n"
        f"        {name} = {made}\n"
        f"        return torch.relu(self.affine({name})).sum().item()\n"
        "model = Policy()\n"
    )
    body = "for i in range(2):\n    OUT.append(model(np.full(4, 0.5 * i, dtype=np.float32)))\n"
    _, clean = placed(source + wrap(body, where))
    assert clean


@given(
    WHERE,
    st.sampled_from(
        ["torch.tensor(s, dtype=torch.float)", "torch.FloatTensor(s)",
         "torch.from_numpy(s).float()", "torch.as_tensor(s, dtype=torch.float32)"]
    ),
    st.sampled_from(["torch.unsqueeze({}, 0)", "{}.unsqueeze(0)", "{}.view(1, -1)"]),
    st.sampled_from(["s", "x"]),
)  # fmt: skip
def test_a_tensor_made_from_an_argument_of_unknown_callers_is_moved_where_it_is_made(
    where: str, made: str, shaped: str, name: str
) -> None:
    """Class 10 (Lizhi-sjtu/DRL-code-pytorch's ``choose_action(self, s)``, n31e's sample:
    50 real rows, reported, not moved): ``s = torch.unsqueeze(torch.tensor(s, dtype=...),
    0)`` then ``self.policy(s)``, the method's callers elsewhere. ``torch.unsqueeze(data,
    0)`` was taken for the method ``data.unsqueeze(0)`` (whose arguments are sizes), so the
    tensor was not known to reach the model and was left on the CPU, and the argument was
    reported (TP520) though what meets the model is the tensor made of it. The tensor is
    moved where it is made; the argument, read only as a creator's data, is not reported."""
    source = MODEL + (
        "import numpy as np\n"
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.policy = model\n"
        "    def choose_action(self, s):\n"
        f"        {name} = {shaped.format(made)}\n"
        f"        return self.policy({name}).detach()\n"
    )
    body = (
        "agent = Agent()\n"
        "act = agent.choose_action\n"  # handed on: its callers are not all in the file
        "for i in range(2):\n"
        "    OUT.append(act(np.full(4, 0.5 * i, dtype=np.float32)))\n"
    )
    left, clean = placed(source + wrap(body, where))
    assert clean, left
    assert left == [], left


@given(
    WHERE,
    st.sampled_from(
        ["torch.from_numpy(state).float()", "torch.tensor(state, dtype=torch.float)",
         "state.float()"]
    ),
)  # fmt: skip
def test_what_a_forward_converts_itself_is_no_value_to_move(where: str, made: str) -> None:
    """Class 11 (Actor-Critic-PyTorch's ``policy(state)``, ``state`` from the environment,
    the forward doing ``state = torch.from_numpy(state).float()``): the state handed in was
    reported (TP521 "comes from ``env.step``, move it yourself"): a numpy array, which the
    forward makes its own tensor of, on the model's device once ported. A forward input read
    only as a torch creator's data is no value to move. A forward that uses its input as it
    is (``state.float()``) is handed a tensor: moved or reported, never left silent."""
    converts = "torch." in made
    source = MODEL.replace("model = torch.nn.Linear(4, 2)\n", "") + (
        "import numpy as np\n"
        "import fakelib\n"
        "class Policy(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.affine = torch.nn.Linear(4, 2)\n"
        "    def forward(self, state):\n"
        f"        x = {made}\n"
        "        return self.affine(x).sum().detach()\n"
        "model = Policy()\n"
        "scaler = fakelib.StandardScaler()\n"
    )
    given = "scaler.fit_transform(np.full((1, 4), 0.5 * i))"
    body = (
        "for i in range(2):\n"
        f"    state = {given if converts else f'torch.as_tensor({given})'}\n"
        "    OUT.append(model(state))\n"
    )
    left, clean = placed(source + wrap(body, where))
    if converts:
        assert clean, left
        assert left == [], left
    else:
        assert clean or left, "a CPU tensor handed to the model, and nothing said"


@given(st.sampled_from(["from model import Policy", "import model"]))
def test_what_a_project_models_forward_converts_itself_is_no_value_to_move(spelled: str) -> None:
    """Class 11 across files (``from model import ActorCritic`` in ``train.py``): the
    project view records, per model class, the forward inputs it makes its own tensor of."""
    import tempfile

    from torchport.check.port import port_paths

    made = "Policy()" if spelled.startswith("from") else "model.Policy()"
    user = (
        f"import fakelib\nimport numpy as np\n{spelled}\n\n"
        f"policy = {made}\n"
        "scaler = fakelib.StandardScaler()\n"
        "for i in range(2):\n"
        "    state = scaler.fit_transform(np.full((1, 4), 0.5 * i))\n"
        "    print(policy(state))\n"
    )
    held = (
        "import torch\n\n\nclass Policy(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.affine = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, state):\n"
        "        state = torch.from_numpy(state).float()\n"
        "        return self.affine(state).sum().item()\n"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "model.py").write_text(held, encoding="utf-8")
        (root / "train.py").write_text(user, encoding="utf-8")
        result = port_paths([root / "train.py"], diff=True, jobs=1)
    left = [str(f) for f in result.remaining]
    if spelled.startswith("from"):
        assert left == [], left
    else:  # `model.Policy()` through the module: not told here, reported as before
        assert any("fit_transform" in f for f in left), left


WORKER = (
    "import torch\n\n\n"
    "def _update(args, counter, loss, opt):\n"
    "    opt.zero_grad()\n"
    "    loss.backward()\n"
    "    opt.step()\n"
    "    counter.increment()\n"
    "    return args.lr * counter.value(){uses}\n\n\n"
    "def work(rank, args, counter, model, opt):\n"
    "    torch.manual_seed(args.seed + rank)\n"
    "    tag = str(args.{meta})\n"
    "    h = torch.zeros(1, args.hidden)\n"
    "    out = model({input})\n"
    "    return [tag, {handed}]\n"
)
HANDED = {
    "positional": "_update(args, counter, out.sum(), opt)",
    "keyword": "_update(args=args, counter=counter, loss=out.sum(), opt=opt)",
}


@given(
    st.sampled_from(sorted(HANDED)),
    st.sampled_from(["name", "shape", "seed"]),
    st.sampled_from(["object", "tensor here", "tensor there"]),
)
def test_settings_and_helpers_handed_on_to_the_files_functions_are_no_tensors(
    handed: str, meta: str, args_is: str
) -> None:
    """Class 12 (ACER's ``train.py``/``test.py``, n31f's sample: 3 rows): a worker's
    ``args`` (an argparse namespace), ``T`` (a multiprocessing counter) and ``optimiser``,
    called from another module, were reported (TP520 "cannot tell whether the argument
    `args` is a tensor") because a read of them handed them on to another function of the
    file (``_update_networks(args, T, ..., optimiser)``), or read ``args.name`` (a tensor
    attribute too). A parameter handed to a function of the file whose parameter there
    holds an object by the same test holds one; ``args.name``-like metadata counts when
    another read shows an object. Where ``args`` is a tensor (it meets the model here, or
    the helper adds it to the loss) it stays reported, and the run confirms it."""
    import tempfile

    from torchport.check.port import port_paths

    worker = WORKER.format(
        uses=" + args.sum()" if args_is == "tensor there" else "",
        meta=meta,
        input="args" if args_is == "tensor here" else "torch.ones(1, 4) + h.sum()",
        handed=HANDED[handed],
    )
    made = (
        "types.SimpleNamespace(seed=1, name='run', shape=(2,), hidden=4, lr=0.5)"
        if args_is == "object"
        else "torch.ones(1, 4)"
    )
    train = (
        "import types\n\nimport torch\n\nfrom utils import Counter\nfrom worker import work\n\n"
        f"args = {made}\n"
        "if isinstance(args, torch.Tensor):  # a tensor takes attributes too\n"
        "    args.seed, args.hidden, args.lr = 1, 4, 0.5\n"
    )
    train += (
        "model = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "tag, got = work(0, args, Counter(), model, opt)\n"
        "OUT.append((tag, float(got.sum()) if hasattr(got, 'sum') else got))\n"
        "OUT.append(model.weight.detach().sum().item())\n"
    )
    utils = (
        "class Counter:\n    def __init__(self):\n        self.n = 0\n\n"
        "    def increment(self):\n        self.n += 1\n\n"
        "    def value(self):\n        return self.n\n"
    )
    files = {"train.py": train, "worker.py": worker, "utils.py": utils}
    project_fuzz.check_project(files)  # no silent leftover, the CPU's values, idempotent
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).write_text(text, encoding="utf-8")
        result = port_paths([root / "worker.py"], diff=True, jobs=1)
    left = [str(f) for f in result.remaining]
    about = [f for f in left if any(f"`{n}`" in f for n in ("args", "counter", "opt"))]
    if args_is == "object":
        assert about == [], left
    else:
        assert any("`args`" in f for f in about), left


@given(
    WHERE,
    st.sampled_from(["torch.tensor(s).reshape(-1, len(s)).float()",
                     "torch.FloatTensor(s).view(1, len(s))"]),
    st.booleans(),
)  # fmt: skip
def test_an_argument_made_into_a_tensor_and_sized_with_len_is_no_value_to_move(
    where: str, made: str, also_raw: bool
) -> None:
    """Class 13 (Gregory-Eales/ml-implementations's ``act(self, s)``, n31g's sample: 5
    rows): ``s = torch.tensor(s).reshape(-1, len(s)).float()`` before the model, the
    callers elsewhere: ``len(s)`` was a read of the argument that is no creator's data, so
    the argument was reported (TP520) though what meets the model is the tensor made of
    it. ``len(s)`` is an int: allowed beside the creator's reads. Where the argument
    itself meets the model too, it stays reported and the run confirms it."""
    source = MODEL + (
        "import numpy as np\n"
        "class Agent:\n"
        "    def __init__(self):\n"
        "        self.policy = model\n"
        "    def act(self, s):\n"
        + ("        raw = self.policy(torch.as_tensor(s) if len(s) < 0 else s)\n" if also_raw
           else "")
        + f"        s = {made}\n"
        "        return self.policy(s).detach()\n"
    )  # fmt: skip
    body = (
        "agent = Agent()\n"
        "act = agent.act\n"  # handed on: its callers are not all in the file
        "for i in range(2):\n"
        "    OUT.append(act(torch.full((4,), 0.5 * i)))\n"
    )
    left, clean = placed(source + wrap(body, where))
    if also_raw:
        assert not clean and any("`s`" in f for f in left), left
    else:
        assert clean, left
        assert left == [], left


@given(
    st.sampled_from(["from .net import Net", "from pkg.net import Net"]),
    st.sampled_from(["self.net(s)", "self.net.forward(s)"]),
    st.sampled_from(["converts", "raw", "also stored"]),
)
def test_what_a_models_forward_held_on_self_converts_is_no_value_to_move(
    spelled: str, call: str, forward: str
) -> None:
    """Class 11 on ``self`` (Gregory-Eales/ml-implementations, n31g's sample: 8 rows):
    ``self.policy_network = PolicyNetwork(...)`` in ``__init__``, then
    ``self.policy_network.forward(observation)`` in a method whose callers are elsewhere,
    the network's forward doing ``torch.Tensor(x)`` itself: the argument was reported
    (TP520). A ``self.`` attribute every store of which in the class is ``Cls(...)`` of one
    class is followed as a name is (and ``m.forward(x)`` as ``m(x)``). A forward that takes
    the tensor as it is, or a second store of something else, stays reported; the run of
    the whole project confirms each."""
    import tempfile

    from torchport.check.port import port_paths

    converts = forward != "raw"
    net = (
        "import torch\n\n\nclass Net(torch.nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.l1 = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n"
        + ("        x = torch.Tensor(x)\n" if converts else "")
        + "        return self.l1(x)\n"
    )
    agent = (
        f"import torch\n{spelled}\n\n\nclass Agent:\n"
        "    def __init__(self, other=None):\n"
        "        self.net = Net()\n"
        + ("        if other is not None:\n            self.net = other\n"
           if forward == "also stored" else "")
        + f"    def act(self, s):\n        return {call}.detach()\n"
    )  # fmt: skip
    train = (
        "import numpy as np\nimport torch\n\nfrom pkg.agent import Agent\n\n"
        "torch.manual_seed(0)\nagent = Agent()\n"
        "for i in range(2):\n"
        "    s = np.full((1, 4), 0.5 * i, dtype=np.float32)\n"
        f"    OUT.append(agent.act({'s' if converts else 'torch.from_numpy(s)'}).sum().item())\n"
    )
    files = {"train.py": train, "pkg/__init__.py": "", "pkg/net.py": net, "pkg/agent.py": agent}
    project_fuzz.check_project(files)  # no silent leftover, the CPU's values, idempotent
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pkg").mkdir()
        for rel, text in files.items():
            (root / rel).write_text(text, encoding="utf-8")
        result = port_paths([root], diff=True, jobs=1)
    left = [str(f) for f in result.remaining if "agent.py" in str(f.path)]
    if forward == "converts":
        assert left == [], left
    else:
        assert any("`s`" in f for f in left), left


@given(
    WHERE,
    st.sampled_from(["self.build()", "self.setup()"]),
    st.sampled_from(["torch.nn.Linear(4, 2)", "torch.nn.Sequential(torch.nn.Linear(4, 2))"]),
    st.booleans(),
)
def test_layers_a_method_only_init_calls_builds_are_not_placed_by_the_parameters(
    where: str, entry: str, layer: str, hidden_too: bool
) -> None:
    """Found running Gregory-Eales/ml-implementations's ``ppo/main.py`` ported (n31g): a
    method ``__init__`` calls to build the layers (``self.define_network()``) was taken for
    a forward-time method, its ``nn.Linear(...)`` ported to ``.to(next(self.parameters())
    .device)``: ``StopIteration`` when the model is made, on the CPU (the original runs). A
    method only ``__init__`` calls (directly or through another) builds the module like
    ``__init__``; one the file also calls elsewhere (``self.reset()`` from ``forward``)
    keeps its tensors placed on the parameters' device, and the run confirms both."""
    source = (
        "import torch\n\ntorch.manual_seed(0)\n\n"
        "class Net(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        f"        {entry}\n"
        + ("    def setup(self):\n        self.build()\n" if "setup" in entry else "")
        + "    def build(self):\n"
        f"        self.fc = {layer}\n"
        "    def reset(self):\n"
        "        return torch.zeros(1, 2)\n"
        "    def forward(self, x):\n"
        + ("        return self.fc(x) + self.reset()\n" if hidden_too
           else "        return self.fc(x)\n")
    )  # fmt: skip
    body = "net = Net()\nOUT.append(net(torch.ones(1, 4)).detach())\n"
    left, clean = placed(source + wrap(body, where))
    assert clean, left
    assert left == [], left


WORKER_BODY = (
    "def work(shared, optimizer, info, out):\n"
    "    local = torch.nn.Linear(4, 2)\n"
    "    local.load_state_dict(shared.state_dict())\n"
    "    y = local(torch.ones(1, 4) * 2){extra}\n"
    "    y.sum().backward()\n"
    "    for p, sp in zip(local.parameters(), shared.parameters()):\n"
    "        sp.grad = p.grad\n"
    "    optimizer.step()\n"
    "    info += 1\n"
    "    out.append(round(float(y.sum()), 4))\n"
)
SHARED_USE = {
    "weights": "",
    "forward": " + shared(torch.ones(1, 4)).sum()",
    "handed on": " + peek(shared).sum()",
}
PROCESSES = {
    "torch": ("import torch.multiprocessing as mp\n", "mp.Process"),
    "stdlib": ("import multiprocessing\n", "multiprocessing.Process"),
    "context": ("import torch.multiprocessing as _mp\n", "_mp.get_context('spawn').Process"),
}


@given(
    st.sampled_from(sorted(SHARED_USE)),
    st.sampled_from(sorted(PROCESSES)),
    st.sampled_from(["this file", "another module"]),
)
def test_a_worker_process_using_the_shared_model_only_for_weights_takes_nothing_to_move(
    use: str, process: str, where: str
) -> None:
    """Class 14 (n31h's sample: 6 rows): the A3C pattern ``mp.Process(target=train,
    args=(shared_model, optimizer, ...))``, where the worker builds its own model and reads
    the shared one only through ``state_dict()``/``parameters()``, was reported at the
    ``Process`` line (TP523 "goes into a tuple"). No tensor meets the shared model in such
    a worker: the tuple is not reported (the other arguments still are, as before: they may
    meet the worker's own model, Pytorch-DPPO's real row). A worker that runs the shared
    model (``shared(x)``) or hands it on still gets the tuple reported, and the run
    (``p.run()``: the worker in this process, the meta accelerator watching) confirms the
    port is never silent about a leftover."""
    import tempfile

    from torchport.check.port import port_paths

    imported, made = PROCESSES[process]
    if process == "context":
        imported += "mp = _mp.get_context('spawn')\n"
        made = "mp.Process"
    worker = WORKER_BODY.format(extra=SHARED_USE[use])
    if use == "handed on":
        worker = "def peek(m):\n    return m(torch.ones(1, 4))\n\n\n" + worker
    train = "import torch\n" + imported + "\n"
    files: dict[str, str] = {}
    if where == "this file":
        train += worker + "\n\n"
    else:
        train += "from worker import work\n\n"
        files["worker.py"] = "import torch\n\n\n" + worker
    train += (
        "torch.manual_seed(0)\n"
        "model = torch.nn.Linear(4, 2)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
        "info = torch.zeros(1)\n"
        f"p = {made}(target=work, args=(model, opt, info, OUT))\n"
        "p.run()  # the worker, in this process\n"
        "OUT.append(round(model.weight.detach().sum().item(), 4))\n"
    )
    files["train.py"] = train
    project_fuzz.check_project(files)  # no silent leftover, the CPU's values, idempotent
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).write_text(text, encoding="utf-8")
        result = port_paths([root / "train.py"], diff=True, jobs=1)
    line = train.splitlines().index(next(t for t in train.splitlines() if "(target=work" in t)) + 1
    at_process = [str(f) for f in result.remaining if f.line == line]
    assert any("goes into a tuple" in f for f in at_process) == (use != "weights"), at_process


STAND_IN_GYM = (
    "import numpy as np\n\n\nclass Env:\n    def reset(self):\n"
    "        return np.ones(4, dtype=np.float32)\n\n\ndef make(name):\n    return Env()\n"
)
DRIVER = (  # a library the port cannot read (not beside the script): places what it feeds
    "import torch\n\n\ndef drive(envs, model):\n"
    "    device, out = next(model.parameters()).device, []\n"
    "    for env in envs if isinstance(envs, list) else [envs]:\n"
    "        x = torch.as_tensor(env.reset(), device=device)\n"
    "        out.append(round(float(model(x).sum()), 4))\n"
    "    return out\n"
)
ENVIRONMENTS = {
    "gym.make": ("", "gym.make('CartPole-v1')"),
    "a function": ("def make_env():\n    return gym.make('CartPole-v1')\n", "make_env()"),
    "a lambda": ("make_env = lambda: gym.make('CartPole-v1')\n", "make_env()"),
    "a list": ("def make_env():\n    return gym.make('CartPole-v1')\n",
               "[make_env() for _ in range(2)]"),
    "a wrapper": ("class Monitor:\n    def __init__(self, env):\n        self.env = env\n"
                  "    def reset(self):\n        return self.env.reset()\n",
                  "Monitor(gym.make('CartPole-v1'))"),
    "no environment": ("class Simulator:\n    def reset(self):\n"
                       "        return np.ones(4, dtype=np.float32)\n", "Simulator()"),
}  # fmt: skip


@given(st.sampled_from(sorted(ENVIRONMENTS)), st.sampled_from(["module", "function"]))
def test_an_environment_object_handed_with_the_model_is_no_value_to_move(
    made: str, where: str
) -> None:
    """Class 15 (n31h's sample: 4 rows, colinskow/move37's ``ExperienceSourceFirstLast(envs,
    agent)``): an environment made by ``gym.make`` (directly, by a function or lambda of the
    file, a list of them, a wrapper given it alone) handed to a library with the model was
    reported as a value to move (TP521 "it comes from ``gym.make``", TP523 "made by
    ``make_env()``"). An environment object is no tensor; what it returns is followed as
    before. An object made any other way (``Simulator()``) is still reported; the run
    confirms nothing is left off the device unsaid."""
    import tempfile

    from torchport.check.port import port_paths

    defs, value = ENVIRONMENTS[made]
    body = f"envs = {value}\ngot = runner.drive(envs, model)\nOUT.extend(got)\n"
    train = (
        "import os\nimport sys\n\n"
        "sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'lib'))\n"
        "import gym\nimport numpy as np\nimport runner\nimport torch\n\n"
        f"{defs}\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(4, 2)\n" + wrap(body, where)
    )
    files = {"train.py": train, "gym.py": STAND_IN_GYM, "lib/runner.py": DRIVER}
    project_fuzz.check_project(files)  # no silent leftover, the CPU's values, idempotent
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        result = port_paths([root / "train.py"], diff=True, jobs=1)
    line = next(i for i, t in enumerate(train.splitlines(), 1) if "runner.drive(" in t)
    at_drive = [str(f) for f in result.remaining if f.line == line]
    assert (at_drive != []) == (made == "no environment"), at_drive


@given(st.booleans(), st.sampled_from(["2.0", "0.5 * 3"]), WHERE)
def test_a_conditional_value_is_named_by_its_branches_never_by_its_test(
    ready: bool, otherwise: str, where: str
) -> None:
    """The issue's "TP523 names the wrong origin" (Khrylx/PyTorch-RL's ``device = ... if
    torch.cuda.is_available() else ...``, n31h's sample): a conditional value's origins were
    its test's too, and the test came first, so the report named ``cfg.ready()`` (a bool)
    as the value to move. A conditional is one of its branches: the report names the
    branch the port cannot follow (``cfg.weights()``), and the run confirms it where that
    branch is taken."""
    source = MODEL + (
        "class Cfg:\n"
        "    def ready(self):\n"
        f"        return {ready}\n"
        "    def weights(self):\n"
        "        return torch.ones(1, 2) * 3\n"
    )
    body = (
        "cfg = Cfg()\n"
        f"w = cfg.weights() if cfg.ready() else {otherwise}\n"
        "OUT.append((model(torch.ones(1, 4)) * w).detach())\n"
    )
    left, clean = placed(source + wrap(body, where))
    assert clean or left, left
    assert any("`cfg.weights()`" in f for f in left), left
    assert not any("`cfg.ready()`" in f for f in left), left


DEFAULTS = {
    "a literal": ("", "19.5"),
    "a negated literal": ("", "-1.5"),
    "a constant": ("GOAL = 0.5\n", "GOAL"),
    "a tensor": ("GOAL = torch.full((1, 2), 0.5)\n", "GOAL"),
    "a constant rebound": ("GOAL = 0.5\nif OUT is not None:\n    GOAL = torch.full((1, 2), 0.5)\n",
                           "GOAL"),
}  # fmt: skip


@given(st.sampled_from(sorted(DEFAULTS)), st.sampled_from(["float", "str"]), WHERE)
def test_a_command_line_setting_whose_default_is_a_module_constant_is_a_number(
    default: str, kind: str, where: str
) -> None:
    """colinskow/move37's ``add_argument("--reward", type=float, default=MEAN_REWARD_GOAL)``
    (n31h's sample): the default is a module-level name bound to ``19.5``, and ``args.reward``
    was reported (TP523 "made by ``args.reward``"). argparse hands a default over as it is,
    so a name bound only to a literal at module level is a number like the literal; a name
    bound to a tensor, or rebound to one anywhere, is not told, and the run confirms the
    port never goes silent on it."""
    defs, value = DEFAULTS[default]
    source = (
        MODEL
        + "import argparse\n"
        + defs
        + (
            "parser = argparse.ArgumentParser()\n"
            f"parser.add_argument('--goal', type={kind}, default={value})\n"
        )
    )
    body = (
        "args = parser.parse_args([])\n"
        "goal = args.goal if isinstance(args.goal, torch.Tensor) else float(args.goal)\n"
        "OUT.append((model(torch.ones(1, 4)) * args.goal).detach() if goal is args.goal\n"
        "           else (model(torch.ones(1, 4)) * goal).detach())\n"
    )
    left, clean = placed(source + wrap(body, where))
    assert clean or left, left
    about = [f for f in left if "args.goal" in f or "`args`" in f]
    if default in ("a literal", "a negated literal", "a constant"):
        assert about == [], left


@given(
    st.sampled_from(["0.2", "'clip'", "torch.full((1, 2), 0.2)"]),
    st.sampled_from(["", "sub", "outside"]),
    WHERE,
)
def test_a_number_the_class_body_binds_read_through_self_is_no_value_to_move(
    value: str, other: str, where: str
) -> None:
    """xtma/pytorch_car_caring's ``class Agent: clip_param = 0.1`` read as
    ``torch.clamp(ratio, 1.0 - self.clip_param, ...)`` (n31h's sample): no method stores
    ``self.clip_param``, and it was reported (TP523 "made by ``self.clip_param``"). A number
    or string the class body binds, stored nowhere else and bound by no other class of the
    file, is no tensor. A tensor there, a subclass binding a tensor, or a tensor stored from
    outside is not told: reported or moved, and the run confirms it."""
    use = "len(self.clip_param)" if "clip'" in value else "self.clip_param"
    source = MODEL + (
        "class Agent:\n"
        f"    clip_param = {value}\n"
        "    def step(self, x):\n"
        f"        return (model(x) * {use}).detach()\n"
    )
    if other == "sub":
        source += "class Big(Agent):\n    clip_param = torch.full((1, 2), 3.0)\n"
    made = "Big()" if other == "sub" else "Agent()"
    body = f"agent = {made}\n"
    if other == "outside":
        body += "agent.clip_param = torch.full((1, 2), 2.0)\n"
    body += "OUT.append(agent.step(torch.ones(1, 4)))\n"
    left, clean = placed(source + wrap(body, where))
    assert clean or left, left
    if "torch" not in value and not other:
        assert not any("clip_param" in f for f in left), left
