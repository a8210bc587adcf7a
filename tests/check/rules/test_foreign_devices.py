"""A device string whose every use is another library's is not torch's (TP101, TP109).

Issue 34 item 5 (branch p34al; held-out sample AI: faster-whisper's CTranslate2 device).
Generated programs: one CUDA value (a local, a CUDA-or-CPU choice, a module constant, a
command-line option's default, an argument of a module function), then its uses, each drawn
from a list where the callee's module is known by construction: another library's device
parameter (CTranslate2, faster-whisper, XGBoost, TensorFlow, JAX), torch's, a print or a log,
a comparison, a function of the module or of another module of the project (``helpers.py``,
written beside it) forwarding it to one of those, an attribute store, a project class, an
f-string used otherwise. Oracle (by hand, from the draw alone): the value is left alone when every
use is another library's or idle (shown, compared) and one at least another library's; else
reported, as is a module constant another file of the repository names. (A CUDA-or-CPU
choice only shown was left before: TP109's ``_idle_choices``.)
"""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_source

# (line using {d}, kind): "foreign" another library's, "idle" or "shown" (printed, logged),
# "kept" (torch's, an escape, an unknown callee)
USES = [
    ('ctranslate2.Translator("m", device={d})', "foreign"),
    ('WhisperModel("base", device={d}, compute_type="int8")', "foreign"),
    ("xgboost.XGBRegressor(device={d})", "foreign"),
    ("tensorflow.device({d})", "foreign"),
    ("jax.devices({d})", "foreign"),
    ("to_engine({d})", "foreign"),  # a module function handing it to CTranslate2
    ("engine_in(1, device={d})", "foreign"),  # another module's function: to faster-whisper
    ("tensor_in(1, {d})", "kept"),  # another module's function: to torch
    ("shown_in({d})", "idle"),  # another module's function: only logs it
    ('print(f"device: {{{d}}}")', "shown"),
    ('logger.info("device %s", {d})', "shown"),
    ('half = {d} == "cuda"', "idle"),
    ("torch.zeros(2, device={d})", "kept"),
    ("net.to({d})", "kept"),
    ("torch.device({d})", "kept"),
    ("to_tensor({d})", "kept"),  # a module function handing it to torch
    ("cfg.device = {d}", "kept"),
    ("Engine({d})", "kept"),  # a class of the project: not followed
    ('f"{{{d}}}:0"', "kept"),
]
HEAD = (
    "import logging\n\nimport ctranslate2\nimport jax\nimport tensorflow\nimport torch\n"
    "import xgboost\nfrom faster_whisper import WhisperModel\n"
    "from helpers import engine_in, shown_in, tensor_in\n\nlogger = logging.getLogger()\n"
    "net = torch.nn.Linear(2, 2)\n\n\n"
    'def to_engine(device):\n    return ctranslate2.Generator("m", device=device)\n\n\n'
    "def to_tensor(device):\n    return torch.ones(1).to(device)\n\n\n"
)
HELPERS = (  # the project's other module, beside the program
    "import logging\n\nimport faster_whisper\nimport torch\n\nlog = logging.getLogger()\n\n\n"
    'def engine_in(size, device):\n    log.info("engine on %s", device)\n'
    "    return faster_whisper.WhisperModel(size, device=device)\n\n\n"
    "def tensor_in(size, device):\n    return torch.zeros(size, device=device)\n\n\n"
    "def shown_in(device):\n    print(device)\n"
)
CHOICE = '"cuda" if torch.cuda.is_available() else "cpu"'


def _program(form: str, uses: list[str]) -> tuple[str, int]:
    """The program and the line of its CUDA value."""
    head = HEAD.count("\n")
    if form == "constant":
        body = [f"DEVICE = {CHOICE}", "", "", "def main(cfg):"]
        body += ["    " + u.format(d="DEVICE") for u in uses]
        return HEAD + "\n".join(body) + "\n", head + 1
    if form == "option":
        body = ["def main(cfg):", "    p = argparse.ArgumentParser()"]
        body += ['    p.add_argument("--device", default="cuda")', "    args = p.parse_args()"]
        body += ["    " + u.format(d="args.device") for u in uses]
        return "import argparse\n" + HEAD + "\n".join(body) + "\n", head + 4
    if form == "parameter":
        body = ["def run(cfg, device):", *("    " + u.format(d="device") for u in uses)]
        body += ["", "", "def main(cfg):", '    run(cfg, device="cuda")']
        return HEAD + "\n".join(body) + "\n", head + len(uses) + 5
    value = CHOICE if form == "choice" else '"cuda"'
    body = [
        "def main(cfg):",
        f"    device = {value}",
        *("    " + u.format(d="device") for u in uses),
    ]
    return HEAD + "\n".join(body) + "\n", head + 2


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["local", "choice", "constant", "option", "parameter"]),
    st.lists(st.sampled_from(USES), min_size=1, max_size=3),
    st.booleans(),
)
def test_a_device_only_another_library_uses_is_left_alone(
    form: str, uses: list[tuple[str, str]], named_elsewhere: bool
) -> None:
    kinds = {kind for _, kind in uses}
    left = "kept" not in kinds and "foreign" in kinds
    if form in ("choice", "constant") and kinds == {"shown"}:
        left = True  # a CUDA-or-CPU choice only shown: TP109's idle choice, left before
    if form == "constant" and named_elsewhere:
        left = False  # another module may import it
    source, line = _program(form, [u for u, _ in uses])
    with tempfile.TemporaryDirectory() as top:
        os.mkdir(os.path.join(top, ".git"))
        path = os.path.join(top, "run.py")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(source)
        with open(os.path.join(top, "helpers.py"), "w", encoding="utf-8") as handle:
            handle.write(HELPERS)
        if named_elsewhere:
            with open(os.path.join(top, "other.py"), "w", encoding="utf-8") as handle:
                handle.write("from run import DEVICE, main\n")
        found = check_source(source, path=path)
    reported = any(f.code in ("TP101", "TP109") and f.line == line for f in found)
    assert reported == (not left), source


# sample AI's two shapes (WhisperJAV's tools/fw_diagnostic_suite.py and whisper_vad.py), each
# beside the same program with one torch use added: (source, line of the CUDA value)
_OPTION = (
    'import argparse\n\nimport torch\n\nDEFAULT_DEVICE = "cuda"\n\n\ndef main():\n'
    '    p = argparse.ArgumentParser()\n    p.add_argument("--device", default=DEFAULT_DEVICE)\n'
    "    args = p.parse_args()\n    from faster_whisper import WhisperModel\n"
    '    log.info(f"({{args.device}})")\n'
    "    return WhisperModel(args.model, device=args.device){}\n",
    5,
)
_VAD = (
    "import torch\n\n\nclass Vad:\n    def load(self):\n        try:\n"
    "            from faster_whisper import WhisperModel\n        except ImportError:\n"
    '            raise\n        device = self.device\n        if device == "auto":\n'
    '            device = "cuda" if torch.cuda.is_available() else "cpu"\n'
    '            logger.info(f"auto: {{device}}")\n'
    "        self.model = WhisperModel(self.size, device=device){}\n",
    12,
)


def test_sample_ai_shapes() -> None:
    for template, line in (_OPTION, _VAD):
        with tempfile.TemporaryDirectory() as top:
            os.mkdir(os.path.join(top, ".git"))
            path = os.path.join(top, "run.py")
            for extra, reported in (("", False), (", torch.zeros(1, device=device)", True)):
                source = template.format(
                    extra.replace("device=device", "device=args.device")
                    if "args" in template
                    else extra
                )
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(source)
                found = check_source(source, path=path)
                hit = any(f.code in ("TP101", "TP109") and f.line == line for f in found)
                assert hit == reported, source
