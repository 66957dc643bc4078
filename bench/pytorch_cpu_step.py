#!/usr/bin/env python3
"""pytorch_cpu_step.py: PyTorch's side of bench_step_vs_pytorch (bench/step_vs_pytorch.cpp).

The C++ driver starts this script with --serve and talks to it one JSON line at a time on
stdin/stdout (stderr is left for messages), so that tauplan's and PyTorch's steps are timed in
turns, A B A B, each in its own process while the other waits:

  {"cmd": "hello"}  -> versions, the BLAS PyTorch calls and the libraries mapped in this
                       process, or {"skip": reason} when PyTorch or NumPy cannot be imported
  {"cmd": "setup", "dir": D, "widths": [...], "batch": b, "threads": t, "lr": lr,
   "foreach": "auto"|"on"|"off", "rep_steps": n}
                    -> builds the MLP (Linear+ReLU layers, a Linear for the logits) with the
                       parameters of D/params.f32 (tauplan's flat layout: per layer W, out x in
                       row-major, then b), reads the batch D/x.f32 (b x inputs, row-major
                       float32) and D/y.i32 (int32 labels), sets torch.set_num_threads(t) and
                       OpenBLAS's threads to t, computes the mean softmax cross-entropy and its
                       gradient once with those parameters, writes the gradient to
                       D/grads_torch.f32 in the same flat layout, and replies with the loss
  {"cmd": "run", "steps": n}
                    -> resets the parameters to D/params.f32 (untimed), then times n steps
                       (zero_grad(set_to_none=True), forward, F.cross_entropy, backward, SGD)
                       with time.perf_counter_ns and replies {"step_s": seconds per step}
  {"cmd": "quit"}

SGD is torch.optim.SGD (no momentum, no weight decay). PyTorch 1.13 offers two SGD
implementations (a loop over tensors, or foreach); with "auto" setup times both for a few
rounds (rep_steps steps each) and keeps the faster, so tauplan is compared with PyTorch at its
best. Run alone (python3 bench/pytorch_cpu_step.py --serve) it waits for commands.
"""
import ctypes
import json
import os
import sys
import time


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def mapped_libraries(words):
    """Shared objects mapped in this process whose file name contains one of `words`."""
    found = []
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                parts = line.split()
                if len(parts) >= 6 and parts[5].startswith("/"):
                    name = os.path.basename(parts[5]).lower()
                    if any(w in name for w in words) and parts[5] not in found:
                        found.append(parts[5])
    except OSError:
        pass
    return found


class Server:
    def __init__(self):
        self.torch = None
        self.openblas = None
        self.model = None

    def hello(self, _cmd):
        try:
            import numpy
            import torch
        except ImportError as error:
            return {"skip": f"cannot import PyTorch or NumPy in {sys.executable}: {error}"}
        self.torch = torch
        self.numpy = numpy
        # One product, so that the BLAS library PyTorch calls is loaded and mapped.
        torch.ones(8, 8) @ torch.ones(8, 8)
        config = torch.__config__.show()
        blas_info = next((item.split("=", 1)[1] for item in config.replace(",", " ").split()
                          if item.startswith("BLAS_INFO=")), "?")
        libraries = mapped_libraries(("blas", "mkl", "lapack", "dnnl", "gomp"))
        openblas = next((path for path in libraries if "libopenblas" in os.path.basename(path)),
                        None)
        answer = {
            "torch": torch.__version__,
            "numpy": numpy.__version__,
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "blas_info": blas_info,
            "libraries": libraries,
            "parallel": torch.__config__.parallel_info().splitlines()[0:3],
        }
        if openblas:
            self.openblas = ctypes.CDLL(openblas)  # the instance already loaded, by its soname
            self.openblas.openblas_get_config.restype = ctypes.c_char_p
            self.openblas.openblas_get_corename.restype = ctypes.c_char_p
            answer["openblas"] = (self.openblas.openblas_get_config().decode() + ", core " +
                                  self.openblas.openblas_get_corename().decode())
        return answer

    def set_threads(self, threads):
        self.torch.set_num_threads(threads)
        if self.openblas is not None:
            self.openblas.openblas_set_num_threads(threads)

    def setup(self, cmd):
        torch, numpy = self.torch, self.numpy
        import torch.nn.functional as F
        self.F = F
        directory, widths, batch = cmd["dir"], cmd["widths"], cmd["batch"]
        self.set_threads(cmd["threads"])
        flat = numpy.fromfile(os.path.join(directory, "params.f32"), dtype=numpy.float32)
        x = numpy.fromfile(os.path.join(directory, "x.f32"), dtype=numpy.float32)
        y = numpy.fromfile(os.path.join(directory, "y.i32"), dtype=numpy.int32)
        self.x = torch.from_numpy(x.reshape(batch, widths[0]).copy())
        self.y = torch.from_numpy(y.astype(numpy.int64))  # cross_entropy takes int64 labels
        layers = []
        for i in range(len(widths) - 1):
            layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
            if i + 2 < len(widths):
                layers.append(torch.nn.ReLU())
        self.model = torch.nn.Sequential(*layers)
        self.initial = []
        offset = 0
        for layer in self.model:
            if isinstance(layer, torch.nn.Linear):
                for tensor in (layer.weight, layer.bias):
                    count = tensor.numel()
                    values = torch.from_numpy(flat[offset:offset + count].copy())
                    self.initial.append(values.view_as(tensor))
                    offset += count
        if offset != flat.size:
            raise ValueError(f"params.f32 holds {flat.size} values, the MLP {offset}")
        self.parameters = list(self.model.parameters())
        self.reset()
        self.lr = cmd["lr"]

        # The reference loss and gradient at the initial parameters.
        loss = F.cross_entropy(self.model(self.x), self.y)
        loss.backward()
        grads = torch.cat([p.grad.reshape(-1) for p in self.parameters])
        grads.numpy().tofile(os.path.join(directory, "grads_torch.f32"))

        choice = cmd.get("foreach", "auto")
        timings = {}
        if choice == "auto":
            for _ in range(3):
                for foreach in (False, True):
                    self.make_optimizer(foreach)
                    timings.setdefault(foreach, []).append(self.run({"steps": cmd["rep_steps"]})
                                                           ["step_s"])
            foreach = min(timings, key=lambda f: sorted(timings[f])[1])
        else:
            foreach = choice == "on"
        self.make_optimizer(foreach)
        return {"loss": float(loss), "threads": torch.get_num_threads(),
                "blas_threads": (self.openblas.openblas_get_num_threads()
                                 if self.openblas is not None else None),
                "foreach": foreach,
                "foreach_trial_ms": {str(k): [round(v * 1e3, 4) for v in t]
                                     for k, t in timings.items()}}

    def make_optimizer(self, foreach):
        self.optimizer = self.torch.optim.SGD(self.parameters, lr=self.lr, foreach=foreach)

    def reset(self):
        with self.torch.no_grad():
            for parameter, value in zip(self.parameters, self.initial):
                parameter.copy_(value)
            for parameter in self.parameters:
                parameter.grad = None

    def run(self, cmd):
        steps = cmd["steps"]
        model, optimizer, F, x, y = self.model, self.optimizer, self.F, self.x, self.y
        self.reset()
        start = time.perf_counter_ns()
        for _ in range(steps):
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
        elapsed = time.perf_counter_ns() - start
        return {"step_s": elapsed / 1e9 / steps, "loss": float(loss)}


def main():
    if "--serve" not in sys.argv[1:]:
        print(__doc__, file=sys.stderr)
        return 2
    server = Server()
    handlers = {"hello": server.hello, "setup": server.setup, "run": server.run}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            cmd = json.loads(line)
            if cmd.get("cmd") == "quit":
                break
            reply(handlers[cmd["cmd"]](cmd))
        except Exception as error:  # reported to the driver, which stops
            reply({"error": f"{type(error).__name__}: {error}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
