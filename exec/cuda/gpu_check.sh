#!/usr/bin/env bash
# gpu_check.sh: everything a GPU session checks, in one call, from the repository root, within
# a time budget (default 450 s, TAUPLAN_CHECK_BUDGET_S, build included; every stage runs under
# `timeout` with the smaller of its own cap and what is left of the budget, and is skipped
# when less than 5 s would be left).
#
#   bash exec/cuda/gpu_check.sh [BUILD_DIR]        (default BUILD_DIR: build-cuda)
#
# Stages (TAUPLAN_STAGES picks some, space-separated, run in this order: "build grad bench
# profile transformer layertimes breakdown measure block"; default all but layertimes, which
# the transformer stage includes):
#  build       configure with -DTAUPLAN_CUDA_ONLY=ON (Eigen and nlohmann-json headers from
#              /usr/include or the carried .cuda-deps/; CUDA arch from nvidia-smi's compute_cap,
#              or TAUPLAN_CUDA_ARCH; NCCL from PyTorch's wheel when none is installed: see
#              nccl_from_wheel) and build tauplan_cuda_grad_check, tauplan_cuda_bench_step,
#              tauplan_cuda_profile and tauplan_cuda_transformer_check (keep going past a
#              target that fails; the rest still run);
#  grad        the MLP's gradient check against the CPU reference (tauplan_cuda_grad_check);
#  bench       one MLP training step, tauplan (tauplan_cuda_bench_step --graph: plain and as one
#              CUDA graph, plus the check that graph replays give the plain steps' parameters)
#              beside PyTorch (exec/cuda/pytorch_step.py --graph: eager and CUDA graph), for
#              TAUPLAN_BENCH_CONFIGS, entries WIDTHS:BATCH:STEPS:WARMUP (default the acceptance
#              configs: 784-256-128-10 at b = 64 and 1024, 4096x5 at b = 4096); the older
#              TAUPLAN_BENCH_WIDTHS / TAUPLAN_BENCH_BATCHES / TAUPLAN_BENCH_STEPS, when set,
#              give their cross product instead;
#  profile     attention timings (exec/cuda/pytorch_attention.py) then the compute profile
#              (tauplan_cuda_profile) of the shapes in exec/cuda/profile_shapes.txt
#              (TAUPLAN_PROFILE_SHAPES) to $OUT/gpu-profile.json: the GEMMs (--budget-s), the
#              attention products as the CUDA block runs them (batched_gemms, --batched-budget-s)
#              and the block's own memory-bound kernels per kind (memory_kernels); peak flops by
#              device name (H100, H200: 989.5e12; another GPU: the profile is skipped, said so);
#  transformer tauplan_cuda_transformer_check --grad; --train --steps 200; --layer-times
#              --profile $OUT/gpu-profile.json --tensors 1,2,4,8; --step-times;
#  layertimes  tauplan_cuda_transformer_check --layer-times alone (no --grad, --train,
#              --step-times: for a short run; skipped when transformer runs too);
#  breakdown   tauplan_cuda_transformer_check --layer-breakdown --profile $OUT/gpu-profile.json
#              --models TAUPLAN_BREAKDOWN_MODELS (default gpt3-175b,llama3-70b) --tensors
#              TAUPLAN_BREAKDOWN_TENSORS (default 1,8): every kernel and GEMM of one layer timed
#              alone beside its compute-model op (summary: top 25 ops per model and t);
#  measure     the exec engine's trainer (the Plan interpreter) on the GPU: a full tauplan
#              carried in TAUPLAN_FULL_DIR (default .gpu-carry/, made by
#              exec/cuda/pack_full_build.sh where the Debian packages are) runs `tauplan measure
#              experiments/exec/fashion-mlp-gpu.yaml` (device: cuda), the same job with --device
#              cpu, and `single` through NCCL; skipped, and said so, without a carried tauplan;
#  block       python3 exec/cuda/pytorch_block.py --layer-times --tensors 1,2,4,8, then
#              --step-times (PyTorch beside the two timings above; tolerated when absent or
#              failing).
# Output: at most 5 files in $OUT (default BUILD_DIR/gpu-check): summary.md (printed last),
# results.jsonl (every JSON line of every stage, with a "stage" key), logs.txt (every stage's
# stderr and non-JSON output, the build log's tail), environment.txt, gpu-profile.json.
# Intermediate files: BUILD_DIR/gpu-check-work/.
# Exit status: 77 without a GPU; 2 when configure fails or the MLP checks do not build; 1 when
# a check fails or does not run (MLP gradients, graph replays vs plain steps, transformer
# gradients, the profile's GEMM and batched GEMM checks, its memory-kernel layers and its
# read-back); else 0. Nothing here changes the GPU's settings.
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-$root/build-cuda}
out=${OUT:-$build/gpu-check}
work=$build/gpu-check-work
mkdir -p "$out" "$work"
budget=${TAUPLAN_CHECK_BUDGET_S:-450}
reserve=10  # for the summary
stages=${TAUPLAN_STAGES:-"build grad bench profile transformer breakdown measure block"}
jobs=$(nproc 2>/dev/null || echo 4)
shapes_file=${TAUPLAN_PROFILE_SHAPES:-$root/exec/cuda/profile_shapes.txt}
bin=$build/exec
SECONDS=0
logs=$out/logs.txt
results=$out/results.jsonl
status_file=$work/status.tsv
: > "$logs"
: > "$results"
: > "$status_file"
rm -f "$out/summary.md" "$out/gpu-profile.json"

log() {
  echo "gpu_check: $*" >&2
  echo "gpu_check: $*" >> "$logs"
}
want() { case " $stages " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
# One status row: LABEL RC SECONDS NOTE (rc: a number, or skipped/absent).
status() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-}" >> "$status_file"; }

# JSON lines of stdin, each with "stage": $1 first (other lines dropped); a whole stdin that is
# one JSON document of tauplan's result schema ({"context", "results"}) gives one line per
# result, its context under "context".
tag_json() {
  python3 -c '
import json, sys
text = sys.stdin.read()
def emit(j):
    print(json.dumps({"stage": sys.argv[1], **{k: v for k, v in j.items() if k != "stage"}}))
try:
    whole = json.loads(text)
except ValueError:
    whole = None
if isinstance(whole, dict) and isinstance(whole.get("results"), list):
    for r in whole["results"]:
        if isinstance(r, dict):
            emit({**r, "context": whole.get("context", {})})
    sys.exit(0)
for line in text.splitlines():
    line = line.strip()
    if not line.startswith("{"):
        continue
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if isinstance(j, dict):
        emit(j)
' "$1" 2>/dev/null || grep '^{.*}$' | sed "s/^{/{\"stage\": \"$1\", /"
}

# run_stage STAGE LABEL CAP_S COMMAND...: runs COMMAND under timeout (the smaller of CAP_S and
# what is left of the budget); stdout to $work/last.out, its JSON lines to results.jsonl tagged
# STAGE; stderr and non-JSON stdout to logs.txt; a status row for LABEL. Returns COMMAND's exit
# status (124 or 137: timed out; 125: skipped for want of time).
run_stage() {
  local stage=$1 label=$2 cap=$3
  shift 3
  local left=$((budget - SECONDS - reserve))
  local limit=$((cap < left ? cap : left))
  if [ "$limit" -lt 5 ]; then
    status "$label" skipped 0 "time budget spent"
    log "$label: skipped (time budget spent)"
    return 125
  fi
  local t0=$SECONDS rc
  log "$label (limit ${limit} s)"
  timeout --kill-after=5 "$limit" "$@" > "$work/last.out" 2> "$work/last.err"
  rc=$?
  local dt=$((SECONDS - t0)) note=""
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then note="timed out after ${limit} s"; fi
  {
    echo "===== $label: exit $rc, ${dt} s (limit ${limit} s)${note:+, $note}"
    echo "\$ $*"
    tail -n 300 "$work/last.err"
    grep -v '^{' "$work/last.out" | tail -n 100
  } >> "$logs"
  tag_json "$stage" < "$work/last.out" >> "$results"
  status "$label" "$rc" "$dt" "$note"
  log "$label: exit $rc, ${dt} s${note:+ ($note)}"
  return "$rc"
}

# NCCL from PyTorch's wheel (shared/notes/llm-scale.md): when neither NCCL_ROOT nor an installed
# nccl.h / libnccl.so is there, a folder with include -> <wheel>/include and lib/libnccl.so ->
# <wheel>/lib/libnccl.so.2 becomes NCCL_ROOT, and the wheel's lib folder joins LD_LIBRARY_PATH.
nccl_from_wheel() {
  [ "${TAUPLAN_NCCL:-on}" = off ] && { log "NCCL: TAUPLAN_NCCL=off"; return; }
  [ -n "${NCCL_ROOT:-}" ] && { log "NCCL: NCCL_ROOT=$NCCL_ROOT given"; return; }
  local f
  for f in /usr/include/nccl.h /usr/local/include/nccl.h /usr/local/cuda/include/nccl.h; do
    [ -f "$f" ] && { log "NCCL: installed ($f)"; return; }
  done
  local wheel
  wheel=$(timeout 30 python3 - 2>/dev/null <<'EOF'
import glob, os, site, sys
paths = []
for get in (site.getsitepackages, site.getusersitepackages):
    try:
        got = get()
        paths += [got] if isinstance(got, str) else list(got)
    except Exception:
        pass
paths += sys.path
for p in paths:
    for lib in sorted(glob.glob(os.path.join(p, "nvidia", "**", "libnccl.so.2"), recursive=True)):
        top = os.path.dirname(os.path.dirname(lib))
        if os.path.isfile(os.path.join(top, "include", "nccl.h")):
            print(top)
            sys.exit(0)
EOF
  )
  if [ -z "$wheel" ]; then
    log "NCCL: none installed and none in python3's site-packages: building without NCCL"
    return
  fi
  local nccl_root=$build/nccl-from-wheel
  mkdir -p "$nccl_root/lib"
  ln -sfn "$wheel/include" "$nccl_root/include"
  ln -sf "$wheel/lib/libnccl.so.2" "$nccl_root/lib/libnccl.so"
  export NCCL_ROOT=$nccl_root
  export LD_LIBRARY_PATH="$wheel/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  log "NCCL: from PyTorch's wheel $wheel (NCCL_ROOT=$nccl_root)"
}

write_summary() {
  python3 - "$out" "$status_file" "$SECONDS" "$budget" > "$out/summary.md" <<'EOF'
import json, pathlib, sys

out, status_path, elapsed, budget = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
lines = []
for text in (out / "results.jsonl").read_text().splitlines():
    try:
        lines.append(json.loads(text))
    except ValueError:
        pass
status = []
for row in pathlib.Path(status_path).read_text().splitlines():
    parts = (row.split("\t") + ["", "", "", ""])[:4]
    status.append(parts)

def of(stage):
    return [j for j in lines if j.get("stage") == stage]

def fmt(x, digits=4):
    if isinstance(x, bool) or x is None:
        return "-" if x is None else str(x).lower()
    if isinstance(x, (int, float)):
        return f"{x:.{digits}g}"
    return str(x)

def rc_of(label_prefix):
    rows = [s for s in status if s[0].startswith(label_prefix)]
    return rows

device = next((j["device"] for j in lines if isinstance(j.get("device"), str)
               and "cpu" not in j["device"].lower()), "?")
env = (out / "environment.txt").read_text().splitlines() if (out / "environment.txt").exists() else []
commit = next((l.split(" ", 1)[1] for l in env if l.startswith("commit ")), "?")
p = print
p(f"# tauplan gpu_check: {device}\n")
p(f"commit {commit}; {elapsed} s of the {budget} s budget\n")
if any(s[0] == "total" and s[1] == "77" for s in status):
    p("**No usable GPU here: stopped after the build (exit 77).**\n")

# ------------------------------------------------------------------ checks
checks = []
def verdict(rows, ok_rc=(0,)):
    if not rows:
        return "NOT RUN"
    if all(r[1] == "77" for r in rows):
        return "SKIPPED (no usable GPU)"
    bad = [r for r in rows if r[1] not in [str(c) for c in ok_rc]]
    return "PASS" if not bad else "FAIL (" + ", ".join(f"{r[0]}: {r[1]}{' ' + r[3] if r[3] else ''}" for r in bad) + ")"
grad_rows = rc_of("mlp gradient check")
g = of("mlp-grad")
n_ok = sum(1 for j in g if j.get("ok") is True)
n_all = sum(1 for j in g if "ok" in j)
checks.append(("MLP gradient check (tauplan_cuda_grad_check)", verdict(grad_rows), f"{n_ok}/{n_all} checks ok"))
bench = [j for j in of("mlp-bench-tauplan") if "batch" in j]
graph_rows = [j for j in bench if "graph_ok" in j]
bench_bad = [r for r in rc_of("mlp step tauplan") if r[1] != "0"]
errors = [str(j["error"]) for j in of("mlp-bench-tauplan") if "error" in j]
if bench_bad:
    checks.append(("MLP graph replays = plain steps (bench_step --graph)", "FAIL",
                   "; ".join(f"{r[0]}: exit {r[1]} {r[3]}".strip() for r in bench_bad) + ("; " + "; ".join(errors) if errors else "")))
elif graph_rows:
    bad = [j for j in graph_rows if not j["graph_ok"]]
    detail = "; ".join(f"{j['widths']} b={j['batch']}: " + ("bitwise" if j.get("graph_bitwise") else f"max rel {fmt(j.get('graph_max_rel_diff'), 3)}") for j in graph_rows)
    checks.append(("MLP graph replays = plain steps (bench_step --graph)", "PASS" if not bad else "FAIL", detail))
else:
    checks.append(("MLP graph replays = plain steps (bench_step --graph)", "NOT RUN", ""))
tg = rc_of("transformer --grad")
checks.append(("transformer gradient check (--grad)", verdict(tg), ""))
prof = [j for j in of("profile") if "reads_back" in j]
prof_label = "profile: GEMM and batched GEMM results checked, memory kernels timed, file reads back"
if prof:
    j = prof[-1]
    ok = (j["reads_back"] and j.get("failed_checks", 1) == 0 and "batched_error" not in j
          and j.get("batched_failed_checks", 0) == 0 and j.get("memory_kernel_errors", 0) == 0)
    checks.append((prof_label, "PASS" if ok else "FAIL",
                   f"{j.get('gemms_written')} GEMM shapes, {j.get('failed_checks')} failed; "
                   f"{j.get('batched_written', '-')} batched, {j.get('batched_failed_checks', '-')} failed; "
                   f"memory-kernel layers {len(j.get('memory_kernel_layers') or [])}, "
                   f"{j.get('memory_kernel_errors', '-')} failed; {j.get('batched_error', '')}{j.get('problem', '')}"))
else:
    checks.append((prof_label, "NOT RUN", next((r[3] for r in status if r[0].startswith("profile")), "")))
att = [j for j in of("attention") if "check" in j]
if att:
    checks.append(("attention kernels vs float64 (pytorch_attention.py)",
                   "PASS" if all(j.get("ok") for j in att) else "FAIL",
                   "; ".join(f"{j['check']} causal={j['causal']}: {fmt(j.get('rel_err'), 2)}" for j in att)))
p("## Checks\n")
p("| check | result | detail |")
p("|---|---|---|")
for c in checks:
    p(f"| {c[0]} | {c[1]} | {c[2]} |")

# ------------------------------------------------------------------ MLP steps
p("\n## MLP training step, ms (tauplan vs PyTorch; plain/eager and CUDA graph)\n")
torch_rows = {(j["widths"], j["batch"]): j for j in of("mlp-bench-pytorch") if "batch" in j}
tau_rows = {(j["widths"], j["batch"]): j for j in bench}
skips = [j["skipped"] for j in of("mlp-bench-pytorch") + of("mlp-bench-tauplan") if "skipped" in j]
if skips:
    p(f"skipped: {'; '.join(sorted(set(map(str, skips))))}\n")
p("| MLP | batch | tauplan | tauplan graph | PyTorch eager | PyTorch graph | PyTorch graph / tauplan graph |")
p("|---|---|---|---|---|---|---|")
for key in sorted(set(tau_rows) | set(torch_rows), key=lambda k: (len(k[0]), k[0], k[1])):
    t, q = tau_rows.get(key, {}), torch_rows.get(key, {})
    tg_, qg = t.get("graph_step_ms"), q.get("graph_step_ms")
    ratio = f"{qg / tg_:.2f}" if tg_ and qg else "-"
    p(f"| {key[0]} | {key[1]} | {fmt(t.get('step_ms'))} | {fmt(tg_)} | {fmt(q.get('step_ms'))} | {fmt(qg)} | {ratio} |")
p("\nA ratio above 1: tauplan's graph step is faster. Acceptance: 784-256-128-10 at b = 64 no slower than PyTorch with a CUDA graph.")

# ------------------------------------------------------------------ profile
pj = out / "gpu-profile.json"
p("\n## Compute profile\n")
if pj.exists() and prof:
    prof_json = json.loads(pj.read_text())
    gl = [j for j in of("profile") if "gemm" in j]
    eff = sorted(j["efficiency"] for j in gl if "efficiency" in j)
    p(f"- {pj.name}: {prof_json.get('device')}, peak {fmt(prof_json.get('peak_flops'))} flop/s, "
      f"memory {fmt(prof_json.get('memory_bandwidth_Bps', 0) / 1e9)} GB/s, launch {fmt(prof_json.get('launch_overhead_s', 0) * 1e6)} us")
    if eff:
        p(f"- {len(eff)} GEMM shapes: efficiency min {eff[0]:.3f}, median {eff[len(eff) // 2]:.3f}, max {eff[-1]:.3f}")
    a = prof_json.get("attention", [])
    p(f"- {len(a)} attention samples" + (f"; default_attention_efficiency {prof_json['default_attention_efficiency']:.3f}" if "default_attention_efficiency" in prof_json else ""))
    bl = [j for j in of("profile") if "batched_gemm" in j]
    over = sorted(j["over_stacked"] for j in bl if isinstance(j.get("over_stacked"), (int, float)))
    s_ = prof[-1]
    p(f"- {len(prof_json.get('batched_gemms', []))} batched GEMM samples (attention products as the block runs them; "
      f"{s_.get('batched_shapes', '-')} shapes, {s_.get('batched_failed_checks', '-')} failed the check, "
      f"{s_.get('batched_not_measured', '-')} not measured)"
      + (f"; time over the stacked GEMM's: min {over[0]:.2f}, median {over[len(over) // 2]:.2f}, max {over[-1]:.2f}" if over else ""))
    mk = prof_json.get("memory_kernels") or {}
    stream = prof_json.get("memory_bandwidth_Bps") or 0
    if mk:
        p("- memory kernels (the block's own, bytes as layer_ops counts them; "
          + ", ".join(s_.get("memory_kernel_layers") or []) + "): "
          + ", ".join(f"{k} {fmt(v / 1e9)} GB/s" + (f" ({v / stream:.2f} of streaming)" if stream else "") for k, v in mk.items()))
    else:
        p("- memory kernels: not measured (every kind at memory_bandwidth_Bps)")
    for j in of("profile"):
        if "memory_kernels_layer" in j and ("error" in j or "skipped" in j):
            p(f"- memory kernels, {j['memory_kernels_layer']} t={j.get('tensor')}: {j.get('error') or j.get('skipped')}")
        if "memory_kernels_layer" in j and any(not f.get("subtracted", True) for f in (j.get("fused") or {}).values()):
            p(f"- memory kernels, {j['memory_kernels_layer']} t={j.get('tensor')}: a fused residual charge over 3/4 of its norm backward, not subtracted")
        inb, alone = j.get("attention_products_in_block_s") or {}, j.get("attention_products_profiled_s") or {}
        ratios = [f"{k.replace('attention.', '')} {inb[k] / alone[k]:.2f}" for k in inb if alone.get(k)]
        if ratios:
            p(f"- attention products timed in the block over the batched sweep's, {j['memory_kernels_layer']} t={j.get('tensor')}: " + ", ".join(ratios))
    p(f"- profile stage {prof[-1].get('seconds')} s")
else:
    why = [f"{r[0]}: {r[1]} {r[3]}".strip() for r in status if r[0].startswith(("profile", "attention"))]
    p("not written" + (": " + "; ".join(why) if why else " (not run)"))

# ------------------------------------------------------------------ transformer (generic)
ID_KEYS = ["model", "config", "name", "layer", "tensor", "tensors", "t", "tp", "batch", "micro_batch",
           "sequence", "seq", "hidden", "attention", "kernel", "phase", "recompute", "what"]
SKIP = {"stage", "impl", "device", "torch", "ok", "bound", "check", "note"}

def ident(j):
    return ", ".join(f"{k}={j[k]}" for k in ID_KEYS if k in j and not isinstance(j[k], (dict, list)))

def numeric(j, word):
    keys = [k for k, v in j.items() if word in k and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return (keys[0], j[keys[0]]) if len(keys) >= 1 else (None, None)

def measured_vs_predicted(stage, title):
    rows = [j for j in of(stage) if numeric(j, "measured")[0] and numeric(j, "predicted")[0]]
    if not rows:
        other = [j for j in of(stage) if "skipped" not in j][:40]
        if other:
            p(f"\n## {title}\n")
            p("```")
            for j in other:
                p(json.dumps({k: v for k, v in j.items() if k != "stage"})[:240])
            p("```")
        return
    p(f"\n## {title}\n")
    p("| case | measured | predicted | error % |")
    p("|---|---|---|---|")
    for j in rows:
        mk, mv = numeric(j, "measured")
        pk, pv = numeric(j, "predicted")
        err = (pv - mv) / mv * 100 if mv else float("nan")
        p(f"| {ident(j) or '-'} | {fmt(mv)} ({mk}) | {fmt(pv)} ({pk}) | {err:+.1f} |")

def step_table(stage_a, stage_b, title):
    def timed(j):
        for key in ("step_ms", "graph_step_ms", "ms", "step_s", "seconds"):
            if isinstance(j.get(key), (int, float)) and not isinstance(j.get(key), bool):
                return key, j[key]
        return None, None
    a = [j for j in of(stage_a) if timed(j)[0]]
    b = [j for j in of(stage_b) if timed(j)[0]]
    if not a and not b:
        return
    p(f"\n## {title}\n")
    bi = {ident(j): j for j in b}
    p(f"| case | tauplan | PyTorch | PyTorch / tauplan |")
    p("|---|---|---|---|")
    seen = set()
    for j in a:
        key = ident(j)
        seen.add(key)
        ka, va = timed(j)
        o = bi.get(key)
        kb, vb = timed(o) if o else (None, None)
        ratio = f"{vb / va:.2f}" if va and vb and ka == kb else "-"
        p(f"| {key or '-'} | {fmt(va)} ({ka}) | {fmt(vb)}{f' ({kb})' if kb else ''} | {ratio} |")
    for key, o in bi.items():
        if key not in seen:
            kb, vb = timed(o)
            p(f"| {key or '-'} | - | {fmt(vb)} ({kb}) | - |")

def layer_table():
    tau = [j for j in of("transformer-layer-times") if "model" in j]
    py = [j for j in of("pytorch-block-layer-times") if "model" in j]
    if not tau and not py:
        measured_vs_predicted("transformer-layer-times", "Transformer layer times: measured vs predicted")
        return
    p("\n## Transformer layer times, ms (one layer shard, forward + backward): tauplan measured vs predicted from gpu-profile.json, and PyTorch\n")
    p("| model | t | tauplan (math) | predicted | error % | PyTorch math | PyTorch flash |")
    p("|---|---|---|---|---|---|---|")
    def cell(j):
        if j is None:
            return "-"
        if isinstance(j.get("measured_ms"), (int, float)):
            return fmt(j["measured_ms"])
        for k in ("skipped", "error", "note"):
            if k in j:
                return f"{k}: {str(j[k])[:60]}"
        return "?"
    keys = []
    for j in tau + py:
        key = (j.get("model"), j.get("tensor"))
        if key not in keys:
            keys.append(key)
    for key in keys:
        t = next((j for j in tau if (j.get("model"), j.get("tensor")) == key), None)
        pm = next((j for j in py if (j.get("model"), j.get("tensor")) == key and j.get("attention") == "math"), None)
        pf = next((j for j in py if (j.get("model"), j.get("tensor")) == key and j.get("attention") == "flash"), None)
        pred = t.get("predicted_ms") if t else None
        meas = t.get("measured_ms") if t else None
        err = f"{(pred - meas) / meas * 100:+.1f}" if isinstance(pred, (int, float)) and isinstance(meas, (int, float)) and meas else "-"
        p(f"| {key[0]} | {key[1]} | {cell(t)} | {fmt(pred)} | {err} | {cell(pm)} | {cell(pf)} |")

layer_table()

def breakdown_table():
    rows = [j for j in of("transformer-layer-breakdown") if "breakdown_op" in j]
    sums = [j for j in of("transformer-layer-breakdown") if j.get("breakdown_summary")]
    other = [j for j in of("transformer-layer-breakdown")
             if "breakdown_op" not in j and not j.get("breakdown_summary")]
    if not rows and not sums and not other:
        return
    p("\n## Transformer layer breakdown, ms (every kernel / GEMM of one layer shard timed alone, "
      "CUDA events between launches; predicted: the compute model's matching layer_ops)\n")
    for j in other:
        p("- " + json.dumps({k: v for k, v in j.items() if k != "stage"})[:300])
    keys = []
    for j in sums + rows:
        key = (j.get("model"), j.get("tensor"))
        if key not in keys:
            keys.append(key)
    def num_or_none(v):
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    for key in keys:
        s = next((j for j in sums if (j.get("model"), j.get("tensor")) == key), None)
        p(f"\n### {key[0]}, t = {key[1]}\n")
        if s:
            p(f"sum of op medians {fmt(s.get('measured_ms'))} ms (plain pass {fmt(s.get('plain_ms'))} ms, "
              f"pass with events {fmt(s.get('pass_with_events_ms'))} ms, {s.get('device_ops')} device ops); "
              f"predicted {fmt(s.get('predicted_ms'))} ms\n")
            cats = s.get("by_category") or {}
            if cats:
                p("| category | measured | predicted | measured / predicted |")
                p("|---|---|---|---|")
                for name, c in cats.items():
                    m, q = num_or_none(c.get("measured_ms")), num_or_none(c.get("predicted_ms"))
                    p(f"| {name} | {fmt(m)} | {fmt(q)} | {f'{m / q:.2f}' if m is not None and q else '-'} |")
                p("")
        rs = [j for j in rows if (j.get("model"), j.get("tensor")) == key]
        rs.sort(key=lambda j: -(num_or_none(j.get("measured_ms")) or 0))
        p("| op | category | measured | predicted | measured / predicted | device ops |")
        p("|---|---|---|---|---|---|")
        for j in rs[:25]:
            m, q = num_or_none(j.get("measured_ms")), num_or_none(j.get("predicted_ms"))
            dev = j.get("device_ops") or {}
            dev_text = "; ".join(f"{k} {fmt(v, 3)}" for k, v in dev.items()) if len(dev) > 1 else ""
            p(f"| {j.get('breakdown_op')} | {j.get('category')} | {fmt(m)} | {fmt(q)} | "
              f"{f'{m / q:.2f}' if m is not None and q else '-'} | {dev_text} |")
        if len(rs) > 25:
            p(f"\n({len(rs) - 25} smaller ops left out; all in results.jsonl)")

breakdown_table()
step_table("transformer-step-times", "pytorch-block-step-times", "Transformer block step: tauplan vs PyTorch")
train = [j for j in of("transformer-train")]
if train:
    p("\n## Transformer training (--train --steps 200)\n")
    p("```")
    for j in train[-6:]:
        p(json.dumps({k: v for k, v in j.items() if k != "stage"})[:240])
    p("```")

# ------------------------------------------------------------------ the Plan interpreter on the GPU
measured = [(st, j) for st in ("measure-cuda", "measure-cpu", "measure-nccl") for j in of(st) if "strategy" in j]
if measured or rc_of("tauplan measure"):
    p("\n## The Plan interpreter on the GPU: tauplan measure experiments/exec/fashion-mlp-gpu.yaml\n")
    for r in rc_of("tauplan measure"):
        if r[1] != "0":
            p(f"- {r[0]}: exit {r[1]} {r[3]}".rstrip())
    if measured:
        p("| run | strategy | K | tau | communicator | steps to target (rounds) | accuracy | reached | C(b) per worker, ms | S, ms | round, ms | training s | wall s |")
        p("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for st, j in measured:
            ms = lambda k: fmt(j[k] * 1e3) if isinstance(j.get(k), (int, float)) else "-"
            steps = j.get("steps_to_target")
            p(f"| {st.replace('measure-', '')} ({j.get('engine')}) | {j.get('strategy')} | {j.get('workers')} | {j.get('tau')} | "
              f"{j.get('communicator', '-')} | {steps if steps is not None else '-'} ({fmt(j.get('rounds_to_target'))}) | "
              f"{fmt(j.get('final_accuracy'))} | {fmt(j.get('reached_target'))} | {ms('compute_s')} | {ms('S_s')} | "
              f"{ms('round_median_s')} | {fmt(j.get('total_s'))} | {fmt(j.get('wall_s'))} |")
        p("\nSame job, seed and data on the GPU (CUDA replicas, fp32 cuBLAS) and on this machine's CPU: "
          "steps to target should agree to within one evaluation interval (100 steps per worker).")

# ------------------------------------------------------------------ stages
p("\n## Stages\n")
p("| stage | exit | seconds | note |")
p("|---|---|---|---|")
for s in status:
    p(f"| {s[0]} | {s[1]} | {s[2]} | {s[3]} |")
p("\nFiles: results.jsonl (every JSON line, with its stage), logs.txt, environment.txt, gpu-profile.json.")
EOF
}

finish() {  # finish EXIT_CODE
  status "total" "$1" "$SECONDS" "budget ${budget} s"
  write_summary || echo "(summary failed)" > "$out/summary.md"
  cat "$out/summary.md"
  exit "$1"
}

# ------------------------------------------------------------------ environment
if ! command -v nvcc > /dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
commit=$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo "${TAUPLAN_COMMIT:-unknown}")
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
{
  echo "# gpu_check $date_utc"
  echo "commit $commit"
  timeout 20 nvidia-smi 2>&1 || echo "nvidia-smi unavailable"
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1
  echo "cores $jobs"
  timeout 20 python3 -c 'import importlib.metadata as m, sys
for p in ("torch", "nvidia-nccl-cu12", "nvidia-nccl-cu13"):
    try:
        print(p, m.version(p))
    except Exception:
        pass
print("python", sys.version.split()[0])' 2>&1 || true
} > "$out/environment.txt"
arch=${TAUPLAN_CUDA_ARCH:-}
if [ -z "$arch" ]; then
  cap=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
  case "$cap" in [0-9][0-9] | [0-9][0-9][0-9]) arch="${cap}-real" ;; esac
fi

# ------------------------------------------------------------------ build
if want build; then
  # Headers carried as a tarball (exec/cuda/pack_full_build.sh) when none are installed.
  carried=${TAUPLAN_FULL_DIR:-$root/.gpu-carry}
  if [ -f "$carried/cuda-deps.tar.xz" ] && [ ! -d "$root/.cuda-deps" ] && [ ! -d /usr/include/eigen3 ]; then
    mkdir -p "$root/.cuda-deps" && tar -C "$root/.cuda-deps" -xJf "$carried/cuda-deps.tar.xz" &&
      log "headers: unpacked $carried/cuda-deps.tar.xz into .cuda-deps/"
  fi
  nccl_from_wheel
  configure=(cmake -S "$root" -B "$build" -DTAUPLAN_CUDA_ONLY=ON -DCMAKE_BUILD_TYPE=Release)
  [ -n "$arch" ] && configure+=("-DCMAKE_CUDA_ARCHITECTURES=$arch")
  if ! run_stage build configure 120 "${configure[@]}"; then
    log "configure failed (logs.txt)"
    finish 2
  fi
  targets=(tauplan_cuda_grad_check tauplan_cuda_bench_step tauplan_cuda_profile
           tauplan_cuda_transformer_check)
  keep_going=()
  case "$(grep '^CMAKE_GENERATOR:' "$build/CMakeCache.txt" 2>/dev/null)" in
    *Ninja*) keep_going=(-- -k 0) ;;
    *Makefiles*) keep_going=(-- -k) ;;
  esac
  t0=$SECONDS
  left=$((budget - SECONDS - reserve))
  log "build (${targets[*]}; $jobs jobs; limit $((left < 330 ? left : 330)) s)"
  timeout --kill-after=5 $((left < 330 ? left : 330)) \
    cmake --build "$build" -j "$jobs" --target "${targets[@]}" ${keep_going[@]+"${keep_going[@]}"} \
    > "$work/build.log" 2>&1
  build_rc=$?
  {
    echo "===== build: exit $build_rc, $((SECONDS - t0)) s"
    grep -iE 'error|warning: ' "$work/build.log" | head -n 60
    echo "----- build log, last 40 lines"
    tail -n 40 "$work/build.log"
  } >> "$logs"
  status build "$build_rc" "$((SECONDS - t0))" ""
  log "build: exit $build_rc, $((SECONDS - t0)) s"
  if [ "$build_rc" -eq 124 ] || [ "$build_rc" -eq 137 ]; then
    log "build: timed out; going on with whatever binaries are there"
  elif [ "$build_rc" -ne 0 ]; then
    # Which targets are usable: each one rebuilt alone (a no-op when it is up to date).
    for t in "${targets[@]}"; do
      left=$((budget - SECONDS - reserve))
      [ "$left" -lt 10 ] && break
      if timeout $((left < 120 ? left : 120)) cmake --build "$build" -j "$jobs" --target "$t" \
        > "$work/build-$t.log" 2>&1; then
        status "build $t" 0 0 ""
      else
        status "build $t" 1 0 "does not build (logs.txt)"
        rm -f "$bin/$t"
        { echo "----- $t does not build:"; grep -iE 'error' "$work/build-$t.log" | head -n 20; } >> "$logs"
      fi
    done
  fi
fi
if { want grad || want bench; } &&
  { [ ! -x "$bin/tauplan_cuda_grad_check" ] || [ ! -x "$bin/tauplan_cuda_bench_step" ]; }; then
  log "the MLP checks did not build (logs.txt)"
  finish 2
fi

failed=0
# ------------------------------------------------------------------ MLP gradient check
if want grad; then
  run_stage mlp-grad "mlp gradient check" 90 "$bin/tauplan_cuda_grad_check"
  grad_rc=$?
  if [ "$grad_rc" -eq 77 ]; then
    log "no usable GPU here: stopping (exit 77)"
    finish 77
  fi
  [ "$grad_rc" -ne 0 ] && failed=1
elif [ -x "$bin/tauplan_cuda_bench_step" ]; then
  "$bin/tauplan_cuda_bench_step" --steps 1 --warmup 0 > /dev/null 2>&1
  [ $? -eq 77 ] && { log "no usable GPU here: stopping (exit 77)"; finish 77; }
fi

# ------------------------------------------------------------------ MLP step: tauplan vs PyTorch
if want bench; then
  configs=${TAUPLAN_BENCH_CONFIGS:-"784,256,128,10:64:300:20 784,256,128,10:1024:300:20 4096,4096,4096,4096,4096:4096:40:5"}
  if [ -n "${TAUPLAN_BENCH_WIDTHS:-}${TAUPLAN_BENCH_BATCHES:-}" ]; then
    configs=""
    for w in ${TAUPLAN_BENCH_WIDTHS:-"784,256,128,10 4096,4096,4096,4096,4096"}; do
      for b in ${TAUPLAN_BENCH_BATCHES:-"64 1024 4096"}; do
        configs+=" $w:$b:${TAUPLAN_BENCH_STEPS:-300}:20"
      done
    done
  fi
  for c in $configs; do
    IFS=: read -r widths batch steps warmup <<< "$c"
    if ! run_stage mlp-bench-tauplan "mlp step tauplan $widths b=$batch" 60 \
      "$bin/tauplan_cuda_bench_step" --widths "$widths" --batch "$batch" --steps "$steps" \
      --warmup "${warmup:-20}" --graph; then
      failed=1
    fi
    run_stage mlp-bench-pytorch "mlp step pytorch $widths b=$batch" 90 \
      python3 "$root/exec/cuda/pytorch_step.py" --widths "$widths" --batch "$batch" \
      --steps "$steps" --warmup "${warmup:-20}" --graph
  done
fi

# ------------------------------------------------------------------ compute profile
profile=${TAUPLAN_PROFILE:-$out/gpu-profile.json}  # TAUPLAN_PROFILE: time against a committed profile instead
if want profile; then
  if [ ! -x "$bin/tauplan_cuda_profile" ]; then
    status profile absent 0 "tauplan_cuda_profile did not build"
    failed=1
  elif [ ! -f "$shapes_file" ]; then
    status profile absent 0 "no shapes file $shapes_file"
    log "profile: no shapes file $shapes_file"
    failed=1
  else
    device=$(timeout 60 "$bin/tauplan_cuda_profile" --device-name 2> /dev/null | head -1)
    peak=""
    case "$device" in
      *H100* | *H200*)
        peak=989.5e12
        peak_source="NVIDIA H100/H200 SXM datasheet, dense BF16 1,979 TFLOPS with sparsity / 2 (model/catalog/gpus.yaml)"
        ;;
    esac
    if [ -z "$peak" ]; then
      status profile skipped 0 "no peak flops known for '$device' (H100 and H200 only)"
      log "profile: skipped: no peak flops known for '$device'"
    else
      left=$((budget - SECONDS - reserve))
      run_stage attention "attention timings (pytorch_attention.py)" 120 \
        python3 "$root/exec/cuda/pytorch_attention.py" --shapes "$shapes_file" \
        --budget-s $((left < 200 ? left / 3 : 70))
      grep '^{' "$work/last.out" > "$work/attention.jsonl"
      left=$((budget - SECONDS - reserve))
      if ! run_stage profile "profile (tauplan_cuda_profile)" 200 \
        "$bin/tauplan_cuda_profile" --shapes "$shapes_file" --out "$profile" \
        --peak-flops "$peak" --peak-source "$peak_source" \
        --source "measured by exec/cuda/gpu_check.sh, commit $commit, $date_utc" \
        --attention "$work/attention.jsonl" --budget-s $((left < 200 ? left / 3 : 80)) \
        --batched-budget-s $((left < 200 ? left / 6 : 40)); then
        failed=1
      fi
    fi
  fi
fi

# ------------------------------------------------------------------ transformer block
if want transformer; then
  tc=$bin/tauplan_cuda_transformer_check
  if [ ! -x "$tc" ]; then
    status "transformer --grad" absent 0 "tauplan_cuda_transformer_check did not build"
    failed=1
  else
    if ! run_stage transformer-grad "transformer --grad" 120 "$tc" --grad; then
      failed=1
    fi
    run_stage transformer-train "transformer --train" 120 "$tc" --train --steps 200
    if [ -f "$profile" ]; then
      run_stage transformer-layer-times "transformer --layer-times" 120 \
        "$tc" --layer-times --profile "$profile" --tensors 1,2,4,8
    else
      status "transformer --layer-times" skipped 0 "no gpu-profile.json"
    fi
    run_stage transformer-step-times "transformer --step-times" 90 "$tc" --step-times
  fi
fi
if want layertimes && ! want transformer; then
  tc=$bin/tauplan_cuda_transformer_check
  if [ ! -x "$tc" ]; then
    status "transformer --layer-times" absent 0 "tauplan_cuda_transformer_check did not build"
  elif [ -f "$profile" ]; then
    run_stage transformer-layer-times "transformer --layer-times" 120 \
      "$tc" --layer-times --profile "$profile" --tensors "${TAUPLAN_LAYER_TENSORS:-1,2,4,8}"
  else
    status "transformer --layer-times" skipped 0 "no gpu-profile.json"
  fi
fi
if want breakdown; then
  tc=$bin/tauplan_cuda_transformer_check
  if [ ! -x "$tc" ]; then
    status "transformer --layer-breakdown" absent 0 "tauplan_cuda_transformer_check did not build"
  elif [ -f "$profile" ]; then
    run_stage transformer-layer-breakdown "transformer --layer-breakdown" 90 \
      "$tc" --layer-breakdown --profile "$profile" \
      --models "${TAUPLAN_BREAKDOWN_MODELS:-gpt3-175b,llama3-70b}" \
      --tensors "${TAUPLAN_BREAKDOWN_TENSORS:-1,8}"
  else
    status "transformer --layer-breakdown" skipped 0 "no gpu-profile.json"
  fi
fi
# ------------------------------------------------------------------ the Plan interpreter on the GPU
# A full tauplan (exec/cuda/pack_full_build.sh: built with CUDA where the Debian packages are,
# its libraries and Fashion-MNIST beside it in TAUPLAN_FULL_DIR, default .gpu-carry/) runs
# experiments/exec/fashion-mlp-gpu.yaml: the exec engine's trainer with CUDA replicas and the
# device communicator, then the same job on this machine's CPU (--device cpu), then `single`
# through NCCL. Skipped, and said so, when no full tauplan was carried.
if want measure; then
  full=${TAUPLAN_FULL_DIR:-$root/.gpu-carry}
  job=$root/experiments/exec/fashion-mlp-gpu.yaml
  data_dir=$full/data
  if [ ! -x "$full/tauplan" ] && [ -f "$full/full.tar.xz" ]; then
    rm -rf "$work/full" && mkdir -p "$work/full" && tar -C "$work/full" -xJf "$full/full.tar.xz" &&
      full=$work/full
  fi
  if [ ! -x "$full/tauplan" ]; then
    status "tauplan measure (device: cuda)" skipped 0 "no full tauplan in $full (exec/cuda/pack_full_build.sh BUILD_DIR)"
    log "measure: skipped: no full tauplan in $full"
  else
    [ -z "${NCCL_ROOT:-}" ] && nccl_from_wheel
    head -3 "$full/manifest.txt" 2> /dev/null | sed 's/^/measure: carried tauplan: /' >> "$logs"
    run_env=(env "LD_LIBRARY_PATH=$full/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
             "TAUPLAN_DATA_DIR=$data_dir")
    if ! run_stage measure-cuda "tauplan measure (device: cuda)" 180 \
      "${run_env[@]}" "$full/tauplan" measure "$job" --json; then
      failed=1
    fi
    run_stage measure-cpu "tauplan measure (device: cpu, same job)" 150 \
      "${run_env[@]}" "$full/tauplan" measure "$job" --device cpu --json
    if ! run_stage measure-nccl "tauplan measure (single through NCCL)" 90 \
      "${run_env[@]}" "$full/tauplan" measure "$job" --strategies single --communicator nccl --json; then
      failed=1
    fi
  fi
fi
if want block; then
  pb=$root/exec/cuda/pytorch_block.py
  if [ ! -f "$pb" ]; then
    status "pytorch_block.py" absent 0 "exec/cuda/pytorch_block.py not there"
  else
    run_stage pytorch-block-layer-times "pytorch_block.py --layer-times" 120 \
      python3 "$pb" --layer-times --tensors 1,2,4,8
    run_stage pytorch-block-step-times "pytorch_block.py --step-times" 90 python3 "$pb" --step-times
  fi
fi

finish "$failed"
