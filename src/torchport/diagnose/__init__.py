"""torchport.diagnose (being built)."""
