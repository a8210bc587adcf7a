"""TP202 leaves reads of what a gym, gymnasium or envpool environment returns (NumPy arrays).

Generated training loops run a model each step (device work) and read a value with
``.tolist()``/``.item()``. The value is what ``envs.step(...)`` or ``envs.reset()``
returned (taken whole, or as one item of a tuple), maybe indexed, reshaped or reduced,
where ``envs`` comes from a library's constructor or from anything else, maybe wrapped.
The oracle is what was generated: only a library's environment (gym, gymnasium,
envpool), unwrapped or wrapped by a call given the environment alone, returns NumPy;
a wrapper given a device (``VecPyTorch(envs, device)``) or an environment of unknown
make may return device tensors, and the model's output always is one: those reads are
reported.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

MAKERS = {  # how the environment is made, and whether its results are NumPy
    'gym.make("CartPole-v1")': True,
    'gymnasium.make("CartPole-v1")': True,
    'envpool.make("Pong-v5", env_type="gym", num_envs=8)': True,
    "gym.vector.SyncVectorEnv(fns)": True,
    "make_env(args)": False,
    'isaacgymenvs.make(seed=0, task="Ant")': False,
}
WRAPPERS = {  # a wrapper around it, and whether it keeps NumPy
    "": True,
    "envs = RecordEpisodeStatistics(envs)": True,
    "envs = gym.wrappers.RecordVideo(envs)": True,
    "envs = VecPyTorch(envs, device)": False,
}
BINDINGS = {  # how the result is named, and the name the read uses
    "s, r, d, info = envs.step(act)": "s",
    "obs = envs.reset()": "obs",
    "out = model(x)": "out",  # a device tensor: always reported
}
READS = ("{v}.tolist()", "{v}[:, 3].tolist()", "{v}.reshape(-1).tolist()", "{v}.sum().item()")


@given(
    maker=st.sampled_from(sorted(MAKERS)),
    wrapper=st.sampled_from(sorted(WRAPPERS)),
    binding=st.sampled_from(sorted(BINDINGS)),
    read=st.sampled_from(READS),
)
def test_an_environment_s_numpy_results_are_left(
    maker: str, wrapper: str, binding: str, read: str
) -> None:
    name = BINDINGS[binding]
    lines = [
        "import envpool\nimport gym\nimport gymnasium\nimport isaacgymenvs\nimport torch\n",
        f"envs = {maker}",
        wrapper,
        "for step in range(n):",
        "    y = model(x)",
        f"    {binding}",
        f"    vals.append({read.format(v=name)})",
    ]
    source = "\n".join(lines) + "\n"
    found = check_text(source, "m.py", ruleset_for(["TP202"], None)).findings
    numpy = name != "out" and MAKERS[maker] and WRAPPERS[wrapper]
    assert bool(found) != numpy, source


USES = {  # where the read goes, and whether an environment's step takes it as it is
    "envs.step({r})": True,
    "obs, rew, done, info = env.step({r})": True,
    "log.append({r})": False,
    "envs.step(scale({r}))": False,  # computes another value first: not known to be needed
    "envs.render({r})": False,
}
ACTIONS = ("action.cpu().numpy()", "action.item()", "action.tolist()", "action.cpu().numpy()[0]")


@given(use=st.sampled_from(sorted(USES)), read=st.sampled_from(ACTIONS))
def test_an_action_handed_to_an_environment_s_step_is_needed_now(use: str, read: str) -> None:
    source = (
        "import torch\n\nfor _ in range(n):\n    action = model(state).sample()\n"
        f"    {use.format(r=read)}\n"
    )
    found = check_text(source, "m.py", ruleset_for(["TP202"], None)).findings
    assert bool(found) != USES[use], source
