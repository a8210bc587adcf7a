"""Echoes what Python gave it (argv, __name__, sys.path[0], stdin) and exits with argv[1]."""

import json
import sys

stdin = sys.stdin.read() if "--stdin" in sys.argv else None
print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0], "stdin": stdin}))
if len(sys.argv) > 1 and sys.argv[1].lstrip("-").isdigit():
    sys.exit(int(sys.argv[1]))
if len(sys.argv) > 1 and sys.argv[1] == "raise":
    raise KeyError("from the script")
if len(sys.argv) > 1 and sys.argv[1] == "message":
    sys.exit("a message for stderr")
