"""The pytest plugin torchport gives its users: a ``device`` fixture and a ``devices`` marker."""
