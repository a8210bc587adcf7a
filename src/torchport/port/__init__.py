"""torchport.port (being built)."""
