#!/usr/bin/env bash
# format.sh: fails when a tracked C++ file differs from what clang-format (the repo's
# .clang-format) makes of it. Prints the files and the first lines of each difference.
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$formatter" ]; then
  echo "format: clang-format not found (apt-get install clang-format)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.h')
bad=0
for f in "${files[@]}"; do
  if ! diff -q <("$formatter" --style=file "$f") "$f" > /dev/null; then
    echo "format: $f is not clang-formatted:"
    diff -u "$f" <("$formatter" --style=file "$f") | head -20 || true
    bad=$((bad + 1))
  fi
done
echo "format: ${#files[@]} files checked, $bad not formatted"
[ "$bad" -eq 0 ]
