"""TP114 on `X.device`: a torch device only where nothing says it is a string
(check/semantic/_string_fields.py), and TP101/TP109 on another library's `device=`
(``foreign_device``, check/rules/_cuda_choice.py).

The oracles are tables written from the invariant, apart from the code: a field annotation
is a string's or not, a receiver reaches the class or not; a finding is expected unless both.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check import check_paths, check_source

# (annotation text, imports it needs, whether it says "a string")
FIELDS = {
    "str": ("str", "", True),
    "literal": ('Literal["cpu", "cuda"]', "from typing import Literal\n", True),
    "optional": ("Optional[str]", "from typing import Optional\n", True),
    "union_none": ("str | None", "", True),
    "quoted": ('"str"', "", True),
    "torch_device": ("torch.device", "", False),
    "any": ("Any", "from typing import Any\n", False),
}
# How the class body declares `device` (None: an annotation above; else the whole line).
UNANNOTATED = {"assigned": '    device = "cpu"\n', "absent": "    other: int = 0\n"}
KINDS = ("dataclass", "pydantic", "plain")
# (how the receiver is reached, whether it reaches the class)
RECEIVERS = {
    "param": True,
    "param_optional": True,
    "built": True,
    "returned": True,
    "list_loop": True,
    "list_comp": True,
    "param_list": True,
    "unannotated": False,
    "other_class": False,
}


def _class(kind: str, name: str, body: str) -> str:
    if kind == "dataclass":
        return f"@dataclass\nclass {name}:\n{body}"
    base = "(BaseModel)" if kind == "pydantic" else ""
    return f"class {name}{base}:\n{body}"


def _use(how: str, test: str) -> str:
    uses = {
        "param": f"def run(request: Req):\n    return {test}\n",
        "param_optional": f"def run(request: Optional[Req] = None):\n    return {test}\n",
        "built": f"def run():\n    request = Req()\n    return {test}\n",
        "returned": f"def make() -> Req:\n    return Req()\n\n\n"
        f"def run():\n    request = make()\n    return {test}\n",
        "list_loop": f"def run():\n    for request in [Req(), Req()]:\n        print({test})\n",
        "list_comp": f"def run():\n    done = [Req() for _ in range(2)]\n"
        f"    return [{test} for request in done]\n",
        "param_list": f"def run(reqs: list[Req]):\n    return [{test} for request in reqs]\n",
        "unannotated": f"def run(request):\n    return {test}\n",
        "other_class": f"def run(request: Other):\n    return {test}\n",
    }
    return uses[how]


def _program(kind: str, field: str, how: str, op: str, text: str) -> tuple[str, bool]:
    """The program and whether the program says `request.device` is a string (the oracle)."""
    if field in UNANNOTATED:
        body, imports, says = UNANNOTATED[field], "", False
    else:
        annotation, imports, says = FIELDS[field]
        body = f"    device: {annotation}\n"
    header = (
        "import torch\nfrom dataclasses import dataclass\nfrom typing import Optional\n"
        "from pydantic import BaseModel\n" + imports + "\n\n"
    )
    classes = _class(kind, "Req", body) + "\n\n" + _class("plain", "Other", "    pass\n")
    source = header + classes + "\n\n" + _use(how, f'request.device {op} "{text}"')
    return source, says and RECEIVERS[how]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(KINDS),
    st.sampled_from([*FIELDS, *UNANNOTATED]),
    st.sampled_from(list(RECEIVERS)),
    st.sampled_from(["==", "!="]),
    st.sampled_from(["cuda", "cpu", "mps", "cuda:0"]),
)
def test_a_string_field_is_no_torch_device(
    kind: str, field: str, how: str, op: str, text: str
) -> None:
    source, a_string = _program(kind, field, how, op, text)
    found = [f.code for f in check_source(source, "job.py", select=["TP114"])]
    assert found == ([] if a_string else ["TP114"]), source


def test_one_import_away_the_project_view_answers(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "contracts.py").write_text(
        "from typing import Literal\n\nfrom pydantic import BaseModel\n\n\n"
        'class Req(BaseModel):\n    device: Literal["cpu", "cuda"] = "cpu"\n\n\n'
        "class Sub(Req):\n    pass\n\n\n"
        "class Dev(BaseModel):\n    device: object = None\n"
    )
    uses = {"Req": False, "Sub": False, "Dev": True}  # `Dev.device` is not said a string
    for name, reported in uses.items():
        (tmp_path / "job.py").write_text(
            f"import torch\n\nfrom contracts import {name}\n\n\n"
            f'def run(request: {name}):\n    return request.device == "cuda"\n'
        )
        found = check_paths([tmp_path / "job.py"], select=["TP114"], jobs=1).findings
        assert len(found) == int(reported), name


def test_argparse_strings_unless_given_a_type() -> None:
    parse = (
        "import argparse\n\nimport torch\n\n\ndef main():\n"
        "    parser = argparse.ArgumentParser()\n"
        '    parser.add_argument("--device"{})\n'
        "    arguments = parser.parse_args()\n"
        '    return arguments.device == "cuda"\n'
    )
    assert check_source(parse.format(""), "job.py", select=["TP114"]) == []
    typed = parse.format(", type=torch.device")
    assert [f.code for f in check_source(typed, "job.py", select=["TP114"])] == ["TP114"]
    namespace = (
        'import argparse\n\n\ndef run(ns: argparse.Namespace):\n    return ns.device == "cuda"\n'
    )
    assert check_source(namespace, "job.py", select=["TP114"]) == []


# (import line, callee, whether its `device=` is that library's own)
CALLEES = [
    ("import xgboost as xgb", "xgb.XGBRegressor", True),
    ("from xgboost import XGBClassifier", "XGBClassifier", True),
    ("import lightgbm as lgb", "lgb.LGBMRegressor", True),
    ("import ctranslate2", "ctranslate2.Translator", True),
    ("from faster_whisper import WhisperModel", "WhisperModel", True),
    ("from transformers import pipeline", "pipeline", False),
    ("from sentence_transformers import SentenceTransformer", "SentenceTransformer", False),
    ("import timm", "timm.create_model", False),
    ("from mylib import Model", "Model", False),
]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(CALLEES),
    st.sampled_from(['"cuda"', '"cuda:0"', '"cuda" if torch.cuda.is_available() else "cpu"']),
)
def test_another_librarys_device_keyword(callee: tuple[str, str, bool], value: str) -> None:
    imports, name, own = callee
    source = f"import torch\n{imports}\n\nm = {name}(n=1, device={value})\n"
    found = check_source(source, "job.py", select=["TP101", "TP109"])
    assert (found == []) == own, source
