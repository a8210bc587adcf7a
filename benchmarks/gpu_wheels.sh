#!/usr/bin/env bash
# Download the wheels benchmarks/gpu_proof.sh installs on a lent GPU machine into .whl/
# (ignored by git; name it in the device tool's `carry`). For CPython 3.12 on manylinux x86_64,
# whatever this machine runs; one version of each package, as benchmarks/gpu_wheels.txt pins.
# Usage: bash benchmarks/gpu_wheels.sh [DEST]   (DEST defaults to .whl)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.whl}
mkdir -p "$dest"
platforms=()
for tag in manylinux_2_28 manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 manylinux1; do
  platforms+=(--platform "${tag}_x86_64")
done
grep -v '^#' benchmarks/gpu_wheels.txt | grep . |
  xargs python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" --platform any -d "$dest"
ls "$dest" | wc -l | xargs echo "wheels in $dest:"
du -sh "$dest"
