#!/usr/bin/env bash
# The PyTorch peer of `npm run bench -- model` should run on an optimised BLAS: Debian's
# python3-torch links the reference BLAS (~3 GFLOP/s), which flatters tfjs. This unpacks Debian's
# OpenBLAS (pthread build) into .bench/openblas without installing anything system-wide, and
# prints the --blas-dir to pass (or export MARSRL_TORCH_BLAS_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.bench/openblas
mkdir -p "$dest"
(cd "$dest" && apt-get download libopenblas0-pthread >/dev/null 2>&1)
dpkg -x "$dest"/libopenblas0-pthread_*.deb "$dest/root"
dir=$(dirname "$(find "$dest/root" -name 'libblas.so.3' | head -1)")
echo "export MARSRL_TORCH_BLAS_DIR=$(pwd)/$dir"
