#!/usr/bin/env python3
"""bench/torch_resnet.py - vtrain's ResNet training step beside PyTorch's, in one run.

    python3 bench/torch_resnet.py --vtrain build/bench_cnn [--model resnet18]
        [--width 64] [--batch 64] [--threads 2] [--rounds 2] [--steps 2]
        [--device cpu|cuda]     (cuda: --vtrain build/bench_gpu_cnn, PyTorch on GPU 0)

The model of vt_resnet_init (CIFAR form: 3x3 stem, no max-pool, basic
blocks 2,2,2,2 or bottlenecks 3,4,6,3, batch norm after every convolution,
global average pooling, a linear head) written for PyTorch; batch of random
CIFAR-shaped images and labels; cross-entropy; SGD momentum 0.9, weight
decay 5e-4. PyTorch runs in binary32 (its best CPU kernels: oneDNN
convolutions) and in binary64; vtrain (bench/cnn.c, a subprocess) in fp64
and verified. Both sides use the same thread count.

A round runs vtrain's two modes, then PyTorch's two; rounds alternate, so a
change in the machine's load touches all alike. Each run takes `steps`
steps and times all but the first; a figure is the median over rounds of a
run's median step, a ratio the median of the per-round ratios (min-max).
"""
import argparse
import re
import statistics
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("bench/torch_resnet.py needs PyTorch (CPU build): pip install torch --index-url https://download.pytorch.org/whl/cpu")


class Basic(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(planes)
        self.c2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(planes)
        self.sc = None
        if stride != 1 or cin != planes:
            self.sc = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
        self.out = planes

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        h = self.b2(self.c2(h))
        return F.relu(h + (self.sc(x) if self.sc is not None else x))


class Bottleneck(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        out = 4 * planes
        self.c1 = nn.Conv2d(cin, planes, 1, bias=False)
        self.b1 = nn.BatchNorm2d(planes)
        self.c2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(planes)
        self.c3 = nn.Conv2d(planes, out, 1, bias=False)
        self.b3 = nn.BatchNorm2d(out)
        self.sc = None
        if stride != 1 or cin != out:
            self.sc = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))
        self.out = out

    def forward(self, x):
        h = F.relu(self.b1(self.c1(x)))
        h = F.relu(self.b2(self.c2(h)))
        h = self.b3(self.c3(h))
        return F.relu(h + (self.sc(x) if self.sc is not None else x))


class ResNet(nn.Module):
    def __init__(self, depth, width, classes=10):
        super().__init__()
        block, counts = (Bottleneck, [3, 4, 6, 3]) if depth == 50 else (Basic, [2, 2, 2, 2])
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        layers, cin = [], width
        for st, n in enumerate(counts):
            for b in range(n):
                blk = block(cin, width << st, 2 if (b == 0 and st > 0) else 1)
                layers.append(blk)
                cin = blk.out
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def torch_run(depth, width, batch, steps, dtype, device="cpu"):
    torch.manual_seed(0)
    if device == "cuda":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    m = ResNet(depth, width).to(dtype).to(device)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    x = torch.randn(batch, 3, 32, 32, dtype=dtype, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    times = []
    for s in range(steps):
        if device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        if device == "cuda":
            torch.cuda.synchronize()
        if s > 0:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def vtrain_run(exe, model, width, batch, steps, threads, device="cpu"):
    cmd = [exe, "--model", model, "--width", str(width), "--batch", str(batch), "--modes", "fp64,verified",
           "--steps", str(steps), "--rounds", "1", "--threads", str(threads)]
    if device != "cpu":
        cmd += ["--device", "gpu" if device == "cuda" else device]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    res = {}
    for m in re.finditer(r"RESULT time .* mode=(\S+) s_per_step=([0-9.]+)", out):
        res[m.group(1)] = float(m.group(2))
    return res, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vtrain", default="build/bench_cnn")
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    depth = 50 if a.model == "resnet50" else 18
    print(f"{a.model} (CIFAR form), width {a.width}, batch {a.batch}, {a.threads} threads, {a.device}; torch {torch.__version__}; "
          f"{a.rounds} rounds of {a.steps} steps per run (the first untimed)")
    rows = {"vtrain fp64": [], "vtrain verified": [], "torch fp32": [], "torch fp64": []}
    tdev = "cuda" if a.device == "cuda" else "cpu"  # (emu: vtrain on the emulator, PyTorch on the CPU: a dry run)
    for r in range(a.rounds):
        v, _ = vtrain_run(a.vtrain, a.model, a.width, a.batch, a.steps, a.threads, a.device)
        rows["vtrain fp64"].append(v["fp64"])
        rows["vtrain verified"].append(v["verified"])
        rows["torch fp32"].append(torch_run(depth, a.width, a.batch, a.steps, torch.float32, tdev))
        rows["torch fp64"].append(torch_run(depth, a.width, a.batch, a.steps, torch.float64, tdev))
        print(f"round {r}: " + ", ".join(f"{k} {rows[k][-1]:.3f} s" for k in rows), flush=True)

    def ratio(num, den):
        q = [x / y for x, y in zip(rows[num], rows[den])]
        return f"{statistics.median(q):.3f}x ({min(q):.3f}-{max(q):.3f})"

    for k in rows:
        print(f"RESULT {k:16s} {statistics.median(rows[k]):8.3f} s/step")
    print("RESULT verified / vtrain fp64 :", ratio("vtrain verified", "vtrain fp64"))
    print("RESULT verified / torch fp32  :", ratio("vtrain verified", "torch fp32"))
    print("RESULT verified / torch fp64  :", ratio("vtrain verified", "torch fp64"))
    print("RESULT vtrain fp64 / torch fp64:", ratio("vtrain fp64", "torch fp64"))


if __name__ == "__main__":
    main()
