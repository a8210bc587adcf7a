"""Leaves work behind when its main code ends: a thread, an open thread pool, atexit handlers."""

import atexit
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch


def late() -> None:
    time.sleep(0.3)  # still running when the main code has ended
    print("thread", torch.cuda.is_available(), torch.ones(1).cuda().device, flush=True)


@atexit.register
def first() -> None:
    print("atexit first", torch.zeros(1, device="cuda").device, flush=True)


def second(tag: str) -> None:
    print("atexit", tag, torch.cuda.device_count(), flush=True)


def unregistered() -> None:
    print("never printed")


atexit.register(second, "second")
atexit.register(unregistered)
atexit.unregister(unregistered)
threading.Thread(target=late).start()
pool = ThreadPoolExecutor(1)  # never shut down: Python's exit does it
pool.submit(lambda: print("pool", torch.ones(1).cuda().device, flush=True))
print("main done", flush=True)
