from __future__ import annotations

import pytest

import torchport as tp


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (tp.DeviceError, ValueError),
        (tp.DeviceMismatchError, RuntimeError),
        (tp.UnsupportedBatchError, TypeError),
        (tp.RedirectError, RuntimeError),
        (tp.ConfigError, ValueError),
    ],
)
def test_each_error_is_a_torchport_error_and_its_builtin(
    cls: type[Exception], builtin: type[Exception]
) -> None:
    assert issubclass(cls, tp.TorchportError)
    assert issubclass(cls, builtin)
    assert cls.__module__ == "torchport"
    with pytest.raises(builtin):
        raise cls("found x, expected y; do z")
