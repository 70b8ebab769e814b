"""gpu-check's PyTorch program: a small MLP trained on the GPU for a fixed number of steps.

usage: torch_train.py OUT.json [--iters N] [--profiler]

Writes OUT.json with the median time of a step (measured in blocks of steps, each closed by a
synchronize, after a warm-up) and, with --profiler, torch.profiler's own kernel table of the
whole run ({name: launches}); the profiler then covers model creation and every step, so its
counts are those of every kernel the run launched.
"""
import argparse
import contextlib
import json
import statistics
import time

import torch


def kernel_table(prof):
    """torch.profiler's GPU kernels as {name: launches}; copies and memsets left out."""
    table = {}
    for evt in prof.events():
        if evt.device_type != torch.autograd.DeviceType.CUDA:
            continue
        # copies, and user annotations shown on the GPU timeline ("Optimizer.step#Adam.step";
        # a kernel's own name may hold '#' too, inside "{lambda(float, float)#1}")
        annotation = getattr(evt, "is_user_annotation", False) or \
            ("#" in evt.name and "(" not in evt.name)
        if evt.name.startswith(("Memcpy", "Memset")) or annotation:
            continue
        table[evt.name] = table.get(evt.name, 0) + 1
    return table


def train(iters, block):
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    step_ns = []
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    for i in range(iters):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if (i + 1) % block == 0:
            torch.cuda.synchronize()
            t1 = time.perf_counter_ns()
            step_ns.append((t1 - t0) / block)
            t0 = t1
    torch.cuda.synchronize()
    return step_ns, float(loss.item())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--block", type=int, default=25)
    ap.add_argument("--profiler", action="store_true")
    args = ap.parse_args()
    ctx = contextlib.nullcontext()
    if args.profiler:
        ctx = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                 torch.profiler.ProfilerActivity.CUDA])
    with ctx as prof:
        step_ns, loss = train(args.iters, args.block)
    out = {
        "iters": args.iters,
        "step_ns_blocks": step_ns,
        # the first block holds the warm-up (cuBLAS handles, allocator growth)
        "step_ns": statistics.median(step_ns[1:]) if len(step_ns) > 1 else step_ns[0],
        "loss": loss,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
    }
    if args.profiler:
        out["kernels"] = kernel_table(prof)
    with open(args.out, "w") as f:
        json.dump(out, f)
    print("torch_train: %d steps, median %.1f us/step, loss %.4f" %
          (args.iters, out["step_ns"] / 1e3, loss))


if __name__ == "__main__":
    main()
