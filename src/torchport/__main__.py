"""``python -m torchport``: the same as the ``torchport`` command.

Under ``-m`` Python puts the working folder first on ``sys.path``, so a project
with its own ``tokenize.py``, ``torch.py`` or ``typing.py`` would have those run in
place of the real ones the first time torchport imports them: checking a project
must never execute its code. The package's ``__init__``, which Python runs before
this file, takes the working folder off ``sys.path`` before it imports anything.
(A script that wants its own modules importable runs under ``torchport run``,
which puts the script's folder first, as ``python script.py`` does.)
"""

from torchport.cli import main

raise SystemExit(main())
