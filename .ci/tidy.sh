#!/usr/bin/env bash
# tidy.sh [FILES...]: clang-tidy (the repo's .clang-tidy) over the given source files, or over
# every .cpp of model/, sim/, exec/ (CPU), study/ and cli/ when none is given. Needs
# build/compile_commands.json (the default build writes it). Fails on any check listed in
# WarningsAsErrors.
set -euo pipefail
cd "$(dirname "$0")/.."
tidy=$(command -v clang-tidy-14 || command -v clang-tidy || true)
[ -n "$tidy" ] || { echo "tidy: clang-tidy not found" >&2; exit 1; }
[ -f build/compile_commands.json ] || { echo "tidy: build/compile_commands.json missing (configure first)" >&2; exit 1; }
if [ $# -gt 0 ]; then files=("$@"); else
  mapfile -t files < <(git ls-files 'model/*.cpp' 'sim/*.cpp' 'exec/*.cpp' 'study/*.cpp' 'cli/*.cpp')
fi
"$tidy" -p build --quiet "${files[@]}"
