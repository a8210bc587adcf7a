"""torchport.bench (being built)."""
