#!/usr/bin/env bash
# gpu_check.sh: everything a GPU session checks, in one call, from the repository root.
#
#   bash exec/cuda/gpu_check.sh [BUILD_DIR]        (default BUILD_DIR: build-cuda)
#
# 1. configures with -DTAUPLAN_CUDA_ONLY=ON (CUDA and Eigen headers only: Eigen from
#    /usr/include/eigen3 or the carried .cuda-deps/eigen3) and builds the CUDA checks;
# 2. runs the gradient check against the CPU reference (tauplan_cuda_grad_check);
# 3. times one training step with tauplan_cuda_bench_step and with PyTorch
#    (exec/cuda/pytorch_step.py), side by side, for the MLP 784-256-128-10 and for a wide MLP of
#    4 layers of 4096 (4096-4096-4096-4096-4096), at b = 64, 256, 1024 and 4096 each
#    (TAUPLAN_BENCH_WIDTHS: space-separated width lists; TAUPLAN_BENCH_BATCHES; TAUPLAN_BENCH_STEPS);
# 4. writes nvidia-smi, logs, JSON lines and summary.md to $OUT (or BUILD_DIR/gpu-check).
# Exit status: 0 when the gradient check passes, 1 when it fails, 77 without a GPU, 2 when the
# build fails. Nothing here changes the GPU's settings.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-cuda}
out=${OUT:-$build/gpu-check}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 4)
widths_list=${TAUPLAN_BENCH_WIDTHS:-"784,256,128,10 4096,4096,4096,4096,4096"}
batches=${TAUPLAN_BENCH_BATCHES:-"64 256 1024 4096"}
steps=${TAUPLAN_BENCH_STEPS:-300}

{
  echo "# gpu_check $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo "commit unknown"
  nvidia-smi 2>&1 || echo "nvidia-smi unavailable"
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1
} > "$out/environment.txt"

echo "gpu_check: configuring $build" >&2
if ! cmake -S "$root" -B "$build" -DTAUPLAN_CUDA_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
     > "$out/configure.log" 2>&1; then
  tail -30 "$out/configure.log" >&2
  echo "gpu_check: configure failed (log: $out/configure.log)" >&2
  exit 2
fi
if ! cmake --build "$build" -j "$jobs" --target tauplan_cuda_grad_check tauplan_cuda_bench_step \
     > "$out/build.log" 2>&1; then
  tail -30 "$out/build.log" >&2
  echo "gpu_check: build failed (log: $out/build.log)" >&2
  exit 2
fi

echo "gpu_check: gradient check" >&2
"$build/exec/tauplan_cuda_grad_check" > "$out/grad_check.txt" 2>&1
grad_rc=$?
cat "$out/grad_check.txt" >&2
if [ "$grad_rc" -eq 77 ]; then
  echo "gpu_check: no usable GPU here: skipped" >&2
  exit 77
fi

echo "gpu_check: step timing (widths $widths_list; batches $batches)" >&2
: > "$out/bench_tauplan.jsonl"
: > "$out/bench_pytorch.jsonl"
for widths in $widths_list; do
  for b in $batches; do
    "$build/exec/tauplan_cuda_bench_step" --widths "$widths" --batch "$b" --steps "$steps" \
      >> "$out/bench_tauplan.jsonl" 2>> "$out/bench.log" ||
      echo "gpu_check: tauplan_cuda_bench_step --widths $widths --batch $b failed" >&2
    python3 "$root/exec/cuda/pytorch_step.py" --widths "$widths" --batch "$b" --steps "$steps" \
      >> "$out/bench_pytorch.jsonl" 2>> "$out/bench.log" ||
      echo "gpu_check: pytorch_step.py --widths $widths --batch $b: exit $?" >&2
  done
done

python3 - "$out" "$grad_rc" <<'EOF' > "$out/summary.md"
import json, sys, pathlib
out, grad_rc = pathlib.Path(sys.argv[1]), int(sys.argv[2])
def rows(name):
    r, skipped = {}, None
    for line in (out / name).read_text().splitlines():
        try:
            j = json.loads(line)
        except ValueError:
            continue
        if "batch" in j:
            r[(j["widths"], j["batch"])] = j
        elif "skipped" in j:
            skipped = j["skipped"]
    return r, skipped
(t, t_skip), (p, p_skip) = rows("bench_tauplan.jsonl"), rows("bench_pytorch.jsonl")
env = (out / "environment.txt").read_text().splitlines()
print("# tauplan CUDA backend on this GPU\n")
device = next((v.get("device") for v in t.values() if "device" in v), "?")
print(f"device: {device}; commit {env[1] if len(env) > 1 else '?'}\n")
print(f"gradient check: {'PASS' if grad_rc == 0 else 'FAIL'} (grad_check.txt)\n")
if p_skip:
    print(f"PyTorch skipped: {p_skip}\n")
print("| MLP | batch | tauplan step ms | PyTorch step ms | PyTorch / tauplan |")
print("|---|---|---|---|---|")
for key in sorted(set(t) | set(p), key=lambda k: (len(k[0]), k[0], k[1])):
    ts, ps = t.get(key, {}).get("step_ms"), p.get(key, {}).get("step_ms")
    ratio = f"{ps / ts:.2f}" if ts and ps else "-"
    print(f"| {key[0]} | {key[1]} | {ts if ts else '-'} | {ps if ps else '-'} | {ratio} |")
print("\nA ratio above 1 means tauplan's step is faster (target: no slower than PyTorch).")
EOF
cat "$out/summary.md" >&2
exit $(( grad_rc == 0 ? 0 : 1 ))
