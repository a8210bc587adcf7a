"""Tests of torchport.diagnose (a package so its basenames may repeat those in tests/cli)."""
