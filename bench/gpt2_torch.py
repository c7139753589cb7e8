#!/usr/bin/env python3
"""bench/gpt2_torch.py - PyTorch eager, the same GPT-2 step as bench/gpu_step.c.

GPT-2 124M (vocab 50257, context 1024, 12 layers, 12 heads, width 768),
batch 8 x 1024 tokens: forward, cross-entropy, backward, gradient clipping
at 1.0, AdamW, on one GPU; the median of --steps after --warmup, in binary32
with TF32 off (plain IEEE binary32 products) and in binary64. The model is
written out here (embeddings, pre-norm blocks with causal attention through
scaled_dot_product_attention, tanh GELU, tied output head) so that it is
the same computation as vt_gpt_forward.

    python3 bench/gpt2_torch.py                 both dtypes
    python3 bench/gpt2_torch.py --dtype float32 --steps 20
    python3 bench/gpt2_torch.py --device cpu --vocab 100 --layers 2 --width 64 --heads 4 --T 32 --B 2 --steps 2

The last line, "RESULT ...", is for tests/gpu/run.sh. Without torch or
without a GPU it says so and exits 0.
"""
import argparse
import math
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    print("skip: PyTorch is not installed")
    sys.exit(0)


class Block(torch.nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln1 = torch.nn.LayerNorm(C, eps=1e-5)
        self.qkv = torch.nn.Linear(C, 3 * C)
        self.proj = torch.nn.Linear(C, C)
        self.ln2 = torch.nn.LayerNorm(C, eps=1e-5)
        self.fc = torch.nn.Linear(C, 4 * C)
        self.fcproj = torch.nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        k = k.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        v = v.view(B, T, self.NH, C // self.NH).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, V, ctx, L, NH, C):
        super().__init__()
        self.wte = torch.nn.Embedding(V, C)
        self.wpe = torch.nn.Embedding(ctx, C)
        self.h = torch.nn.ModuleList([Block(C, NH) for _ in range(L)])
        self.lnf = torch.nn.LayerNorm(C, eps=1e-5)
        for p in self.parameters():
            if p.dim() == 2:
                torch.nn.init.normal_(p, std=0.02)
            else:
                torch.nn.init.zeros_(p)
        for b in self.h:  # GPT-2's scaled residual projections, layer norms at 1
            torch.nn.init.normal_(b.proj.weight, std=0.02 / math.sqrt(2 * L))
            torch.nn.init.normal_(b.fcproj.weight, std=0.02 / math.sqrt(2 * L))
            torch.nn.init.ones_(b.ln1.weight)
            torch.nn.init.ones_(b.ln2.weight)
        torch.nn.init.ones_(self.lnf.weight)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = F.linear(self.lnf(x), self.wte.weight)  # the tied head
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def bench(dtype, args):
    torch.manual_seed(1337)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    model = GPT(args.vocab, args.T, args.layers, args.heads, args.width).to(dev, dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=6e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    g = torch.Generator(device="cpu").manual_seed(7)
    times = []
    for s in range(args.warmup + args.steps):
        x = torch.randint(0, args.vocab, (args.B, args.T), generator=g).to(dev)
        y = torch.randint(0, args.vocab, (args.B, args.T), generator=g).to(dev)
        sync()
        t0 = time.perf_counter()
        loss = model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        sync()
        if s >= args.warmup:
            times.append(1e3 * (time.perf_counter() - t0))
    times.sort()
    del model, opt
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return times[len(times) // 2], times[0], times[-1], float(loss.detach())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", choices=["float32", "float64", "both"], default="both")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--width", type=int, default=768)
    ap.add_argument("--T", type=int, default=1024)
    ap.add_argument("--B", type=int, default=8)
    ap.add_argument("--device", default="cuda", help="cuda, or cpu to check this script with a tiny model")
    args = ap.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        print("skip: PyTorch sees no CUDA device")
        return
    # binary32 means binary32: no TF32 in matrix products or convolutions
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0) if args.device == 'cuda' else args.device}")
    res = {}
    for name in (["float32", "float64"] if args.dtype == "both" else [args.dtype]):
        med, mn, mx, loss = bench(getattr(torch, name), args)
        res[name] = med
        print(f"torch {name:8s} median {med:8.1f} ms  (min {mn:.1f}, max {mx:.1f}), last loss {loss:.4f}")
    print("RESULT " + " ".join(f"torch_{k}_ms={v:.2f}" for k, v in res.items()))


if __name__ == "__main__":
    main()
