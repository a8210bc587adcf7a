"""TP301's one form a default run reports (``_select.ONLY_FORMS``), on generated programs.

Issue 34, branch r34al: TP301 (``torch.load`` without ``map_location``) is real in 132 of 165
judged findings in other code, under the bar, and was off by default, so a default run missed
14 of the 99 held-out recall sites of rounds 5 and 5b. Where what is loaded reaches
``load_state_dict(...)``, the load maps no file (``mmap=``) and the module names a device, it
was real in 85 of 93 judged rows over samples A-AI: a default run reports that form, outside
test and benchmark code, and a run naming the rule reports every load.

Oracle (by hand, per part of the program): a default run reports the load when the use reaches
``load_state_dict`` (USES' flag), the keywords map no file (KEYWORDS' flag), the module's
other line names a device (SIGNS' flag) and the file is other code; ``--select TP301`` and
``--extend-select TP301`` report it wherever the file is not a test.
"""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (the load and its use, {load} for the call; whether what is loaded reaches load_state_dict)
USES = [
    ("net.load_state_dict({load})\n", True),
    ('net.load_state_dict({load}["model"])\n', True),
    ("ckpt = {load}\nnet.load_state_dict(ckpt)\n", True),
    ('ckpt = {load}\nnet.load_state_dict(ckpt["state_dict"], strict=False)\n', True),
    ('ckpt = {load}\nsd = ckpt.get("model")\nprint(len(sd))\nnet.load_state_dict(sd)\n', True),
    ('ckpt = {load}\nstep = ckpt["step"]\nnet.load_state_dict(ckpt["net"])\n', True),
    (
        "class Runner:\n    def restore(self, path):\n        self.state = {load}\n"
        '        self.net.load_state_dict(self.state["net"])\n',
        True,
    ),
    ("def restore(net, path):\n    sd = {load}\n    return net.load_state_dict(sd)\n", True),
    ("stats = {load}\nprint(stats.mean())\n", False),
    ('data = {load}\nfeatures = data["x"] @ weight\n', False),
    ("use({load})\n", False),
    ("encoder = {load}\nnet.load_state_dict(other)\n", False),
    ("net = {load}\nnet.eval()\n", False),
]
# (keywords of the load; whether they leave the form: a memory-mapped file loads on the host)
KEYWORDS = [
    ("", False),
    (", weights_only=True", False),
    (", mmap=False", False),
    (", mmap=True", True),
    (", weights_only=True, mmap=True", True),
    (", mmap=lazy", True),
]
# (the module's other line; whether it names a device)
SIGNS = [
    ("weight = None\n", False),
    ('device = torch.device("cpu")\n', True),
    ("use_gpu = torch.cuda.is_available()\n", True),
    ("net = Net().to(args.device)\n", True),
]
PATHS = [("train.py", "code"), ("benchmarks/run.py", "bench"), ("tests/test_net.py", "test")]


@settings(max_examples=40, deadline=None)
@example(USES[0], KEYWORDS[0], SIGNS[1], PATHS[0], "default")  # the form, reported
@example(USES[2], KEYWORDS[1], SIGNS[3], PATHS[0], "default")
@example(USES[2], KEYWORDS[3], SIGNS[3], PATHS[0], "default")  # memory-mapped: left
@given(
    st.sampled_from(USES),
    st.sampled_from(KEYWORDS),
    st.sampled_from(SIGNS),
    st.sampled_from(PATHS),
    st.sampled_from(["default", "select", "extend"]),
)
def test_a_default_run_reports_loads_of_a_models_state(
    use: tuple[str, bool],
    words: tuple[str, bool],
    sign: tuple[str, bool],
    where: tuple[str, str],
    run: str,
) -> None:
    (template, reaches), (keywords, maps), (line, names_device), (path, context) = (
        use,
        words,
        sign,
        where,
    )
    load = f"torch.load(path{keywords})"
    source = "import torch\n\n" + line + "\n" + template.format(load=load)
    if run == "default":
        found = check_source(source, path)
    elif run == "select":
        found = check_source(source, path, select=["TP301"])
    else:
        found = check_source(source, path, extend_select=["TP301"])
    reported = any(f.code == "TP301" for f in found)
    if run != "default":
        assert reported == (context != "test"), source
    else:
        expected = reaches and not maps and names_device and context == "code"
        assert reported == expected, source


# TorchScript loads (issue 34, branch r34al: two held-out recall sites of round 5j, MONAILabel's
# `torch.jit.load(model_file)`): (the import, the call, whether it is torch's `jit.load`)
JIT_SPELLINGS = [
    ("", "torch.jit.load", True),
    ("from torch import jit\n", "jit.load", True),
    ("import torch.jit as tj\n", "tj.load", True),
    ("from torch.jit import load\n", "load", True),
    ("import json\n", "json.load", False),
    ("class jit:\n    load = staticmethod(open)\n", "jit.load", False),
]
# (the arguments; whether they map the archive)
JIT_ARGUMENTS = [
    ('"net.pt"', False),
    ("path, _extra_files=extra", False),
    ('"net.pt", map_location="cpu"', True),
    ("path, device", True),
    ("path, map_location=torch.device(device)", True),
]


@settings(max_examples=30, deadline=None)
@example(JIT_SPELLINGS[0], JIT_ARGUMENTS[0], "select")  # reported on the base: never
@given(
    st.sampled_from(JIT_SPELLINGS),
    st.sampled_from(JIT_ARGUMENTS),
    st.sampled_from(["default", "select", "extend"]),
)
def test_torchscript_loads_without_map_location_are_reported_by_a_run_naming_the_rule(
    spelling: tuple[str, str, bool], arguments: tuple[str, bool], run: str
) -> None:
    (imports, call, is_torch), (args, maps) = spelling, arguments
    source = f"import torch\n{imports}\ndevice = 'cpu'\nnet = {call}({args})\nout = net(x)\n"
    if run == "select":
        found = check_source(source, "serve.py", select=["TP301"])
    elif run == "extend":
        found = check_source(source, "serve.py", extend_select=["TP301"])
    else:
        found = check_source(source, "serve.py")
    reported = any(f.code == "TP301" for f in found)
    # a default run reports TP301 only where what is loaded reaches load_state_dict
    assert reported == (run != "default" and is_torch and not maps), source


def test_a_torchscript_archive_the_function_saved_a_moment_before_is_not_reported() -> None:
    # detectron2's `reload_script_model`: `torch.jit.save(module, buffer)`, then load it back
    saved = (
        "import io\nimport torch\n\n\ndef reload(module):\n    buffer = io.BytesIO()\n"
        "    torch.jit.save(module, buffer)\n    buffer.seek(0)\n"
        "    return torch.jit.load(buffer)\n"
    )
    assert not [f for f in check_source(saved, select=["TP301"]) if f.code == "TP301"]
    other = saved.replace("torch.jit.save(module, buffer)", "torch.jit.save(module, other)")
    assert [f.code for f in check_source(other, select=["TP301"])] == ["TP301"]
