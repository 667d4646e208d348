#!/usr/bin/env bash
# Installs termrl on a fresh Debian/Ubuntu machine: the sandbox's system tools
# (bubblewrap and the compilers, interpreters and utilities tasks use), then a
# virtual environment in .venv with PyTorch (the CPU build where there is no
# GPU), CTranslate2 (ct2: policies) and termrl itself.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "setup: $*"; }  # one line per step: the whole setup takes a few minutes

SYSTEM_PACKAGES=(bubblewrap util-linux procps python3 python3-venv python3-pytest python3-coverage
                 git gcc g++ make cmake jq sqlite3 bc zip unzip xxd file patch perl
                 chromium)  # chromium: the report's browser tests (headless, driven by Playwright)

if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  say "updating the package lists (apt-get update)"
  $SUDO apt-get update -qq
  say "installing Debian packages (${SYSTEM_PACKAGES[*]})"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${SYSTEM_PACKAGES[@]}" >/dev/null
else
  echo "setup: no apt-get; install these yourself: ${SYSTEM_PACKAGES[*]}" >&2
fi

PYTHON=${PYTHON:-python3}
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "termrl needs Python >= 3.11"'
if [ -x .venv/bin/python ]; then
  say "using the virtual environment in .venv"
else
  say "creating a virtual environment in .venv"
  "$PYTHON" -m venv .venv
fi
say "upgrading pip, setuptools and wheel"
.venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  say "installing PyTorch (a GPU answers nvidia-smi: the CUDA build)"
  .venv/bin/pip install -q --disable-pip-version-check torch
else
  say "installing CPU PyTorch (torch 2.13.0)"
  .venv/bin/pip install -q --disable-pip-version-check torch==2.13.0  # the CPU build
fi
say "installing termrl and its dependencies (pip install -e '.[dev,train,ray,fast,serve,llamacpp]'; fast is CTranslate2, a 43 MB wheel; serve is openenv-core; llamacpp is sentencepiece, for scripts/build_llamacpp.sh's GGUF conversions)"
.venv/bin/pip install -q --disable-pip-version-check -e '.[dev,train,ray,fast,serve,llamacpp]'
echo "setup: done. termrl is at .venv/bin/termrl"
