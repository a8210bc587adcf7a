"""Recall: device code that real repositories write is found; guarded or CPU-only code is not.

Each case is a small program in the shape the issue quotes; the default rule set
(what a plain `torchport check` runs) must report exactly the expected codes.
"""

from __future__ import annotations

import pytest

from torchport.check import check_source
from torchport.check._rule import Rule
from torchport.check.rules import RULES

H = "import torch\nimport torch.distributed as dist\n\n\ndef main(x, model, rank, i, loader):\n"


DEFAULT = [rule.code for rule in RULES if rule.default]


def _codes(body: str, also: str | None = None) -> list[str]:
    """The codes found in ``body`` by the default rules (and ``also``, a rule off by default)."""
    select = None if also is None else [*DEFAULT, also]
    return [f.code for f in check_source(H + body, select=select)]


FOUND = [
    # integer device ids of DDP (an integer device is the current accelerator's: QUIET)
    (
        "    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[rank])\n",
        "TP110",
    ),
    # device strings built at run time
    ('    x = x.to(f"cuda:{rank}")\n', "TP115"),
    ('    x = x.to("cuda:{}".format(i))\n', "TP115"),
    ('    ckpt = torch.load("m.pt", map_location=f"cuda:{i}", weights_only=True)\n', "TP115"),
    ('    ckpt = torch.load("m.pt", map_location="cuda:0", weights_only=True)\n', "TP101"),
    # device types
    (
        "    from torch.distributed.device_mesh import init_device_mesh\n"
        '    mesh = init_device_mesh("cuda", (2,))\n',
        "TP113",
    ),
    ('    with torch.autocast(device_type="cuda"):\n        y = model(x)\n', "TP113"),
    ('    with torch.amp.autocast("cuda"):\n        y = model(x)\n', "TP113"),
    # streams and events
    ("    s = torch.cuda.Stream()\n", "TP406"),
    ("    e = torch.cuda.Event(enable_timing=True)\n", "TP406"),
    # legacy CUDA tensor types as values
    (
        "    cuda = torch.cuda.is_available()\n"
        "    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor\n",
        "TP111",
    ),
    # MPS and XPU hard-coded
    ('    dev = torch.device("mps")\n', "TP112"),
    ('    x = x.to("xpu")\n', "TP112"),
    # a torch.device compared with a string: always False
    ('    if x.device == "cuda":\n        pass\n', "TP114"),
    # the CUDA-or-CPU idiom: its own rule
    # (each choice read after it: one bound to a name its function never reads decides
    # nothing, `_idle_choices._never_read`)
    (
        '    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
        "    model.to(dev)\n",
        "TP109",
    ),
    # what maintainers changed in their own ports, missed before
    (
        "    class Run:\n        def __init__(self, device='cuda'):\n            self.d = device\n",
        "TP101",
    ),
    ("    def kw(x, *, map_device='cuda:0'):\n        return x.to(map_device)\n", "TP101"),
    ("    assert x.is_cuda\n    y = kernel[(4,)](x)\n", "TP103"),
    ("    with torch.cuda.device(x.device):\n        y = kernel[(4,)](x)\n", "TP401"),
    ("    torch.backends.cuda.matmul.allow_tf32 = True\n", "TP407"),
    ('    device: str = "cuda:0"\n', "TP101"),
    ('    dev = torch.device("cuda:0" if x else "cpu")\n', "TP101"),
    ('    trainer = Trainer(accelerator="cuda", devices=1)\n', "TP101"),
    ("    if args.cuda:\n        model.cuda()\n", "TP109"),
    ("    if self.use_cuda:\n        x = x.cuda()\n", "TP109"),
    ("    x = torch.cuda.memory.max_memory_allocated()\n", "TP401"),
    ("    p.add_argument('--device', type=str, default='cuda:0')\n", "TP101"),
    ("    def unpack(batch, use_cuda):\n        return batch\n", "TP116"),
    (
        '    d = torch.device(cfg.device if torch.cuda.is_available() else "cpu")\n'
        "    x = x.to(d)\n",
        "TP109",
    ),
    ('    d = torch.device(type="cuda", index=local_rank)\n', "TP101"),
    ('    dist.init_process_group("cuda:nccl,cpu:gloo")\n', "TP404"),
    ("    assert torch.cuda.is_available(), 'needs a GPU'\n", "TP401"),
]


@pytest.mark.parametrize(("body", "code"), FOUND)
def test_real_repository_patterns_are_found(body: str, code: str) -> None:
    assert code in _codes(body, also=code)


QUIET = [
    # TP110: an integer device names the current accelerator (torch >= 2.5), not CUDA
    ("    x = x.to(0)\n", "TP110"),
    ("    model = model.to(rank)\n", "TP110"),
    ("    z = torch.zeros(3, device=local_rank)\n", "TP110"),
    ("    m = torch.nn.DataParallel(m, device_ids=[0, 1])\n", "TP110"),
    # TP201: CPU tensors
    ("    out = model(x)\n    out = out.cpu()\n    return out.numpy()\n", "TP201"),
    ("    return torch.from_numpy(x).numpy()\n", "TP201"),
    # TP202: CPU tensors and once-only blocks
    (
        "    for step, batch in enumerate(loader):\n        n = torch.tensor(batch).sum().item()\n",
        "TP202",
    ),
    (
        "    for step, batch in enumerate(loader):\n"
        "        loss = model(batch)\n"
        "        if step == 0:\n"
        "            print(loss.item())\n",
        "TP202",
    ),
    ("    dpr = [v.item() for v in torch.linspace(0, 0.1, 12)]\n", "TP202"),
    # TP101/102/103/401 in ported branches
    ('    if x.device.type == "cuda":\n        x = x.cuda()\n', "TP101"),
    ("    if x.is_cuda:\n        torch.cuda.set_device(rank)\n", "TP102"),
    ("    if x.is_cuda:\n        y = x\n    elif x.is_xpu:\n        y = x.cpu()\n", "TP103"),
    ('    if x.device.type == "cuda":\n        torch.cuda.synchronize()\n', "TP401"),
    # TP401: the availability flag is TP109's business, and only where it chooses a device
    ("    cuda = torch.cuda.is_available()\n", "TP401"),
    ("    cuda = torch.cuda.is_available()\n", "TP109"),
    # TP101: the idiom moved out
    ('    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n', "TP101"),
    # TP101: a default that names no device; TP103: a CUDA kernel's precondition
    ("    def build(impl='cuda'):\n        return impl\n", "TP101"),
    ("    assert x.is_cuda\n    roi_align_forward_cuda(x)\n", "TP103"),
    # TP407: a setting that is already device-generic
    ("    torch.backends.cudnn.benchmark = True\n", "TP407"),
    # TP301: a file this run wrote a moment before, on this machine
    (
        '    with open(f"{tmpdir}/a.pt", "rb") as f:\n'
        "        sd = torch.load(f, weights_only=True)\n",
        "TP301",
    ),
    ("    torch.save(sd, path)\n    sd2 = torch.load(path, weights_only=True)\n", "TP301"),
    (
        "    if os.path.isfile(logit_file):\n"
        "        logits = torch.load(logit_file, weights_only=True)\n"
        "    else:\n        logits = run(x)\n        torch.save(logits, logit_file)\n",
        "TP301",
    ),
    (
        "    fn = os.path.join(datadir, 'cache.pt')\n"
        "    corpus = torch.load(fn, weights_only=True)\n",
        "TP301",
    ),
    # TP114: a setting's `.device` is often a string
    ('    if builder_args.device != "cpu":\n        pass\n', "TP114"),
    # guards written with a library's own helpers (`is_npu_available()`)
    ('    if is_npu_available():\n        d = torch.device("npu")\n', "TP112"),
    # a shim that points CUDA's names at another backend's
    ("    torch.cuda.FloatTensor = torch.xpu.FloatTensor\n", "TP111"),
    # casts, in-place batch moves, and loaders Accelerate already places
    ("    for b in loader:\n        y = b.to(weight_dtype)\n", "TP203"),
    ("    for b in loader:\n        b.to(device)\n", "TP203"),
    (
        "    loader = accelerator.prepare(loader)\n    for b in loader:\n"
        "        y = model(b['x'].to(accelerator.device))\n",
        "TP203",
    ),
    (
        "    train_dataloader = accelerator.prepare(train_dataloader)\n"
        "    for step, b in enumerate(tqdm(train_dataloader)):\n"
        "        y = model(b['x'].to(device))\n",
        "TP203",
    ),
    # a chain of branches per accelerator ends in CUDA's
    (
        "    if is_npu_available():\n        s = torch.npu.amp.GradScaler()\n"
        "    elif torch.xpu.is_available():\n        s = torch.amp.GradScaler('xpu')\n"
        "    else:\n        s = torch.amp.GradScaler('cuda')\n",
        "TP113",
    ),
    # a list of batches the program collates itself: nothing pins it
    (
        "    batches = [collate(c) for c in chunks]\n    for b in batches:\n"
        "        y = model(b['x'].to(device))\n",
        "TP203",
    ),
    (
        "    def make_batches(ds):\n        out = []\n        for c in ds:\n"
        "            out.append(collate(c))\n        return out\n"
        "    batches = make_batches(ds)\n    for b in batches:\n"
        "        y = model(b['x'].to(device))\n",
        "TP203",
    ),
    # a state dict named `model`
    ("    save_file(model, f)\n    torch.save(model, f)\n", "TP309"),
    # the fallback for torches without torch.amp
    (
        "    if torch_version >= '2.3':\n        s = torch.amp.GradScaler('cuda')\n"
        "    else:\n        s = torch.cuda.amp.GradScaler()\n",
        "TP403",
    ),
    # a CUDA setting made only on CUDA
    (
        '    if x.device.type == "cuda":\n        torch.backends.cuda.matmul.allow_tf32 = True\n',
        "TP407",
    ),
    # a module's own cuda() passing the call on
    (
        "    class M(torch.nn.Module):\n        def cuda(self):\n"
        "            return super().cuda()\n",
        "TP101",
    ),
    # TP109: one branch per device, side by side
    (
        "    if torch.cuda.is_available():\n        print(torch.cuda.max_memory_reserved())\n"
        "    if torch.xpu.is_available():\n        print(torch.xpu.max_memory_reserved())\n",
        "TP109",
    ),
]


def test_triton_files_are_checked_like_any_other() -> None:
    """Triton runs on CUDA, ROCm and XPU: its wrappers' CUDA-only lines are found too."""
    body = "    with torch.cuda.device(x.device):\n        assert x.is_cuda\n        y = k[1](x)\n"
    found = [f.code for f in check_source("import triton\n" + H + body, select=["ALL"])]
    assert "TP401" in found and "TP103" in found


@pytest.mark.parametrize(("body", "code"), QUIET)
def test_guarded_or_cpu_code_is_not_reported(body: str, code: str) -> None:
    assert code not in _codes(body, also=code)


def test_idiom_message_says_the_code_works() -> None:
    body = '    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")\n    x.to(dev)\n'
    (finding,) = [f for f in check_source(H + body, select=["TP109"]) if f.code == "TP109"]
    assert "works" in finding.message and "MPS" in finding.message
    assert "accelerator" in finding.message


def test_device_string_comparisons_say_always_false() -> None:
    by_code = {rule.code: rule for rule in RULES}
    assert "never equals a string" in by_code["TP114"].message
    assert "always False" in by_code["TP902"].message
    assert by_code["TP114"].default and not by_code["TP902"].default


def test_cuda_or_cpu_choice_after_an_mps_branch_is_not_reported() -> None:
    body = (
        "    if torch.backends.mps.is_available():\n"
        '        return torch.device("mps")\n'
        '    return torch.device("cuda" if torch.cuda.is_available() else "cpu")\n'
    )
    assert "TP109" not in _codes(body)


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("import torch\nm = torch.nn.DataParallel(net)\n", "TP405"),
        ("import torch\nl = torch.utils.data.DataLoader(ds)\nx = x.to(d)\n", "TP303"),
    ],
)
def test_tests_are_left_to_test(source: str, code: str) -> None:
    """Speed and multi-GPU advice is for programs, not for a test that exercises the API."""
    assert code in [f.code for f in check_source(source, "train.py", select=[code])]
    assert code not in [f.code for f in check_source(source, "tests/test_loader.py", select=[code])]


LEFT = [r for r in RULES if not r.default and r.code[:3] in {"TP1", "TP2", "TP3", "TP4"}]


@pytest.mark.parametrize("rule", LEFT)
def test_a_rule_off_by_default_reports_the_same_when_selected(rule: type[Rule]) -> None:
    """Off by default it is silent; `--extend-select CODE` reports what `--select CODE` does."""
    for example in rule.invalid:
        source = example.source
        alone = [(f.line, f.col, f.message) for f in check_source(source, select=[rule.code])]
        assert alone, rule.code
        assert rule.code not in [f.code for f in check_source(source)]
        extended = check_source(source, select=[*DEFAULT, rule.code])
        assert [(f.line, f.col, f.message) for f in extended if f.code == rule.code] == alone
