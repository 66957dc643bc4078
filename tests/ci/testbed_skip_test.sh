#!/usr/bin/env bash
# testbed_skip_test.sh TAUPLAN: .ci/testbed_validation.sh skips (exit 0) with a last line that
# names the cause when the testbed cannot run: no `ip` on the PATH, no `mpirun` on the PATH, and
# no rights to create network namespaces (CAP_NET_ADMIN and CAP_SYS_ADMIN dropped with
# setpriv; only as root, else this process has none to begin with and the case is the same).
# Each case stops at tauplan's first check, before any namespace exists. Exit 1 on a mismatch.
set -uo pipefail
tauplan=$(readlink -f "${1:?usage: testbed_skip_test.sh TAUPLAN}")
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
failures=0

# A PATH of links to every command of the system's PATH except the named ones.
path_without() {
  local bin="$scratch/bin-$1"
  mkdir -p "$bin"
  local dir tool
  for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [ -d "$dir" ] || continue
    for tool in "$dir"/*; do
      local name=${tool##*/}
      case " $* " in *" $name "*) continue ;; esac
      [ -e "$bin/$name" ] || ln -s "$tool" "$bin/$name"
    done
  done
  echo "$bin"
}

check() {  # NAME EXPECTED-CAUSE COMMAND...
  local name=$1 expected=$2
  shift 2
  local output status last
  output=$(TESTBED_VALIDATION_OUT="$scratch/out" "$@" 2>&1)
  status=$?
  last=$(printf '%s\n' "$output" | tail -n 1)
  if [ "$status" -eq 0 ] && [[ "$last" == "testbed validation skipped: $expected ("* ]]; then
    echo "ok: $name: $last"
  else
    echo "FAIL: $name: exit $status, last line: $last" >&2
    failures=$((failures + 1))
  fi
}

script="$root/.ci/testbed_validation.sh"
check "no ip" "no \`ip\` (iproute2)" \
  env PATH="$(path_without ip)" bash "$script" "$tauplan"
check "no mpirun" "no \`mpirun\` (OpenMPI)" \
  env PATH="$(path_without mpirun mpiexec orterun)" bash "$script" "$tauplan"
if [ "$(id -u)" -eq 0 ]; then
  check "no rights" "no rights to create network namespaces" \
    setpriv --bounding-set=-net_admin,-sys_admin --inh-caps=-net_admin,-sys_admin \
    bash "$script" "$tauplan"
else
  check "no rights" "no rights to create network namespaces" bash "$script" "$tauplan"
fi
exit $((failures > 0))
