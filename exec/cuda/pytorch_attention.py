#!/usr/bin/env python3
"""pytorch_attention.py: time attention forward and backward in PyTorch (bf16) for the compute
profile (tauplan_cuda_profile --attention, model/compute/profile_file.hpp).

Shapes: the `attention HEADS SEQ HEAD_DIM [causal|full]` lines of the shapes file (the one
tauplan_cuda_profile reads; `gemm` lines and `#` comments are skipped; identical shapes are
timed once). HEADS is batch x query heads on one tensor rank. Grouped-query attention: K and V
are passed already expanded to all HEADS heads (the kernel then does the work of full
multi-head attention; what a GQA-aware kernel saves is not measured). The causal field is
`causal` (also true, 1, yes) or `full` (also false, 0, no, noncausal); absent means causal.

Two kernels, each in bf16 with tensors of shape (1, HEADS, SEQ, HEAD_DIM):
  flash: torch.nn.functional.scaled_dot_product_attention under
         torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION) (is_causal for causal);
  math:  written out: S = (Q @ K^T) * d^-1/2 in bf16, the causal mask (masked_fill with -inf),
         P = softmax(S in fp32) cast to bf16, O = P @ V; autograd differentiates it.
Phases: forward = one forward call on inputs that require grad (so it saves what backward
needs, as in training); backward = torch.autograd.grad(O, (Q, K, V), dO) with the forward's
graph retained (retain_graph=True): the backward kernels alone, the forward not re-run, and no
gradient accumulation (fresh gradient tensors each call).

Timing (CUDA): two warm-up calls; one call timed to size the repetitions (--reps, fewer when
they would exceed --shape-budget-s, at least 3); then torch.cuda._sleep holds the stream while
the host enqueues every repetition between its own pair of CUDA events, so host overhead
(autograd, Python) is not timed; the median is reported. Where one set of Q, K, V is under
100 MB, calls rotate over up to 4 sets so that L2 (50 MB) does not hold them across calls.
Flash for every shape first, then the math path (the compute model times attention from the
flash samples; the math samples are for comparison). A shape whose math path would need more
than --memory-fraction of the free memory (about HEADS x SEQ^2 x (32 + 6 x sets) bytes) is
skipped with a JSON note, as is a kernel that refuses a shape (e.g. flash with an unsupported
head_dim), and everything left when --budget-s runs out.

Output, one JSON line each: a header {"impl": "pytorch-attention", ...}; per measurement
{"kernel", "phase", "heads", "sequence", "head_dim", "causal", "seconds", "reps"}; notes
{"note": ..., and the shape}. Exit 0 (with {"skipped": ...} when PyTorch or CUDA is missing),
2 on a bad argument or shapes file. --cpu-test runs the same code on the CPU (fp32, host
clock) to test it on a machine without a GPU; its numbers mean nothing.

Usage: python3 exec/cuda/pytorch_attention.py --shapes exec/cuda/profile_shapes.txt
           [--reps 20] [--shape-budget-s 0.05] [--budget-s 90] [--memory-fraction 0.5]
           [--kernels flash,math] [--cpu-test]
"""
import argparse
import json
import math
import statistics
import sys
import time

CAUSAL_WORDS = {"causal": True, "true": True, "1": True, "yes": True,
                "full": False, "noncausal": False, "false": False, "0": False, "no": False}


def emit(obj):
    print(json.dumps(obj), flush=True)


def read_shapes(path):
    """[(heads, seq, head_dim, causal)] in first-seen order, deduplicated; exits 2 on errors."""
    shapes, seen = [], set()
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        print(f"pytorch_attention.py: error: --shapes: cannot read {path} ({e})", file=sys.stderr)
        sys.exit(2)
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}:{number}"
        if words[0] == "gemm":
            continue
        if words[0] != "attention":
            print(f"pytorch_attention.py: error: {where}: expected `gemm ...` or "
                  f"`attention HEADS SEQ HEAD_DIM [causal|full]`, got {words[0]}", file=sys.stderr)
            sys.exit(2)
        try:
            if len(words) not in (4, 5):
                raise ValueError("expected 3 sizes and an optional causal field")
            heads, seq, dim = (int(w) for w in words[1:4])
            if min(heads, seq, dim) < 1:
                raise ValueError("sizes must be positive")
            causal = True
            if len(words) == 5:
                if words[4].lower() not in CAUSAL_WORDS:
                    raise ValueError(f"causal field {words[4]!r}: expected causal or full")
                causal = CAUSAL_WORDS[words[4].lower()]
        except ValueError as e:
            print(f"pytorch_attention.py: error: {where}: {e}", file=sys.stderr)
            sys.exit(2)
        key = (heads, seq, dim, causal)
        if key not in seen:
            seen.add(key)
            shapes.append(key)
    return shapes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", required=True)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--shape-budget-s", type=float, default=0.05,
                        help="bound on the timed repetitions of one (kernel, phase, shape)")
    parser.add_argument("--budget-s", type=float, default=90.0,
                        help="stop (with notes for the rest) after this many seconds")
    parser.add_argument("--memory-fraction", type=float, default=0.5)
    parser.add_argument("--kernels", default="flash,math")
    parser.add_argument("--cpu-test", action="store_true",
                        help="run on the CPU in fp32 to test this script (numbers mean nothing)")
    args = parser.parse_args()
    kernels = [k for k in args.kernels.split(",") if k]
    if args.reps < 1 or not kernels or any(k not in ("flash", "math") for k in kernels):
        print("pytorch_attention.py: error: --reps >= 1 and --kernels from flash,math",
              file=sys.stderr)
        return 2
    shapes = read_shapes(args.shapes)

    try:
        import torch
    except ImportError as e:  # pragma: no cover - depends on the machine
        emit({"impl": "pytorch-attention", "skipped": f"no PyTorch ({e})"})
        return 0
    cpu = args.cpu_test
    if not cpu and not torch.cuda.is_available():
        emit({"impl": "pytorch-attention", "skipped": "no CUDA device"})
        return 0
    dev = torch.device("cpu" if cpu else "cuda:0")
    dtype = torch.float32 if cpu else torch.bfloat16
    F = torch.nn.functional
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def flash_context():
            return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
        flash_api = "torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)"
    except ImportError:  # PyTorch before 2.3
        def flash_context():
            return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                                  enable_mem_efficient=False)
        flash_api = "torch.backends.cuda.sdp_kernel(enable_flash=True only)"
    have_sdpa = hasattr(F, "scaled_dot_product_attention")
    emit({"impl": "pytorch-attention", "torch": torch.__version__,
          "device": "cpu (--cpu-test)" if cpu else torch.cuda.get_device_name(0),
          "dtype": str(dtype).replace("torch.", ""), "flash_api": flash_api,
          "shapes": len(shapes),
          "method": "median of CUDA-event-timed calls behind torch.cuda._sleep; backward = "
                    "autograd.grad with the forward graph retained; K/V expanded to all heads"})

    def sync():
        if not cpu:
            torch.cuda.synchronize()

    def sleep_s(seconds):
        """Hold the stream so the host can enqueue every timed call first."""
        if cpu or seconds <= 0:
            return
        try:
            torch.cuda._sleep(int(seconds * 2.0e9))  # cycles; ~2 GHz (longer is harmless)
        except (AttributeError, RuntimeError):
            pass

    def time_calls(fn, sets):
        """(median seconds of one call, reps)."""
        fn(0)
        fn(1 % sets)
        sync()
        if cpu:
            t0 = time.perf_counter()
            fn(0)
            estimate = time.perf_counter() - t0
            reps = int(min(args.reps, max(3, args.shape_budget_s // max(estimate, 1e-7))))
            times = []
            for r in range(reps):
                t0 = time.perf_counter()
                fn(r % sets)
                times.append(time.perf_counter() - t0)
            return statistics.median(times), reps
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        h0 = time.perf_counter()
        start.record()
        fn(0)
        end.record()
        host = time.perf_counter() - h0
        sync()
        estimate = start.elapsed_time(end) / 1e3
        reps = int(min(args.reps, max(3, args.shape_budget_s // max(estimate, 1e-7))))
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        sleep_s(min(0.05, 2e-4 + 1.5 * host * reps))
        for r in range(reps):
            starts[r].record()
            fn(r % sets)
            ends[r].record()
        sync()
        return statistics.median(s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)), reps

    def math_attention(q, k, v, causal, mask):
        s = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        if causal:
            s = s.masked_fill(mask, float("-inf"))
        p = torch.softmax(s.to(torch.promote_types(s.dtype, torch.float32)), dim=-1).to(q.dtype)
        return torch.matmul(p, v)

    def flash_attention(q, k, v, causal, mask):
        del mask
        with flash_context():
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    # Both kernels against the same formula in float64 (causal and full), once, on a small shape:
    # a wrong mask or scale shows here, not only in the timings.
    for causal in (True, False):
        gen = torch.Generator(device=dev).manual_seed(7)
        q, k, v = (torch.randn(1, 4, 256, 64, device=dev, dtype=torch.float64, generator=gen)
                   for _ in range(3))
        mask = torch.ones(256, 256, device=dev, dtype=torch.bool).triu(1)
        ref = math_attention(q, k, v, causal, mask)
        for kernel, fn in (("flash", flash_attention), ("math", math_attention)):
            if kernel not in kernels or (kernel == "flash" and not have_sdpa):
                continue
            try:
                with torch.no_grad():
                    got = fn(q.to(dtype), k.to(dtype), v.to(dtype), causal, mask).double()
                err = float((got - ref).norm() / ref.norm())
                emit({"check": f"{kernel} vs float64 math", "causal": causal, "rel_err": err,
                      "bound": 2e-2, "ok": err <= 2e-2})
            except RuntimeError as e:
                emit({"check": f"{kernel} vs float64 math", "causal": causal, "ok": False,
                      "error": str(e).strip()[:300]})

    started = time.perf_counter()
    free_bytes = None
    for kernel in kernels:
        for heads, seq, dim, causal in shapes:
            shape = {"kernel": kernel, "heads": heads, "sequence": seq, "head_dim": dim,
                     "causal": causal}
            if time.perf_counter() - started > args.budget_s:
                emit({"note": f"not timed: --budget-s {args.budget_s:g} s spent", **shape})
                continue
            if kernel == "flash" and not have_sdpa:
                emit({"note": "not timed: this PyTorch has no scaled_dot_product_attention",
                      **shape})
                continue
            qkv_bytes = 3 * heads * seq * dim * (4 if cpu else 2)
            sets = 1 if qkv_bytes >= 100e6 else min(4, math.ceil(150e6 / qkv_bytes))
            if kernel == "math":
                if not cpu:
                    torch.cuda.empty_cache()
                    free_bytes = torch.cuda.mem_get_info()[0]
                need = heads * seq * seq * (32 + 6 * sets)
                if free_bytes is not None and need > args.memory_fraction * free_bytes:
                    if sets > 1 and heads * seq * seq * 38 <= args.memory_fraction * free_bytes:
                        sets = 1
                    else:
                        emit({"note": f"not timed: the math path needs about {need / 2**30:.1f} "
                                      f"GiB, over {args.memory_fraction:g} of the "
                                      f"{free_bytes / 2**30:.1f} GiB free", **shape})
                        continue
            fn_attention = flash_attention if kernel == "flash" else math_attention
            try:
                gen = torch.Generator(device=dev).manual_seed(heads * 1000003 + seq * 1009 + dim)
                def rand(*size):
                    return torch.randn(*size, device=dev, dtype=dtype, generator=gen)
                qs = [rand(1, heads, seq, dim).requires_grad_() for _ in range(sets)]
                ks = [rand(1, heads, seq, dim).requires_grad_() for _ in range(sets)]
                vs = [rand(1, heads, seq, dim).requires_grad_() for _ in range(sets)]
                mask = (torch.ones(seq, seq, device=dev, dtype=torch.bool).triu(1)
                        if kernel == "math" and causal else None)

                def forward(i):
                    return fn_attention(qs[i], ks[i], vs[i], causal, mask)
                fwd_s, fwd_reps = time_calls(forward, sets)
                emit({**shape, "phase": "forward", "seconds": fwd_s, "reps": fwd_reps})

                outs = [forward(i) for i in range(sets)]
                grads = [rand(*outs[i].shape) for i in range(sets)]

                def backward(i):
                    return torch.autograd.grad(outs[i], (qs[i], ks[i], vs[i]), grads[i],
                                               retain_graph=True)
                bwd_s, bwd_reps = time_calls(backward, sets)
                emit({**shape, "phase": "backward", "seconds": bwd_s, "reps": bwd_reps})
            except RuntimeError as e:  # unsupported shape, out of memory
                message = str(e).strip().splitlines()[0][:300] if str(e).strip() else repr(e)
                emit({"note": f"not timed: {type(e).__name__}: {message}", **shape})
            finally:
                qs = ks = vs = outs = grads = mask = None
                if not cpu:
                    torch.cuda.empty_cache()
    emit({"impl": "pytorch-attention", "done": True,
          "seconds": round(time.perf_counter() - started, 1)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
