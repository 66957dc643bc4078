#!/usr/bin/env bash
# tidy.sh [FILES...]: clang-tidy (the repo's .clang-tidy) over the given source files, or over
# every .cpp of model/, sim/, exec/ (CPU), study/ and cli/ when none is given. Configures
# build-tidy/ (compile commands only, no compiling) without precompiled headers or unity batches:
# clang-tidy cannot read g++'s precompiled headers, which the default build's commands name.
# Fails on any check listed in WarningsAsErrors.
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "tidy: clang-tidy not found" >&2; exit 1; }
cmake -S . -B build-tidy -DCMAKE_BUILD_TYPE=Release -DTAUPLAN_PCH=OFF -DTAUPLAN_UNITY_TESTS=OFF \
  -DTAUPLAN_WITH_CUDA=OFF -DTAUPLAN_BUILD_BENCH=OFF > /dev/null ||
  { echo "tidy: configuring build-tidy/ failed" >&2; exit 1; }
# The commit header that model/ir/result.cpp includes is written at build time.
cmake --build build-tidy --target tauplan_git_commit > /dev/null
if [ $# -gt 0 ]; then files=("$@"); else
  mapfile -t files < <(git ls-files 'model/*.cpp' 'sim/*.cpp' 'exec/*.cpp' 'study/*.cpp' 'cli/*.cpp')
fi
"$tidy" -p build-tidy --quiet "${files[@]}"
