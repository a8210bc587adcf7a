"""torchport.feed (being built)."""
