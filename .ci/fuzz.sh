#!/usr/bin/env bash
# .ci/fuzz.sh: builds the libFuzzer targets of tests/fuzz (clang, ASan + UBSan, a build folder of
# its own) and runs each for FUZZ_SECONDS seconds (default 45) from seed corpora made of the
# shipped files (experiments/, platforms/, model/catalog/, tests/fixtures/bad/). Fails on the
# first finding: a crash, a hang (-timeout), a leak, a sanitizer report or an uncaught exception
# other than tauplan::InputError; the input that caused it is left in
# $FUZZ_BUILD/fuzz/findings/TARGET/ to be added to the bad-input battery.
#   FUZZ_SECONDS=720 nice -n 19 .ci/fuzz.sh          # 12 minutes per target, at low priority
#   FUZZ_TARGETS="fuzz_job_yaml" .ci/fuzz.sh         # one target
#   FUZZ_BUILD=build-asan .ci/fuzz.sh                # the targets of .ci/sanitize.sh's build
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${FUZZ_BUILD:-build-fuzz}
# An absolute FUZZ_BUILD as it is, a relative one from the repository root.
case "$build" in /*) ;; *) build="$root/$build" ;; esac
seconds=${FUZZ_SECONDS:-45}
targets=${FUZZ_TARGETS:-"fuzz_job_yaml fuzz_workload_yaml fuzz_inventory_yaml fuzz_convergence_csv fuzz_platform_xml"}

mkdir -p "$build"
# A folder already configured with TAUPLAN_FUZZ=ON (the sanitizer build of .ci/sanitize.sh with
# SANITIZE_FUZZ=1) is reused as it is; any other gets a fuzz build of its own.
if ! grep -q '^TAUPLAN_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
    -DCMAKE_CXX_COMPILER=clang++ -DTAUPLAN_FUZZ=ON -DBUILD_TESTING=OFF -DTAUPLAN_BUILD_BENCH=OFF \
    -DTAUPLAN_WITH_CUDA=OFF -DTAUPLAN_WITH_MPI=OFF > "$build/configure.log"
fi
# FUZZ_NO_BUILD=1 runs the targets as they are in $build (a long campaign from a copy of a build
# folder, while the sources change).
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  # shellcheck disable=SC2086
  cmake --build "$build" -j2 --target $targets
fi

# Seeds: the shipped files each reader reads (read-only), plus a writable corpus per target.
seeds() {
  case "$1" in
    fuzz_job_yaml)
      grep -l -E '^(platform|workload|strategies):' experiments/*/*.yaml experiments/*/*/*.yaml \
        2>/dev/null || true
      ls tests/fixtures/bad/job-*.yaml ;;
    fuzz_workload_yaml) ls model/catalog/workloads/*.yaml tests/fixtures/bad/w-*.yaml ;;
    fuzz_inventory_yaml) ls experiments/planning/inventories/*.yaml tests/fixtures/bad/i-*.yaml ;;
    fuzz_convergence_csv)
      grep -l -E '^batch,workers,tau,steps' -r experiments tests 2>/dev/null || true
      ls tests/fuzz/convergence-table.csv tests/fixtures/bad/t-*.csv ;;
    fuzz_platform_xml) ls platforms/*.xml tests/sim/fixtures/*.xml tests/fixtures/bad/p-*.xml ;;
  esac
}

status=0
for target in $targets; do
  seed_dir="$build/fuzz/seeds/$target"
  corpus="$build/fuzz/corpus/$target"
  findings="$build/fuzz/findings/$target"
  rm -rf "$seed_dir"
  mkdir -p "$seed_dir" "$corpus" "$findings"
  seeds "$target" | while read -r file; do cp "$file" "$seed_dir/"; done
  extra=()
  [ "$target" = fuzz_platform_xml ] && extra+=(-dict="$root/tests/fuzz/platform_xml.dict")
  echo "== $target: ${seconds} s from $(ls "$seed_dir" | wc -l) seeds"
  # Profile files named by the seed platforms are looked up from the working folder.
  if ! (cd "$root/tests/fixtures/bad" && "$build/tests/fuzz/$target" \
        -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$findings/" "${extra[@]}" "$corpus" "$seed_dir" \
        > "$build/fuzz/$target.log" 2>&1); then
    echo "!! $target: finding (see $build/fuzz/$target.log and $findings/)"
    tail -40 "$build/fuzz/$target.log"
    status=1
  fi
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/fuzz/$target.log" || true
done
exit $status
