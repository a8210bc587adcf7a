"""TP303 leaves a loader whose dataset is built from data already on a device.

``data = torch.tensor(v).to(f"cuda:{gpu}")`` then ``DataLoader(IndexDataset(idx, data))``:
the batches are device tensors, which cannot be pinned (``pin_memory=True`` raises for
them), so the advice would break that path. Generated functions make ``data`` one or two
ways (the second under ``if gpu:``), build the dataset from it directly or through a
name, and move the batches to the device in a loop that reuses the name ``data`` (a
batch moved below the loader is not the data it holds). The oracle is a table written
apart: a way moves to or makes on a device, or it does not (the CPU, a dtype, NumPy).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from torchport.check._engine import check_text, ruleset_for

WAYS = {  # how `data` is made, and whether it is then on a device
    "np.load(path)": False,
    "torch.tensor(values)": False,
    "torch.tensor(values).to(torch.float32)": False,
    'torch.tensor(values).to("cpu")': False,
    "torch.from_numpy(values).float()": False,
    "torch.tensor(values).to(weight_dtype)": False,
    'torch.empty(n, 2, device="cpu")': False,
    'torch.tensor(values).to(f"cuda:{gpu}")': True,
    "torch.tensor(values).to(device).float()": True,
    "torch.tensor(values).cuda()": True,
    'torch.empty(n, 2, device="cuda")': True,
    "torch.zeros(n, device=device)": True,
}
DATASETS = (
    "IndexDataset(idx, data, lags)",
    "TensorDataset(data, labels)",
    "Windows(data=data, horizon=3)",
)


def program(first: str, second: str | None, dataset: str, through_name: bool) -> str:
    lines = ["def loaders(values, labels, idx, gpu, device, n, path, lags):", f"    data = {first}"]
    if second is not None:
        lines += ["    if gpu:", f"        data = {second}"]
    if through_name:
        lines += [f"    ds = {dataset}", "    loader = DataLoader(ds, batch_size=64)"]
    else:
        lines += [f"    loader = DataLoader({dataset}, batch_size=64)"]
    # the batches reuse the data's name below the loader: a batch moved, not the data
    lines += ["    for data, y in loader:", "        data = data.to(device)", "    return loader"]
    head = "import numpy as np\nimport torch\n"
    head += "from torch.utils.data import DataLoader, TensorDataset\n\n"
    return head + "\n".join(lines) + "\n"


@given(
    first=st.sampled_from(sorted(WAYS)),
    second=st.none() | st.sampled_from(sorted(WAYS)),
    dataset=st.sampled_from(DATASETS),
    through_name=st.booleans(),
)
def test_a_loader_of_device_resident_data_is_left(
    first: str, second: str | None, dataset: str, through_name: bool
) -> None:
    source = program(first, second, dataset, through_name)
    resident = WAYS[first] or (second is not None and WAYS[second])
    found = check_text(source, "m.py", ruleset_for(["TP303"], None)).findings
    assert bool(found) != resident, source
