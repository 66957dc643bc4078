# run-start.sh: the start the testbed's matrix run scripts share (heldout4-first-run/run.sh,
# heldout5-first-run/run.sh, heldout5-three/run.sh, ring2-wide-2026-12-05/posthoc-wide/run.sh,
# heldout6-first-run/run.sh); sourced, not run, with the script's own arguments:
#   source "$(dirname "$0")/../run-start.sh" "$@"
# It refuses anything but one executable argument (usage, exit 2), sets `here` (the calling
# script's folder), starts `vmstat 5` into here/vmstat-5s.txt (stopped when the script exits) and
# writes the binary's --version into here/version.txt. Until this file each script wrote these
# lines itself (heldout4-first-run/run.sh without the version); the runs committed beside them
# ran those, to the same effect.
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
  echo "usage: $(basename "$0") TAUPLAN (an executable)" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
vmstat 5 > "$here/vmstat-5s.txt" &
sampler=$!
trap 'kill $sampler 2>/dev/null' EXIT
"$1" --version > "$here/version.txt" 2>&1
