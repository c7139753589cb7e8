#!/usr/bin/env python3
"""bench/torch_step.py - vtrain's training step beside PyTorch's, in one run.

    make bench-torch                      (needs PyTorch; installs nothing)
    python3 bench/torch_step.py --vtrain build/bench_step [--threads 2]
        [--rounds 3] [--steps 4] [--sweep width,context | --configs C:T,...]

The model of bench/step.c (a character GPT: vocab 64, 4 layers, 4 heads,
GPT-2 blocks with pre-LayerNorm, tanh GELU, causal attention, a head tied to
the token embedding, no dropout; batch 8 of random tokens; cross-entropy;
gradient clipping at norm 1; AdamW lr 1e-3, betas 0.9/0.999, eps 1e-8,
weight decay 0.01 on every parameter) written for PyTorch, in three forms:

  fp32    PyTorch in binary32 (eager; its best CPU kernels: MKL/oneDNN GEMM,
          fused attention), the speed a plain trainer gets;
  fp64    the same in binary64;
  paper   the method of Srivastava, Arora and Boneh (2024) as their code does
          it: binary64, with hooks on every leaf module that round its output
          and its input gradient to binary32, round the logits' gradient and
          the loss, and compute the dense 1.6-bit log (for every rounded value
          a symbol: up or down when it lies within 0.25 binary32 ulp of a
          rounding midpoint, none otherwise; five symbols per byte, base 3).
          The log is packed in memory and not written out (vtrain's bench also
          keeps its log in memory). The ulp is the exact binary one (their
          code approximates it by a power of ten).

The token values differ from bench/step.c's (those come from vtrain's Philox
streams); a step's time does not depend on them. Both sides use the same
thread count (torch.set_num_threads, bench_step --threads).

Rounds alternate (vtrain's modes in one process, then PyTorch's three, then
again), so a change in the machine's load touches all alike; each figure is
the median over rounds of a round's median step, and each ratio is the median
of the per-round ratios with their range (min-max). A second line, "best",
divides the fastest round of vtrain's mode by the fastest round of the peer:
another process on a shared machine only ever adds time, so where the rounds'
ratios spread widely the minima are the steadier comparison.
"""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
warnings.filterwarnings("ignore", message="Full backward hook is firing")

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    sys.exit("bench/torch_step.py needs PyTorch (CPU build): pip install torch --index-url "
             "https://download.pytorch.org/whl/cpu  (or pip install torch from PyPI)")

VOCAB, LAYERS, HEADS, BATCH = 64, 4, 4, 8


class Block(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.ln1 = nn.LayerNorm(C, eps=1e-5)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.gelu = nn.GELU(approximate="tanh")
        self.fcproj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.fcproj(self.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, C, T):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C) for _ in range(LAYERS))
        self.lnf = nn.LayerNorm(C, eps=1e-5)
        self.head = nn.Linear(C, VOCAB, bias=False)
        self.head.weight = self.wte.weight  # tied, as vt_gpt_forward
        sproj = 0.02 / math.sqrt(2 * LAYERS)
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:
                nn.init.normal_(p, std=sproj if name.endswith("proj.weight") else 0.02)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.head(self.lnf(x))


# --- the paper's method: rounding hooks and the dense log ---------------------

class DenseLog:
    """base-3 symbols (0 down, 1 none, 2 up), five to a byte"""

    def __init__(self):
        self.bytes = 0
        self.values = 0
        self.w = torch.tensor([1, 3, 9, 27, 81], dtype=torch.int32)

    def round(self, v):
        r = v.float().double()  # the rounding (a cast: the gradient passes straight through)
        with torch.no_grad():
            vd, rd = v.detach(), r.detach()
            # binary32 ulp at r: 2^(e - 24) for r = m 2^e, 1/2 <= |m| < 1 (normal range)
            _, e = torch.frexp(rd)
            ulp = torch.ldexp(torch.ones_like(rd), (e - 24).clamp(min=-149))
            near = (vd - rd).abs() > 0.25 * ulp  # within 0.25 ulp of the midpoint
            sym = torch.where(near, torch.where(rd > vd, 2, 0), 1).to(torch.int32).flatten()
            pad = (-sym.numel()) % 5
            if pad:
                sym = torch.cat([sym, torch.ones(pad, dtype=torch.int32)])
            packed = (sym.view(-1, 5) * self.w).sum(1).to(torch.uint8)
            self.bytes += packed.numel()
            self.values += v.numel()
        return r


def add_paper_hooks(model, log):
    def fwd(mod, inp, out):
        return log.round(out)

    def bwd(mod, gin, gout):
        return tuple(None if g is None else log.round(g) for g in gin)

    for m in model.modules():
        if len(list(m.children())) == 0:  # leaf modules, as their HookCreator
            m.register_forward_hook(fwd)
            m.register_full_backward_hook(bwd)


# --- one configuration, one mode ---------------------------------------------

def make(mode, C, T):
    torch.manual_seed(1)
    dt = torch.float32 if mode == "fp32" else torch.float64
    model = GPT(C, T).to(dt)
    log = None
    if mode == "paper":
        log = DenseLog()
        add_paper_hooks(model, log)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    return model, opt, log


def step(model, opt, log, x, y):
    logits = model(x)
    if log is not None:
        logits.register_hook(log.round)  # the gradient of the model's output
    loss = F.cross_entropy(logits.view(-1, VOCAB), y.view(-1))
    if log is not None:
        loss = log.round(loss)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return float(loss.detach())


def torch_round(mode, C, T, steps, warmup=2):
    model, opt, log = make(mode, C, T)
    g = torch.Generator().manual_seed(3)
    times = []
    for s in range(warmup + steps):
        x = torch.randint(0, VOCAB, (BATCH, T), generator=g)
        y = torch.randint(0, VOCAB, (BATCH, T), generator=g)
        t0 = time.perf_counter()
        step(model, opt, log, x, y)
        if s >= warmup:
            times.append(1e3 * (time.perf_counter() - t0))
    extra = (log.bytes / (warmup + steps)) if log else None
    return statistics.median(times), extra


def vtrain_round(exe, C, T, steps, threads):
    cmd = [exe, "--model", "gpt", "--mode", "verified,fp64,native", "--steps", str(steps), "--threads", str(threads),
           "--width", str(C), "--context", str(T), "--layers", str(LAYERS), "--batch", str(BATCH)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    ms = {}
    for line in out.splitlines():
        m = re.match(r"gpt (\S+): ([0-9.]+) ms per step", line)
        if m:
            ms[m.group(1)] = float(m.group(2))
    return ms


def spread(v):
    return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vtrain", default="build/bench_step")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--configs", default="64:64,128:64,256:64,512:64,128:32,128:128,128:256",
                    help="width:context pairs (batch 8, 4 layers)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    print("CPU: %s; PyTorch %s (%s), %d threads each side; %d rounds of %d timed steps (after warm-up)" %
          (cpu_model(), torch.__version__, "MKL" if torch.backends.mkl.is_available() else "no MKL", a.threads,
           a.rounds, a.steps))
    print("ms per step: median over rounds; ratios: vtrain verified over each, median (min-max) of the rounds;")
    print("'best': the fastest round of vtrain's over the fastest round of the peer's\n")
    hdr = "%-13s %9s %9s %9s %9s %9s %9s   %-18s %-18s %-18s %-18s %11s" % (
        "config", "verified", "fp64", "native", "torch32", "torch64", "paper", "ver/torch32", "ver/torch64",
        "ver/paper", "ver/fp64", "paper log/step")
    print(hdr)
    for cfg in a.configs.split(","):
        C, T = (int(v) for v in cfg.split(":"))
        vt = {"verified": [], "fp64": [], "native": []}
        th = {"fp32": [], "fp64": [], "paper": []}
        logb = 0
        for r in range(a.rounds):
            ms = vtrain_round(a.vtrain, C, T, a.steps, a.threads)
            for k in vt:
                vt[k].append(ms[k])
            for k in th:
                t, extra = torch_round(k, C, T, a.steps)
                th[k].append(t)
                if extra:
                    logb = extra
        rat = lambda num, den: [n / d for n, d in zip(num, den)]
        print("%-13s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f   %-18s %-18s %-18s %-18s %9.0f KB" % (
            "C%d T%d" % (C, T), statistics.median(vt["verified"]), statistics.median(vt["fp64"]),
            statistics.median(vt["native"]), statistics.median(th["fp32"]), statistics.median(th["fp64"]),
            statistics.median(th["paper"]), spread(rat(vt["verified"], th["fp32"])),
            spread(rat(vt["verified"], th["fp64"])), spread(rat(vt["verified"], th["paper"])),
            spread(rat(vt["verified"], vt["fp64"])), logb / 1024))
        # the fastest round of each side: load from other processes on a shared machine only adds time, so the
        # ratio of the minima is the steadier figure where the rounds' ratios spread widely
        best = lambda num, den: "%.2f" % (min(num) / min(den))
        print("%-13s %59s   %-18s %-18s %-18s %-18s" % (
            "  best", "(ratio of the fastest rounds)", best(vt["verified"], th["fp32"]), best(vt["verified"], th["fp64"]),
            best(vt["verified"], th["paper"]), best(vt["verified"], vt["fp64"])))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
