# diagnosis-setup.sh: the start every testbed diagnosis script of 2026-12-04 shares
# (host-contention-2026-12-04/run.sh, ring-packets-2026-12-04/run.sh,
# queue-behind-2026-12-04/run.sh); sourced, not run. From the script's arguments TAUPLAN [OUT]:
# the testbed of PLATFORM brought up under PREFIX (any leftover removed first, removed again on
# exit), the diagnosis program BINARY found beside tauplan's build, the commit and `vmstat 5`
# recorded in OUT (default: the script's folder). In a script, after `set -euo pipefail`:
#   source "$(dirname "$0")/../diagnosis-setup.sh" PREFIX PLATFORM BINARY "$@"
# It sets tauplan, here (the script's folder), out, prefix, bin and vmstat_pid, and leaves the
# shell in the repository's root. (Until this file, each script wrote these lines itself; the
# runs committed beside them ran those, to the same effect.)
setup_prefix=$1 setup_platform=$2 setup_binary=$3
shift 3
tauplan=$(realpath "${1:?usage: $(basename "$0") TAUPLAN [OUT]}")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here}
cd "$here/../../../.."
prefix=$setup_prefix
mkdir -p "$out"
bin=$(dirname "$tauplan")/../tests/exec/testbed/$setup_binary
if [ ! -x "$bin" ]; then
  echo "$(basename "$0"): no $bin (build the target $setup_binary)" >&2
  exit 2
fi
"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true
trap '"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true' EXIT
"$tauplan" testbed up "$setup_platform" --prefix "$prefix" > "$out/testbed-up.txt"
git rev-parse HEAD > "$out/commit.txt"
vmstat 5 > "$out/vmstat.txt" &
vmstat_pid=$!
