#!/usr/bin/env bash
# Installs the distro packages layerbench builds against (Debian 12 / Ubuntu 24.04 names).
# As root with apt: installs what is missing. Otherwise: prints the exact command to run.
# The CUDA toolkit (nvcc, NCCL, cuDNN, cuBLAS) is optional and not installed here: when nvcc
# is found the CUDA backend is built too.
set -euo pipefail
PACKAGES=(cmake ninja-build g++ pkg-config git python3
          openmpi-bin libopenmpi-dev libfmt-dev libboost-dev libcli11-dev nlohmann-json3-dev
          libbenchmark-dev libgtest-dev libgmock-dev libre2-dev
          libsqlite3-dev   # the history store of layerbench-history
          libbenchmark-tools python3-scipy python3-numpy   # GB compare.py (and what it imports)
          hyperfine                                        # its --export-json read by gate and report (tests)
          help2man man-db dpkg-dev file)   # man pages from --help; the Debian package (cpack -G DEB)
EXTRA=("$@")   # e.g. chromium for the report rendering test

missing=()
for p in "${PACKAGES[@]}" "${EXTRA[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "deps: all packages present"; exit 0; }
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "deps: missing packages; install them with:"
  echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  exit 1
fi
