"""Each worker says who it is and who started it, then waits to be stopped."""

import os
import time

print("worker", os.getpid(), os.getppid(), flush=True)
time.sleep(120)
