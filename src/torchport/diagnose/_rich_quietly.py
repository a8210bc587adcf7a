"""``rich``, imported without drawing from the program's random generators.

``rich.style`` takes 24 bits from Python's global ``random`` when it is imported. This
package is imported on the first ``tp.audit``/``tp.strict``, often after the program
seeded ``random``: that draw shifted every later ``random`` value of the program, so
diagnosing changed what it ran. The state is kept around the import and put back.
"""

from __future__ import annotations

import random

_PROGRAMS_STATE = random.getstate()
try:
    import rich.console
    import rich.padding
    import rich.table
    import rich.text  # noqa: F401  (imported for their import-time draws, kept here)
finally:
    random.setstate(_PROGRAMS_STATE)
    del _PROGRAMS_STATE
