#!/usr/bin/env python3
"""pytorch_step.py: time one training step of the same MLP in PyTorch, for comparison with
tauplan_cuda_bench_step (exec/cuda/bench_step.cpp).

Same work: Linear+ReLU layers with the same widths, softmax cross-entropy (mean), plain SGD
(no momentum), fp32 with TF32 disabled, a device-resident random batch, --warmup untimed
steps, then 5 rounds of --steps/5 steps enqueued back to back, each round timed with CUDA
events; step_ms is the median round's time per step (as tauplan_cuda_bench_step).
With --graph the whole step (forward, loss, backward, SGD step) is also captured once with
torch.cuda.graph (static input and label tensors, the gradients allocated in the graph's
pool at capture and overwritten by each replay, warm-up on a side stream first, as PyTorch's
"whole network capture" example does) and its replays timed the same way (graph_step_ms).
No loss tensor of an eager step outlives its step (each step returns it detached): a live
autograd graph keeps its AccumulateGrad nodes, created on the default stream, alive into the
side-stream warm-up and the capture, where their stream mismatch syncs with the default
stream and invalidates the capture ("operation failed due to a previous error during
capture", the first GPU run). A failed capture reports the exception's type, message and
innermost frame in graph_error.
Prints one JSON line. Exit 77 when PyTorch or a GPU is missing, 2 on a bad argument.

Usage: python3 exec/cuda/pytorch_step.py [--widths 784,256,128,10] [--batch 256]
                                          [--steps 200] [--warmup 20] [--foreach|--no-foreach]
                                          [--graph]
"""
import argparse
import json
import sys
import traceback


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="784,256,128,10")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--foreach", action=argparse.BooleanOptionalAction, default=True,
                        help="use the multi-tensor SGD step (PyTorch's default on CUDA)")
    parser.add_argument("--graph", action="store_true",
                        help="also time the whole step captured in a CUDA graph")
    args = parser.parse_args()
    try:
        widths = [int(w) for w in args.widths.split(",")]
    except ValueError:
        print(f"pytorch_step.py: error: --widths: expected integers, got {args.widths}",
              file=sys.stderr)
        return 2
    if len(widths) < 2 or min(widths) < 1 or args.batch < 1 or args.steps < 1:
        print("pytorch_step.py: error: bad --widths, --batch or --steps", file=sys.stderr)
        return 2

    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:  # pragma: no cover - depends on the machine
        print(json.dumps({"impl": "pytorch", "skipped": f"no PyTorch ({e})"}))
        return 77
    if not torch.cuda.is_available():
        print(json.dumps({"impl": "pytorch", "skipped": "no CUDA device"}))
        return 77

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    dev = torch.device("cuda:0")
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, foreach=args.foreach)
    x = torch.randn(args.batch, widths[0], device=dev)
    y = torch.randint(0, widths[-1], (args.batch,), device=dev)

    def step(inp=x, target=y):
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(inp), target)
        loss.backward()
        opt.step()
        return loss.detach()  # no autograd graph (nor its AccumulateGrad nodes) outlives the step

    def time_ms(fn):
        """Median over 5 rounds of the per-call time of steps/5 calls back to back."""
        per_round = max(1, args.steps // 5)
        rounds = []
        for _ in range(5):
            torch.cuda.synchronize()
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(per_round):
                fn()
            end.record()
            torch.cuda.synchronize()
            rounds.append(start.elapsed_time(end) / per_round)
        return sorted(rounds)[len(rounds) // 2]

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    step_ms = time_ms(step)
    final_loss = float(step())  # a host sync: outside any capture
    torch.cuda.synchronize()

    graph = {}
    if args.graph:
        try:
            # PyTorch's whole-network capture (torch.cuda.graphs docs): static input and target
            # tensors; warm-up on a side stream (the same step, gradients set to None first, so
            # that the AccumulateGrad nodes and the optimizer's state come from that stream);
            # gradients set to None before the capture (backward allocates them in the graph's
            # pool; replays overwrite them); the SGD step inside the graph; no host sync inside.
            static_x = x.clone()
            static_y = y.clone()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    step(static_x, static_y)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            g = torch.cuda.CUDAGraph()
            opt.zero_grad(set_to_none=True)
            with torch.cuda.graph(g):
                static_loss = F.cross_entropy(model(static_x), static_y)
                static_loss.backward()
                opt.step()
            for _ in range(args.warmup):
                g.replay()
            torch.cuda.synchronize()
            graph_ms = time_ms(g.replay)
            graph = {
                "graph_step_ms": round(graph_ms, 4),
                "graph_samples_per_s": round(args.batch / (graph_ms / 1e3)),
                "graph_final_loss": round(float(static_loss.detach()), 4),
            }
        except Exception as e:  # a capture that fails: report it beside the eager time
            text = " ".join(str(e).split())[:600] or repr(e)
            frames = traceback.extract_tb(e.__traceback__)
            where = ""
            if frames:
                last = frames[-1]
                where = f"{last.filename}:{last.lineno} in {last.name}: {last.line or ''}".strip()
            graph = {"graph_error": f"{type(e).__name__}: {text}" + (f" [at {where}]" if where else "")}
    macs = sum(widths[i] * widths[i + 1] for i in range(len(widths) - 1))
    flop = 6 * macs - 2 * widths[0] * widths[1]  # as MlpShape::flop_per_sample
    print(json.dumps({
        "impl": "pytorch",
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
        "widths": "-".join(str(w) for w in widths),
        "batch": args.batch,
        "steps": args.steps,
        "step_ms": round(step_ms, 4),
        "samples_per_s": round(args.batch / (step_ms / 1e3)),
        "tflops": round(flop * args.batch / (step_ms / 1e3) / 1e12, 3),
        "final_loss": round(final_loss, 4),
        "foreach": args.foreach,
        **graph,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
