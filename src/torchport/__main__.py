"""``python -m torchport``: the same as the ``torchport`` command."""

from torchport.cli import main

raise SystemExit(main())
