"""Suite selection, skip reasons without a GPU, competitor rows, and suite code paths on CPU."""

from __future__ import annotations

import sys

import pytest
import torch

from torchport.bench import SUITE_NAMES, run_suites, select_suites
from torchport.bench._competitors import (
    accelerate_send,
    lightning_apply,
    lightning_move,
    optree_map,
    tensordict_consolidate,
)
from torchport.bench._suite_batch import RAW, batch_transfer
from torchport.bench._suite_overhead_traversal import traversal_rows
from torchport.bench._suite_pack import _measure_size
from torchport.errors import ConfigError

GPU_SUITES = ("link", "pack", "batch", "loader")
no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")


def test_select_defaults_to_all_and_dedupes_in_order() -> None:
    assert select_suites([]) == list(SUITE_NAMES)
    assert select_suites(["overhead", "link", "overhead"]) == ["overhead", "link"]


def test_unknown_suite_lists_the_suites() -> None:
    with pytest.raises(ConfigError) as info:
        select_suites(["link", "bandwidth"])
    message = str(info.value)
    assert "'bandwidth'" in message
    assert all(name in message for name in SUITE_NAMES)


@no_cuda
def test_gpu_suites_are_skipped_with_the_reason_on_cpu() -> None:
    seen: list[tuple[str, str]] = []
    run = run_suites(GPU_SUITES, progress=lambda suite, step: seen.append((suite, step)))
    assert [suite.name for suite in run.suites] == list(GPU_SUITES)
    for suite in run.suites:
        assert suite.skipped is not None and "CUDA" in suite.skipped
        assert suite.rows == ()
    assert run.device == "cpu"
    assert run.torch_version == torch.__version__
    assert [suite for suite, _ in seen] == list(GPU_SUITES)


def _block(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    """Make ``import module`` raise ImportError, as if the package were not installed."""
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def test_missing_competitors_report_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    _block(
        monkeypatch,
        "accelerate",
        "accelerate.utils",
        "tensordict",
        "optree",
        "lightning_utilities.core.apply_func",
        "lightning.fabric.utilities.apply_func",
        "lightning_fabric.utilities.apply_func",
    )
    cpu = torch.device("cpu")
    for strategy in (
        accelerate_send(cpu),
        tensordict_consolidate(cpu),
        optree_map(lambda t: t),
        lightning_apply(lambda t: t),
        lightning_move(cpu),
    ):
        assert strategy.run is None
        assert strategy.missing is not None and strategy.missing.startswith("not installed")


def test_traversal_rows_keep_a_row_for_a_missing_competitor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _block(monkeypatch, "accelerate", "accelerate.utils")
    rows, checks = traversal_rows(quick=True)
    missing = [row for row in rows if row.strategy.startswith("accelerate")]
    assert [row.status for row in missing] == ["not installed: accelerate"] * 2  # one per op
    assert all(row.stats is None for row in missing)
    measured = [row for row in rows if row.status == "ok"]
    assert measured and all(row.stats is not None for row in measured)
    assert all(
        "vs_accelerate" not in row.metrics and "vs_optree" in row.metrics for row in measured
    )
    # without accelerate only the optree target can be checked
    assert checks and all("optree" in check.name for check in checks)


def test_pack_code_path_runs_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # Numbers from a CPU "copy" mean nothing; this checks rows, labels and metrics.
    monkeypatch.setattr("torchport.bench._suite_pack.MAX_COUNT", 100)
    rows, checks = _measure_size(torch.device("cpu"), 64, quick=True)
    assert checks == []  # the 10x target is about 1000 x 4 KiB only
    labels = [row.strategy for row in rows]
    assert labels[0] == "one .to() per tensor"
    assert any(label.startswith("torchport.to_device(pack=True)") for label in labels)
    for row in rows:
        if row.stats is not None:
            assert row.case == "100x64 B"
            assert row.metrics["bytes"] == 6400.0
            assert row.metrics["gb_per_s"] > 0
    assert rows[0].metrics["vs_per_tensor"] == 1.0


def test_pack_checks_the_10x_target_on_thousand_4k_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("torchport.bench._suite_pack.MAX_COUNT", 8)  # stands for 1000: a small run
    rows, checks = _measure_size(torch.device("cpu"), 4096, quick=True)
    (check,) = checks
    packed = next(r for r in rows if r.strategy.startswith("torchport.to_device(pack=True)"))
    assert check.value == packed.metrics["vs_per_tensor"]
    assert check.target == 0.1
    assert "8x4 KiB" in check.name


def test_batch_code_path_runs_on_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # Shrink the batch: the code path is what is under test, not the link.
    monkeypatch.setattr("torchport.bench._suite_batch.QUICK_BATCH_BYTES", 1 << 20)
    result = batch_transfer(torch.device("cpu"), quick=True)
    raw = next(row for row in result.rows if row.strategy == RAW)
    assert raw.metrics["share_of_raw"] == 100.0
    strategies = [row.strategy for row in result.rows]
    assert "torchport.to_device" in strategies
    assert any("lightning" in label for label in strategies)
    assert all(
        row.stats is not None or row.status.startswith("not installed") for row in result.rows
    )
    (check,) = result.checks
    mover = next(row for row in result.rows if row.strategy == "torchport.to_device")
    assert mover.stats is not None and raw.stats is not None
    assert check.value == pytest.approx(mover.stats.median / raw.stats.median)
    assert check.target == pytest.approx(1 / 0.9)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_suites_quick_on_cuda() -> None:
    run = run_suites(GPU_SUITES, quick=True)
    for suite in run.suites:
        assert suite.skipped is None, suite.skipped
        assert suite.rows
        for row in suite.rows:
            if row.stats is not None:
                assert row.stats.median > 0
                assert all(value == value for value in row.metrics.values())  # no NaN
    link = run.suites[0]
    assert {row.strategy for row in link.rows} >= {"h2d pinned", "d2h pinned"}
    loader = run.suites[3]
    assert any("DeviceLoader" in row.strategy for row in loader.rows)
    assert loader.checks


def test_diagnose_rejects_unknown_variant() -> None:
    from torchport.bench import diagnose_overhead

    with pytest.raises(ValueError, match="unknown variants"):
        diagnose_overhead(quick=True, variants=("profile()",))


def test_misplaced_names_what_is_wrong() -> None:
    from torchport.bench._random_inputs import many_leaf_batch, misplaced

    batch = many_leaf_batch(20)
    assert misplaced(batch, "cpu", 20) is None
    assert misplaced(batch, "meta", 20) == "wrong result: leaves on ['cpu'], expected meta"
    assert misplaced(batch, "cpu", 30) == "wrong result: 20 tensor leaves, expected 30"


def test_a_strategy_that_skips_the_work_is_not_reported_as_fast(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchport.bench import _suite_overhead_traversal as _traversal
    from torchport.bench._competitors import Strategy

    lazy = Strategy("optree.tree_map (bare)", lambda batch: batch)  # moves nothing
    monkeypatch.setattr(_traversal, "optree_map", lambda op: lazy)
    rows, checks = _traversal.traversal_rows(quick=True)
    flagged = {row.case: row for row in rows if row.strategy == lazy.label}
    assert flagged["work t.to('meta')"].stats is None
    assert flagged["work t.to('meta')"].status.startswith("wrong result")
    # for the no-op move the identity *is* the right answer
    assert flagged["no-op move t.to('cpu')"].stats is not None
    # and no ratio is taken against a wrong result
    meta_rows = [row for row in rows if row.case == "work t.to('meta')" and row.stats]
    assert meta_rows and all("vs_optree" not in row.metrics for row in meta_rows)
    assert not [c for c in checks if "optree" in c.name and "meta" in c.name]


def test_a_non_cuda_accelerator_is_named_in_the_skip_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from torchport.bench import accelerator

    monkeypatch.setattr("torchport.place.pick_device", lambda: torch.device("meta"))
    device, reason = accelerator()
    assert device is None
    assert "CUDA or ROCm" in reason and "meta" in reason
