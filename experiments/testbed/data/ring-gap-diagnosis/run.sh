#!/usr/bin/env bash
# run.sh: why the rings that cross routes of unequal latency run slower than every engine predicts
# (experiments/testbed/README.md, "Where the rings' time goes"). A diagnosis, not a validation: it
# measures two rows of the second held-out matrix (heldout2-matrix.yaml rows 00 and 06: the ring of
# 16 in leaf order and the ring of 3 across the three leaves of testbed-fattree3-2to1.xml) as
# validate measures them, then with one thing changed at a time:
#   as-validated   the job as validate runs it (an evaluation on rank 0 every 2 rounds, all ranks
#                  waiting for it);
#   no-evaluation  no evaluation between the timed rounds (eval_every above max_steps, 64 rounds);
#   no-ss-restart  as validated, with net.ipv4.tcp_slow_start_after_idle = 0 in every host's
#                  namespace (TCP keeps its congestion window across an idle pause longer than
#                  its retransmission timeout instead of starting from 10 segments again);
#   cubic          as validated, every host namespace on CUBIC instead of the kernel's default
#                  congestion control (BBR on this machine);
#   big-buffers    as validated, with every socket's first receive and send buffers at 1 MiB
#                  (net.ipv4.tcp_rmem, tcp_wmem "4096 1048576 6291456"), so that no window
#                  starts below the longest route's bandwidth-delay product (100 KB).
# Then the ring of 16 as validated and without evaluations on the same platform at --scale 2
# (every bandwidth halved, every latency doubled: an alpha-beta transfer takes exactly twice as
# long, an identity), to see what of its time does not scale with the network.
# Each run keeps its JSON and a trace of its first 64 rounds (every rank's compute and
# collective spans). Usage (root, nothing else running):
#   bash experiments/testbed/data/ring-gap-diagnosis/run.sh BUILD/cli/tauplan [OUT]
set -euo pipefail
tauplan=$(realpath "${1:?usage: run.sh TAUPLAN [OUT]}")
here=$(cd "$(dirname "$0")" && pwd)
out=${2:-$here}
repo=$(cd "$here/../../../.." && pwd)
cd "$repo"
prefix=tpd-
platform=platforms/testbed-fattree3-2to1.xml
job=experiments/testbed/fashion-mlp.yaml
mkdir -p "$out"
"$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true
allowed_cc=$(sysctl -n net.ipv4.tcp_allowed_congestion_control)
trap 'sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed_cc"
      "$tauplan" testbed down --prefix "$prefix" > /dev/null 2>&1 || true' EXIT
"$tauplan" testbed up "$platform" --prefix "$prefix" > "$out/testbed-up.txt"
ring16=a-h0,a-h1,a-h2,a-h3,a-h4,a-h5,b-h0,b-h1,b-h2,b-h3,b-h4,b-h5,c-h0,c-h1,c-h2,c-h3
ring3=a-h2,b-h2,c-h2
first_ns=$(ip netns list | awk '{print $1}' | grep "^$prefix" | head -1)
rmem=$(ip netns exec "$first_ns" sysctl -n net.ipv4.tcp_rmem | tr -s '\t ' ' ')
wmem=$(ip netns exec "$first_ns" sysctl -n net.ipv4.tcp_wmem | tr -s '\t ' ' ')
cc=$(ip netns exec "$first_ns" sysctl -n net.ipv4.tcp_congestion_control)
echo "namespaces' own settings: $cc, tcp_rmem $rmem, tcp_wmem $wmem, tcp_slow_start_after_idle" \
  "$(ip netns exec "$first_ns" sysctl -n net.ipv4.tcp_slow_start_after_idle)" | tee "$out/settings.txt"
set_buffers() {  # tcp_rmem and tcp_wmem ("min first max") for every host namespace of this testbed
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix"); do
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_rmem="$1"
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_wmem="$2"
  done
}
set_congestion_control() {  # for every host namespace of this testbed (new connections)
  # A namespace may only pick what the initial namespace allows (restored on exit).
  grep -qw "$1" <<< "$allowed_cc" || sysctl -q -w net.ipv4.tcp_allowed_congestion_control="$allowed_cc $1"
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix"); do
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_congestion_control="$1"
  done
}
set_ss_restart() {  # value for every host namespace of this testbed
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix"); do
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_slow_start_after_idle="$1"
  done
}
measure() {  # name hosts batch [extra job flags...]
  local name=$1 hosts=$2 batch=$3
  shift 3
  local k
  k=$(tr ',' '\n' <<< "$hosts" | wc -l)
  echo "$(date -u +%H:%M:%S) $name"
  "$tauplan" testbed run --prefix "$prefix" --hosts "$hosts" -- "$tauplan" measure "$job" \
    --platform="$platform" --strategies=sync --workers="$k" --hosts="$hosts" --tau=1 \
    --collective=ring --timing=concurrent --batch="$batch" --communicator=mpi \
    --target_accuracy=0.8 --trace_rounds=64 "$@" --trace "$out/$name.trace.json" --json \
    > "$out/$name.json" 2> "$out/$name.err" || {
    local rc=$?
    # 3: the target was not reached (the runs without evaluation cannot reach it); kept.
    [ "$rc" -eq 3 ] || { echo "$name: exit $rc (see $out/$name.err)"; return "$rc"; }
  }
}
for rep in 1 2; do
  set_ss_restart 1
  measure "ring16-as-validated-$rep" "$ring16" 256
  measure "ring16-no-evaluation-$rep" "$ring16" 256 --eval_every=100000 --max_steps=64
  measure "ring3-as-validated-$rep" "$ring3" 96
  measure "ring3-no-evaluation-$rep" "$ring3" 96 --eval_every=100000 --max_steps=64
  set_ss_restart 0
  measure "ring16-no-ss-restart-$rep" "$ring16" 256
  measure "ring3-no-ss-restart-$rep" "$ring3" 96
  set_ss_restart 1
  set_congestion_control cubic
  measure "ring16-cubic-$rep" "$ring16" 256
  measure "ring3-cubic-$rep" "$ring3" 96
  set_congestion_control "$cc"
  set_buffers "4096 1048576 6291456" "4096 1048576 6291456"
  measure "ring16-big-buffers-$rep" "$ring16" 256
  measure "ring3-big-buffers-$rep" "$ring3" 96
  set_buffers "$rmem" "$wmem"
done
"$tauplan" testbed status --prefix "$prefix" > "$out/fabric.txt"
"$tauplan" testbed down --prefix "$prefix" > /dev/null
"$tauplan" testbed up "$platform" --prefix "$prefix" --scale 2 > "$out/testbed-up-scale2.txt"
for rep in 1 2; do
  measure "ring16-scale2-as-validated-$rep" "$ring16" 256
  measure "ring16-scale2-no-evaluation-$rep" "$ring16" 256 --eval_every=100000 --max_steps=64
done
"$tauplan" testbed status --prefix "$prefix" > "$out/fabric-scale2.txt"
echo "$(date -u +%H:%M:%S) done"
