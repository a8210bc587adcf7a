"""``python -m torchport``: the same as the ``torchport`` command."""

from torchport.cli._main import main

raise SystemExit(main())
