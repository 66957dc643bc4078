#!/usr/bin/env bash
# run.sh TAUPLAN: the scale pilot repeated, with a group at scale 4 (matrix.yaml beside this
# file), run once by the pilot's run.sh with this folder and testbed prefix tpr-. Root; from the
# repository root; writes beside itself. (As run, the same commands stood here in full.)
dir=$(cd "$(dirname "$0")" && pwd)
[ $# -eq 1 ] || { echo "usage: run.sh TAUPLAN (an executable)" >&2; exit 2; }
exec bash "$dir/../scale-pilot-2026-12-04/run.sh" "$1" "$dir" tpr-
