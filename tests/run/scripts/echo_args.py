"""Echoes what Python gave it (argv, __name__, __file__, sys.path[0], stdin); exits with argv[1]."""

import json
import sys

stdin = sys.stdin.read() if "--stdin" in sys.argv else None
seen = {"argv": sys.argv, "name": __name__, "file": __file__, "path0": sys.path[0], "stdin": stdin}
print(json.dumps(seen))
if len(sys.argv) > 1 and sys.argv[1].lstrip("-").isdigit():
    sys.exit(int(sys.argv[1]))
if len(sys.argv) > 1 and sys.argv[1] == "raise":
    raise KeyError("from the script")
if len(sys.argv) > 1 and sys.argv[1] == "message":
    sys.exit("a message for stderr")
