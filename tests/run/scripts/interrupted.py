"""Waits to be interrupted; an atexit handler shows the redirect is still in place then."""

import atexit
import time

import torch


def goodbye() -> None:
    print("atexit", torch.ones(1).cuda().device, flush=True)


atexit.register(goodbye)
print("ready", flush=True)
while True:
    time.sleep(0.05)
