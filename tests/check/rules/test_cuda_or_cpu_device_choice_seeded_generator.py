"""TP109 leaves a CUDA-or-CPU choice that only places a seeded generator a diffusers pipeline
is given (held-out sample AD's class F8, pos 82: neural-compressor's Wan example, judged low
(f); ``rules/_seeded_generators.py``).

A function is drawn: the generator made one of :data:`MAKERS` ways, bound to ``gen`` or
given inline, and one to three uses of it drawn from :data:`USES`, each marked by hand
whether a CPU generator there could fail or change anything on another device (a torch call
drawing on the tensor's device, the module's own helper, a stored or returned generator), and
the module importing from diffusers or not. The oracle: TP109 reports the choice exactly
when diffusers is not imported or some use is marked.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchport.check import check_source

CHOICE = '"cuda" if torch.cuda.is_available() else "cpu"'
MAKERS = (
    f"torch.Generator(device={CHOICE}).manual_seed(seed)",
    f"torch.Generator({CHOICE}).manual_seed(seed)",
    f"torch.Generator(device={CHOICE})",
)
# use -> (the statement, `{g}` the generator; whether it can make the device matter)
USES = {
    "param_pipe": ("frames = pipe(prompt=p, generator={g}).frames[0]", False),
    "loaded_pipe": ("images = loaded(p, num_inference_steps=4, generator={g}).images", False),
    "attribute_pipe": ("out = self.pipe(p, generator={g})", False),
    "torch_draw": ("noise = torch.randn(4, generator={g}, device=device)", True),
    "own_helper": ("latents = make_latents(4, generator={g})", True),
    "stored": ("self.gen = {g}", True),
    "returned": ("keep = [{g}]", True),
    "looped_pipe": ("for each in pipes:\n        each(p, generator={g})", True),
}
DIFFUSERS = "from diffusers import DiffusionPipeline\n"


def program(diffusers: bool, maker: str, bound: bool, uses: list[str], reseed: bool) -> str:
    head = "import torch\n" + (DIFFUSERS if diffusers else "") + "\n\n"
    if "own_helper" in uses:  # the module's own code taking a generator
        head += "def make_latents(n, generator=None):\n"
        head += "    return torch.randn(n, generator=generator)\n\n\n"
    body = "    loaded = DiffusionPipeline.from_pretrained(name)\n" if diffusers else ""
    body += "    loaded = load(name)\n" if not diffusers else ""
    g = maker
    if bound:
        body += f"    gen = {maker}\n"
        if reseed:
            body += "    gen.manual_seed(seed + 1)\n"
        g = "gen"
    for use in uses:
        body += "    " + USES[use][0].format(g=g) + "\n"
    signature = "def run(self, pipe, pipes, p, name, seed, device):\n"
    return head + signature + body + "    return None\n"


@given(
    diffusers=st.booleans(),
    maker=st.sampled_from(MAKERS),
    bound=st.booleans(),
    uses=st.lists(st.sampled_from(sorted(USES)), min_size=1, max_size=3),
    reseed=st.booleans(),
)
def test_a_generator_only_a_pipeline_is_given_decides_nothing(
    diffusers: bool, maker: str, bound: bool, uses: list[str], reseed: bool
) -> None:
    if not bound:
        uses = uses[:1]  # an inline generator has one use
    source = program(diffusers, maker, bound, uses, reseed)
    matters = not diffusers or any(USES[u][1] for u in uses)
    assert bool(check_source(source, select=["TP109"])) == matters, source


def test_the_wan_shape() -> None:
    """The generator seeded where it is made, given to a pipeline parameter in two calls."""
    source = program(True, MAKERS[0], True, ["param_pipe", "param_pipe"], False)
    assert not check_source(source, select=["TP109"]), source


@pytest.mark.parametrize("use", sorted(u for u, (_, matters) in USES.items() if matters))
def test_a_generator_also_given_elsewhere_keeps_the_finding(use: str) -> None:
    source = program(True, MAKERS[0], True, ["param_pipe", use], False)
    assert check_source(source, select=["TP109"]), source


def test_a_module_whose_own_code_takes_a_generator_keeps_the_finding() -> None:
    """``self.pipe`` may be the module's own class, drawing on its own device."""
    source = program(True, MAKERS[0], True, ["attribute_pipe"], False)
    assert not check_source(source, select=["TP109"]), source
    source += "\n\nclass Sampler:\n    def __call__(self, p, generator=None):\n"
    source += "        return torch.randn(4, generator=generator, device='cuda')\n"
    assert check_source(source, select=["TP109"]), source


def test_a_module_level_generator_keeps_the_finding() -> None:
    made = MAKERS[0].replace("seed", "0")
    source = "import torch\nfrom diffusers import DiffusionPipeline\n\n" + (
        f"GEN = {made}\n\n\ndef run(pipe):\n    return pipe(generator=GEN)\n"
    )
    assert check_source(source, select=["TP109"]), source
