#!/usr/bin/env python3
"""pytorch_block.py: the decoder block of exec/transformer_config.hpp in PyTorch, timed beside
tauplan_cuda_transformer_check (exec/cuda/transformer_check.cpp).

The same model: token + learned position embedding; pre-norm layers (RMSNorm or LayerNorm;
causal grouped-query attention, query head j using K/V head j // (local_heads /
local_kv_heads), scale 1/sqrt(head_dim); output projection; GELU (tanh) or SwiGLU feed-forward);
final norm; untied head; mean next-token cross-entropy. No linear biases, no dropout. A tensor
shard t has heads/t query heads, max(1, kv_heads/t) K/V heads, ffn_hidden/t columns, and no
communication. Attention two ways:
  flash  torch.nn.functional.scaled_dot_product_attention, default backend (flash on H100 for
         bf16, head_dim <= 256), causal; K/V heads shared with enable_gqa when the flash
         backend takes it, else repeated (the JSON's "sdpa_gqa" says which);
  math   explicit (Q / sqrt(d)) K^T, causal mask, softmax, P V in bf16 (softmax math in fp32
         inside the kernel), K/V repeated to the query heads, as tauplan's math path.

Modes (JSON lines with the C++ program's keys, "impl": "pytorch", so that they can be joined):
  --step-times [--reps R]   one training step (zero gradients, forward, backward, AdamW) of the
        mid-size config (hidden 1024, heads 16, kv 4, ffn 2816, SwiGLU, RMSNorm, 4 layers,
        sequence 1024, micro-batch 4, vocabulary 8192): fp32 master parameters, bf16 compute
        by torch.autocast, AdamW(betas 0.9/0.95, eps 1e-8, no weight decay, fused).
  --layer-times [--tensors 1,2,4,8] [--reps R]   forward + backward of ONE layer shard of GPT-3
        175B (Brown et al. 2020, Table 2.1) and Llama-3-70B (Dubey et al. 2024, Table 3) on a
        random bf16 input and upstream gradient: the layer in bf16 (module.to(bfloat16)), weight
        gradients included, no optimizer.
  --attention flash|math|both (default both). Timings: median of R (default 10) CUDA-event
  timings after 3 warm-ups. Exit 0 with {"skipped": ...} when PyTorch or CUDA is missing, 2 on
  a bad argument.
"""
import argparse
import json
import math
import sys

STEP_CONFIG = dict(vocabulary=8192, hidden=1024, heads=16, kv_heads=4, ffn_hidden=2816, layers=4,
                   sequence=1024, micro_batch=4, tensor=1, norm="rmsnorm",
                   feed_forward="swiglu")
LAYER_MODELS = [
    # GPT-3 175B: Brown et al. 2020, arXiv 2005.14165, Table 2.1.
    ("gpt3-175b", dict(vocabulary=8, hidden=12288, heads=96, kv_heads=96, ffn_hidden=49152,
                       layers=1, sequence=2048, micro_batch=1, norm="layernorm",
                       feed_forward="gelu")),
    # Llama 3 70B: Dubey et al. 2024, arXiv 2407.21783, Table 3.
    ("llama3-70b", dict(vocabulary=8, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672,
                        layers=1, sequence=8192, micro_batch=1, norm="rmsnorm",
                        feed_forward="swiglu")),
]
EPS = 1e-5


def emit(obj):
    print(json.dumps(obj), flush=True)


def shard(c):
    t = c["tensor"]
    d = c["hidden"] // c["heads"]
    lh = c["heads"] // t
    lkv = c["kv_heads"] // t if c["kv_heads"] >= t else 1
    return d, lh, lkv, c["ffn_hidden"] // t


def problem(c):
    t = c["tensor"]
    if c["hidden"] % c["heads"] or c["heads"] % c["kv_heads"]:
        return "heads must divide hidden and kv_heads must divide heads"
    if c["heads"] % t or (c["kv_heads"] % t and t % c["kv_heads"]) or c["ffn_hidden"] % t:
        return "tensor must divide heads, ffn_hidden and kv_heads (or be a multiple of it)"
    return None


def build(torch, F, nn):
    """The module classes (defined once torch is imported)."""

    class Norm(nn.Module):
        def __init__(self, h, layer_norm, **kw):
            super().__init__()
            self.layer_norm = layer_norm
            self.gain = nn.Parameter(torch.ones(h, **kw))
            self.bias = nn.Parameter(torch.zeros(h, **kw)) if layer_norm else None

        def forward(self, x):
            if self.layer_norm:
                return F.layer_norm(x, (x.shape[-1],), self.gain, self.bias, EPS)
            if hasattr(F, "rms_norm"):
                return F.rms_norm(x, (x.shape[-1],), self.gain, EPS)
            xf = x.float()
            y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
            return y.to(x.dtype) * self.gain

    class Attention:
        """flash (SDPA) or math; q [b, lh, s, d], k and v [b, lkv, s, d]."""

        def __init__(self, kind, sequence, device, gqa_native):
            self.kind = kind
            self.gqa_native = gqa_native
            self.mask = None
            if kind == "math":
                self.mask = torch.ones(sequence, sequence, dtype=torch.bool,
                                       device=device).triu(1)

        def __call__(self, q, k, v):
            group = q.shape[1] // k.shape[1]
            scale = 1.0 / math.sqrt(q.shape[-1])
            if self.kind == "flash":
                if group > 1 and self.gqa_native:
                    return F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                          enable_gqa=True)
                if group > 1:
                    k = k.repeat_interleave(group, dim=1)
                    v = v.repeat_interleave(group, dim=1)
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
            if group > 1:
                k = k.repeat_interleave(group, dim=1)
                v = v.repeat_interleave(group, dim=1)
            with torch.autocast("cuda", enabled=False):  # scores and P in bf16, as tauplan
                dt = v.dtype
                s = torch.matmul(q.to(dt) * scale, k.to(dt).transpose(-1, -2))
                s.masked_fill_(self.mask, float("-inf"))
                p = torch.softmax(s, dim=-1)
                return torch.matmul(p, v)

    class Layer(nn.Module):
        def __init__(self, c, attention, **kw):
            super().__init__()
            h = c["hidden"]
            self.d, self.lh, self.lkv, f = shard(c)
            ln = c["norm"] == "layernorm"
            self.swiglu = c["feed_forward"] == "swiglu"
            self.attention = attention
            self.norm1 = Norm(h, ln, **kw)
            self.wq = nn.Linear(h, self.lh * self.d, bias=False, **kw)
            self.wk = nn.Linear(h, self.lkv * self.d, bias=False, **kw)
            self.wv = nn.Linear(h, self.lkv * self.d, bias=False, **kw)
            self.wo = nn.Linear(self.lh * self.d, h, bias=False, **kw)
            self.norm2 = Norm(h, ln, **kw)
            self.w_gate = nn.Linear(h, f, bias=False, **kw) if self.swiglu else None
            self.w_up = nn.Linear(h, f, bias=False, **kw)
            self.w2 = nn.Linear(f, h, bias=False, **kw)

        def forward(self, x):
            b, s, h = x.shape
            u = self.norm1(x)
            q = self.wq(u).view(b, s, self.lh, self.d).transpose(1, 2)
            k = self.wk(u).view(b, s, self.lkv, self.d).transpose(1, 2)
            v = self.wv(u).view(b, s, self.lkv, self.d).transpose(1, 2)
            o = self.attention(q, k, v).transpose(1, 2).reshape(b, s, self.lh * self.d)
            x = x + self.wo(o)
            u = self.norm2(x)
            if self.swiglu:
                a = F.silu(self.w_gate(u)) * self.w_up(u)
            else:
                a = F.gelu(self.w_up(u), approximate="tanh")
            return x + self.w2(a)

    class Model(nn.Module):
        def __init__(self, c, attention, **kw):
            super().__init__()
            h = c["hidden"]
            self.token = nn.Embedding(c["vocabulary"], h, **kw)
            self.position = nn.Parameter(torch.randn(c["sequence"], h, **kw) * 0.02)
            nn.init.normal_(self.token.weight, std=0.02)
            self.layers = nn.ModuleList(Layer(c, attention, **kw) for _ in range(c["layers"]))
            self.final = Norm(h, c["norm"] == "layernorm", **kw)
            self.head = nn.Linear(h, c["vocabulary"], bias=False, **kw)

        def forward(self, inputs, targets):
            x = self.token(inputs) + self.position[: inputs.shape[1]]
            for layer in self.layers:
                x = layer(x)
            logits = self.head(self.final(x))
            return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                                   targets.reshape(-1))

    return Layer, Model, Attention


def timed(torch, fn, warmup, reps):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ms = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    ms.sort()
    n = len(ms)
    median = ms[n // 2] if n % 2 else 0.5 * (ms[n // 2 - 1] + ms[n // 2])
    return median, ms[0]


def noted(torch, row, e):
    """Notes a case's exception on its row: out of memory skips the case, anything else is an
    error; returns the failures it counts (1 for an error)."""
    if isinstance(e, torch.cuda.OutOfMemoryError):
        row["skipped"] = f"out of memory: {str(e).splitlines()[0]}"
        return 0
    row["error"] = f"{type(e).__name__}: {e}"
    return 1


def probe_gqa(torch, F, device):
    """Whether the flash SDPA backend takes enable_gqa (PyTorch >= 2.5 on some backends)."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        q = torch.randn(1, 4, 64, 64, device=device, dtype=torch.bfloat16)
        k = torch.randn(1, 2, 64, 64, device=device, dtype=torch.bfloat16)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True)
        torch.cuda.synchronize()
        return True
    except Exception:  # noqa: BLE001 - any refusal means "repeat K/V"
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--step-times", action="store_true")
    mode.add_argument("--layer-times", action="store_true")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--tensors", default="1,2,4,8")
    parser.add_argument("--attention", choices=["flash", "math", "both"], default="both")
    args = parser.parse_args()
    try:
        tensors = [int(t) for t in args.tensors.split(",")]
    except ValueError:
        print(f"pytorch_block.py: error: --tensors: expected integers, got {args.tensors}",
              file=sys.stderr)
        return 2
    if args.reps < 1 or args.warmup < 0 or min(tensors) < 1:
        print("pytorch_block.py: error: bad --reps, --warmup or --tensors", file=sys.stderr)
        return 2
    name = "step_times" if args.step_times else "layer_times"

    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except ImportError as e:  # pragma: no cover - depends on the machine
        emit({"mode": name, "impl": "pytorch", "skipped": f"no PyTorch ({e})"})
        return 0
    if not torch.cuda.is_available():
        emit({"mode": name, "impl": "pytorch", "skipped": "no CUDA device"})
        return 0

    device = torch.device("cuda:0")
    torch.manual_seed(1)
    Layer, Model, Attention = build(torch, F, nn)
    gqa_native = probe_gqa(torch, F, device)
    kinds = ["flash", "math"] if args.attention == "both" else [args.attention]
    common = {"impl": "pytorch", "torch": torch.__version__,
              "device": torch.cuda.get_device_name(0), "reps": args.reps}
    failures = 0

    if args.step_times:
        c = dict(STEP_CONFIG)
        for kind in kinds:
            row = {"mode": "step_times", "attention": kind, **c, **common}
            if kind == "flash":
                row["sdpa_gqa"] = "native" if gqa_native else "repeated"
            try:
                model = Model(c, Attention(kind, c["sequence"], device, gqa_native),
                              device=device, dtype=torch.float32)
                opt_kw = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0)
                try:
                    opt = torch.optim.AdamW(model.parameters(), fused=True, **opt_kw)
                    row["adamw"] = "fused"
                except (RuntimeError, TypeError):
                    opt = torch.optim.AdamW(model.parameters(), **opt_kw)
                    row["adamw"] = "foreach"
                g = torch.Generator(device="cpu").manual_seed(1)
                tokens = torch.randint(0, c["vocabulary"],
                                       (c["micro_batch"], c["sequence"] + 1),
                                       generator=g).to(device)
                inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
                losses = []

                def step():
                    opt.zero_grad(set_to_none=True)
                    with torch.autocast("cuda", dtype=torch.bfloat16):
                        loss = model(inputs, targets)
                    loss.backward()
                    opt.step()
                    losses.append(loss.detach())

                med, low = timed(torch, step, args.warmup, args.reps)
                row.update(parameters=sum(p.numel() for p in model.parameters()),
                           step_ms=round(med, 4), step_min_ms=round(low, 4),
                           tokens_per_s=round(c["micro_batch"] * c["sequence"] / (med / 1e3)),
                           initial_loss=round(float(losses[0]), 5),
                           includes="zero gradients, forward, backward, AdamW (fp32 master, "
                                    "bf16 autocast)")
                del model, opt
            except Exception as e:  # noqa: BLE001 - report and go on
                failures += noted(torch, row, e)
            emit(row)
            torch.cuda.empty_cache()
        return 1 if failures else 0

    for model_name, base in LAYER_MODELS:
        for t in tensors:
            c = dict(base, tensor=t)
            for kind in kinds:
                row = {"mode": "layer_times", "model": model_name, "attention": kind, **c,
                       **common}
                if kind == "flash":
                    row["sdpa_gqa"] = "native" if gqa_native else "repeated"
                why = problem(c)
                if why:
                    row["skipped"] = why
                    emit(row)
                    continue
                layer = x = dy = None
                try:
                    layer = Layer(c, Attention(kind, c["sequence"], device, gqa_native),
                                  device=device, dtype=torch.bfloat16)
                    shape = (c["micro_batch"], c["sequence"], c["hidden"])
                    x = torch.randn(shape, device=device, dtype=torch.bfloat16,
                                    requires_grad=True)
                    dy = torch.randn(shape, device=device, dtype=torch.bfloat16)

                    def once():
                        for p in layer.parameters():
                            p.grad = None
                        x.grad = None
                        layer(x).backward(dy)

                    med, low = timed(torch, once, args.warmup, args.reps)
                    row.update(measured_ms=round(med, 4), measured_min_ms=round(low, 4),
                               peak_gib=round(torch.cuda.max_memory_allocated() / 2**30, 2),
                               includes="forward + backward of one layer shard (bf16 module) "
                                        "incl. weight gradients; no optimizer")
                except Exception as e:  # noqa: BLE001 - report and go on
                    failures += noted(torch, row, e)
                emit(row)
                del layer, x, dy
                torch.cuda.empty_cache()
                torch.cuda.reset_peak_memory_stats()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
