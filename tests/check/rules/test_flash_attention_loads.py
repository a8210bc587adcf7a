"""A default run leaves the device advice of code that surely loads a model with
``attn_implementation="flash_attention_2"``: it needs CUDA anyway (sample AE's A, judged low
(a): Video-Captioning's ``demo/VLM/run_vlm.py``, ``--device`` default ``cuda:0`` in the
``parse_args`` of a script whose run always loads VideoLLaMA3 that way).

Programs are scripts made from tables marked by hand: how the model is loaded (whether the
load surely runs when its function does), the attention asked for, where the CUDA finding is
(TP101: in the loading function, the script's ``--device`` default, a helper the run never
calls) and what the ``__main__`` block does (whether it surely reaches the load). The oracle:
the finding is left to explicit selection exactly when a FlashAttention load surely runs in
its function, or the ``__main__`` block surely reaches one and surely calls its function.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

LOAD = "model = AutoModel.from_pretrained(path, attn_implementation=ATTN)"
# how the load sits in `load_model` -> whether it surely runs when the function does
PLACES = {
    "    {load}": True,
    "    try:\n        {load}\n    except Exception:\n        return None": True,
    "    with torch.no_grad():\n        {load}": True,
    "    if fast:\n        {load}": False,
    "    for _ in range(2):\n        {load}": False,
    "    model = fast and AutoModel.from_pretrained(path, attn_implementation=ATTN)": False,
}
# the attention asked for -> whether it needs CUDA (FlashAttention)
ATTENTION = {
    '"flash_attention_2"': True,
    '"flash_attention_3"': True,
    '"sdpa"': False,
    '"flash_attention_2" if fast else "sdpa"': False,
}
WHERE = ("load_model", "parse_args", "helper")
# the __main__ block -> whether it surely calls main(), whose run surely loads the model
MAINS = {
    'if __name__ == "__main__":\n    main()': True,
    'if __name__ == "__main__":\n    args = parse_args()\n    if args.caption:\n'
    "        main()": False,
    "": False,
}


def program(place: str, attention: str, where: str, main: str) -> tuple[str, int]:
    load = place.format(load=LOAD).replace("ATTN", attention)
    probe = "    probe = torch.zeros(1).cuda()" if where == "load_model" else "    probe = None"
    default = '"cuda:0"' if where == "parse_args" else '"auto"'
    helper = "torch.ones(1).cuda()" if where == "helper" else "None"
    lines = [
        "import argparse",
        "import torch",
        "from transformers import AutoModel",
        "",
        "",
        "def parse_args():",
        "    parser = argparse.ArgumentParser()",
        f'    parser.add_argument("--device", default={default})',
        "    return parser.parse_args()",
        "",
        "",
        "def load_model(path, fast=True):",
        probe,
        load,
        "    return model",
        "",
        "",
        "def helper():",
        f"    return {helper}",
        "",
        "",
        "def main():",
        "    args = parse_args()",
        "    load_model(args.path)",
        "",
        "",
        main,
        "",
    ]
    source = "\n".join(lines)
    marker = {"load_model": "probe = torch", "parse_args": '"cuda:0"', "helper": "torch.ones"}
    line = next(i for i, text in enumerate(source.splitlines(), 1) if marker[where] in text)
    return source, line


def tp101_lines(source: str, select: list[str] | None) -> set[int]:
    found = check_text(source, "run_vlm.py", ruleset_for(select, None)).findings
    return {f.line for f in found if f.code == "TP101"}


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(PLACES)),
    st.sampled_from(sorted(ATTENTION)),
    st.sampled_from(WHERE),
    st.sampled_from(sorted(MAINS)),
)
def test_code_that_surely_loads_flash_attention_is_left_alone(
    place: str, attention: str, where: str, main: str
) -> None:
    source, line = program(place, attention, where, main)
    flash = PLACES[place] and ATTENTION[attention]
    left = flash and (where == "load_model" or (where == "parse_args" and MAINS[main]))
    assert line in tp101_lines(source, ["TP101"])  # named by the run: still reported
    assert (line in tp101_lines(source, None)) is not left
