#!/usr/bin/env python3
"""pytorch_step.py: time one training step of the same MLP in PyTorch, for comparison with
tauplan_cuda_bench_step (exec/cuda/bench_step.cpp).

Same work: Linear+ReLU layers with the same widths, softmax cross-entropy (mean), plain SGD
(no momentum), fp32 with TF32 disabled, a device-resident random batch, --warmup untimed
steps, then the mean over --steps steps enqueued back to back and timed with CUDA events.
Prints one JSON line. Exit 77 when PyTorch or a GPU is missing, 2 on a bad argument.

Usage: python3 exec/cuda/pytorch_step.py [--widths 784,256,128,10] [--batch 256]
                                          [--steps 200] [--warmup 20] [--foreach|--no-foreach]
"""
import argparse
import json
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="784,256,128,10")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--foreach", action=argparse.BooleanOptionalAction, default=True,
                        help="use the multi-tensor SGD step (PyTorch's default on CUDA)")
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

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(args.steps):
        loss = step()
    end.record()
    torch.cuda.synchronize()
    step_ms = start.elapsed_time(end) / args.steps
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
        "final_loss": round(float(loss), 4),
        "foreach": args.foreach,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
