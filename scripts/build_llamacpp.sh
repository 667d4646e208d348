#!/usr/bin/env bash
# Builds llama.cpp's llama-server and llama-quantize for llamacpp:PATH policies and
# [eval] backend = "llama.cpp", from the llama.cpp that the llama-cpp-python source
# distribution on PyPI vendors (so PyPI is the only site needed), into DEST (default:
# $TERMRL_CACHE/llama.cpp, else /var/cache/termrl/llama.cpp for root, else
# ~/.cache/termrl/llama.cpp: where termrl looks first). About 15 minutes on 2 cores; needs
# cmake and a C++ compiler (scripts/setup.sh installs both). GGUF conversions also need
# sentencepiece in termrl's environment (the llamacpp extra; scripts/setup.sh installs it).
#
#   bash scripts/build_llamacpp.sh [DEST]
#
# Tuned for the machine it builds on (GGML_NATIVE) and linked statically (the folder may move):
# build it where it runs.
set -euo pipefail
VERSION=0.3.36  # llama-cpp-python; measured with this one (results/cpu-engines)
if [ -n "${TERMRL_CACHE:-}" ]; then ROOT=$TERMRL_CACHE
elif [ "$(id -u)" -eq 0 ]; then ROOT=/var/cache/termrl
else ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/termrl; fi
DEST=${1:-$ROOT/llama.cpp}
if [ -x "$DEST/build/bin/llama-server" ] && [ -x "$DEST/build/bin/llama-quantize" ]; then
  echo "build_llamacpp: already built: $DEST"; exit 0
fi
for tool in cmake c++ python3; do
  command -v "$tool" >/dev/null || { echo "build_llamacpp: needs $tool (scripts/setup.sh installs it)" >&2; exit 1; }
done
WORK=$(mktemp -d); trap 'rm -rf "$WORK"' EXIT
echo "build_llamacpp: downloading llama-cpp-python $VERSION's source from PyPI"
python3 -m pip download -q --no-deps --no-binary :all: -d "$WORK" "llama-cpp-python==$VERSION"
tar -xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
mkdir -p "$(dirname "$DEST")"
rm -rf "$DEST.partial"
mv "$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp" "$DEST.partial"
cd "$DEST.partial"
step() {  # a step's output goes to build.log; its last lines are shown if it fails
  "$@" >>build.log 2>&1 || { tail -n 30 build.log >&2; echo "build_llamacpp: failed; the whole log: $DEST.partial/build.log" >&2; exit 1; }
}
echo "build_llamacpp: configuring (cmake)"
step cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON
echo "build_llamacpp: compiling llama-server and llama-quantize on $(nproc) cores"
step cmake --build build -j"$(nproc)" --target llama-server llama-quantize
cd - >/dev/null
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
echo "build_llamacpp: built $DEST ($("$DEST/build/bin/llama-server" --version 2>&1 | grep -m1 -o 'version: .*' || echo 'version unknown'))"
