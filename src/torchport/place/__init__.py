"""torchport.place (being built)."""
