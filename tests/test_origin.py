"""Whose code a frame runs: the user's, torch's, torchport's, or another installed package's."""

from __future__ import annotations

import json
import os

import torch
from hypothesis import given
from hypothesis import strategies as st

import torchport
from torchport._origin import Origin, is_installed, is_library, origin

_SEGMENT = st.text(alphabet="abcdefghij_0123456789", min_size=1, max_size=12)


def test_each_origin_is_found() -> None:
    assert origin(torch.__file__) is Origin.TORCH
    assert origin(torchport.__file__) is Origin.TORCHPORT
    assert origin(json.__file__) is Origin.INSTALLED  # the standard library
    assert origin(__file__) is Origin.USER
    assert origin("<string>") is Origin.USER  # code compiled from text: the user's
    assert origin("<frozen runpy>") is Origin.INSTALLED


@given(st.lists(_SEGMENT, max_size=4), st.lists(_SEGMENT, min_size=1, max_size=4))
def test_anything_under_a_package_folder_is_installed(head: list[str], tail: list[str]) -> None:
    for folder in ("site-packages", "dist-packages"):
        path = os.path.join(os.sep, *head, folder, *tail) + ".py"
        assert is_installed(path) and origin(path) is Origin.INSTALLED
        assert not is_library(path)  # only torch and torchport are the "library" of run's shims


@given(st.lists(_SEGMENT, min_size=1, max_size=5))
def test_a_project_folder_is_the_users(parts: list[str]) -> None:
    path = os.path.join(os.getcwd(), *parts) + ".py"
    assert not is_installed(path) and origin(path) is Origin.USER
