#!/usr/bin/python3
"""PyTorch peer of the MarsRL Studio policy model, for `npm run bench -- model` only.

The same decoder-only transformer as src-main/engine/gpt/model.ts (pre-norm blocks, bias-free
linears, LayerNorm with gain only, ReLU MLP, untied LM head, learned positions), the same batch
and the same optimizer step (Adam + global-norm clipping), measured on CPU with a fixed thread
count, or on a GPU with --device cuda (PyTorch eager, FP32; each timed call ends with
torch.cuda.synchronize so that queued kernels count). It is a benchmark peer, never a dependency
of the app. Prints one JSON object on stdout.

Usage: torch_model.py --vocab 32 --d-model 64 --layers 2 --heads 4 --context 64 --batch 16
                      --prompt 8 --new 56 --threads 1 --seconds 3 [--serve]

With --serve it builds the model, prints {"ready": ...} and then answers one JSON line per
command read from stdin ("train SECONDS", "kv SECONDS", "full SECONDS", "quit"), so the caller
can interleave its own measurements with the peer's on a shared machine.
"""
import argparse
import json
import math
import os
import sys
import time


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--vocab', type=int, default=32)
    p.add_argument('--d-model', type=int, default=64)
    p.add_argument('--layers', type=int, default=2)
    p.add_argument('--heads', type=int, default=4)
    p.add_argument('--context', type=int, default=64)
    p.add_argument('--mlp-ratio', type=int, default=4)
    p.add_argument('--batch', type=int, default=16)
    p.add_argument('--prompt', type=int, default=8)
    p.add_argument('--new', type=int, default=56)
    p.add_argument('--threads', type=int, default=1)
    p.add_argument('--seconds', type=float, default=3.0)
    p.add_argument('--top-p', type=float, default=0.95)
    p.add_argument('--serve', action='store_true')
    p.add_argument('--device', default='cpu', help="'cpu' or 'cuda' (the GPU peer of the webgpu backend)")
    a = p.parse_args()

    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - the bench reports any import failure as "skipped"
        print(json.dumps({'ok': False, 'reason': f'import torch failed: {e}'}))
        return

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    if dev.type == 'cuda' and not torch.cuda.is_available():
        print(json.dumps({'ok': False, 'reason': 'torch.cuda.is_available() is false'}))
        return
    sync = torch.cuda.synchronize if dev.type == 'cuda' else (lambda: None)
    V, D, L, H, T, B = a.vocab, a.d_model, a.layers, a.heads, a.context, a.batch
    hd = D // H

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(D, elementwise_affine=True)
            self.ln1.bias = None  # gain only, as nanoGPT with bias=False
            self.qkv = nn.Linear(D, 3 * D, bias=False)
            self.proj = nn.Linear(D, D, bias=False)
            self.ln2 = nn.LayerNorm(D)
            self.ln2.bias = None
            self.fc1 = nn.Linear(D, a.mlp_ratio * D, bias=False)
            self.fc2 = nn.Linear(a.mlp_ratio * D, D, bias=False)
            self.register_buffer('mask', torch.tril(torch.ones(T, T, dtype=torch.bool)))

        def ln(self, m, x):
            return F.layer_norm(x, (D,), m.weight, None, 1e-5)

        def forward(self, x, cache=None, pos=0):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln(self.ln1, x)).view(b, t, 3, H, hd).permute(2, 0, 3, 1, 4)
            if cache is not None:
                # Preallocated cache [2, B, H, T, hd], written in place.
                cache[0, :, :, pos:pos + t] = k
                cache[1, :, :, pos:pos + t] = v
                k = cache[0, :, :, :pos + t]
                v = cache[1, :, :, :pos + t]
            att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            if t > 1:
                att = att.masked_fill(~self.mask[pos:pos + t, :pos + t], float('-inf'))
            y = att.softmax(-1) @ v
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, D))
            return x + self.fc2(F.relu(self.fc1(self.ln(self.ln2, x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, D)
            self.wpe = nn.Embedding(T, D)
            self.blocks = nn.ModuleList([Block() for _ in range(L)])
            self.lnf = nn.LayerNorm(D)
            self.lnf.bias = None
            self.head = nn.Linear(D, V, bias=False)

        def forward(self, idx, caches=None, pos=0):
            t = idx.shape[1]
            x = self.wte(idx) + self.wpe.weight[pos:pos + t]
            for i, blk in enumerate(self.blocks):
                x = blk(x, None if caches is None else caches[i], pos)
            return self.head(F.layer_norm(x, (D,), self.lnf.weight, None, 1e-5))

    model = GPT().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, V, (B, T), generator=g).to(dev)
    y = torch.randint(0, V, (B, T), generator=g).to(dev)
    g = torch.Generator(device=dev).manual_seed(0)  # multinomial draws on the model's device

    def train_step():
        logits = model(x)
        loss = F.cross_entropy(logits.view(-1, V), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    def timed(fn, tokens_per_call, warmup=2, min_calls=3, seconds=None):
        # Per-call wall times, as the TypeScript side measures them: best and median.
        for _ in range(warmup):
            fn()
        times = []
        end = time.perf_counter() + (a.seconds if seconds is None else seconds)
        while len(times) < min_calls or time.perf_counter() < end:
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        times.sort()
        return {'best_ms': times[0] * 1000, 'median_ms': times[len(times) // 2] * 1000,
                'calls': len(times), 'tokens_per_call': tokens_per_call}

    def sample_next(logits):
        probs = torch.softmax(logits, -1)
        if a.top_p < 1:
            sp, si = torch.sort(probs, -1, descending=True)
            keep = torch.cumsum(sp, -1) - sp < a.top_p
            sp = sp * keep
            choice = torch.multinomial(sp, 1, generator=g)
            return si.gather(-1, choice)
        return torch.multinomial(probs, 1, generator=g)

    prompt = torch.randint(0, V, (B, a.prompt), generator=torch.Generator().manual_seed(1)).to(dev)

    @torch.no_grad()
    def sample_kv():
        caches = torch.zeros(L, 2, B, H, T, hd, device=dev)
        logits = model(prompt, caches, 0)[:, -1]
        pos = a.prompt
        for _ in range(a.new):
            tok = sample_next(logits)
            if pos >= T:
                break
            logits = model(tok, caches, pos)[:, -1]
            pos += 1

    @torch.no_grad()
    def sample_full():
        seq = prompt
        for _ in range(a.new):
            logits = model(seq)[:, -1]
            seq = torch.cat([seq, sample_next(logits)], 1)

    with torch.no_grad():
        # The cached and recomputed paths must agree, or the peer's timing would be meaningless.
        caches = torch.zeros(L, 2, B, H, T, hd, device=dev)
        full = model(prompt)
        inc = torch.cat([model(prompt[:, i:i + 1], caches, i) for i in range(a.prompt)], 1)
        max_diff = (full - inc).abs().max().item()

    blas = sorted({line.split()[-1] for line in open('/proc/self/maps') if 'blas' in line.lower() and '.so' in line})
    if dev.type == 'cuda':
        blas = [f'cuBLAS on {torch.cuda.get_device_name(dev)}'] + blas
    info = {
        'ok': True,
        'torch': torch.__version__,
        'threads': torch.get_num_threads(),
        'device': str(dev),
        'blas': blas,
        'openblas_threads': os.environ.get('OPENBLAS_NUM_THREADS'),
        'params': sum(p.numel() for p in model.parameters()),
        'kv_check_max_abs_diff': max_diff,
    }
    jobs = {
        'train': lambda sec: timed(train_step, B * T, seconds=sec),
        'kv': lambda sec: timed(sample_kv, B * a.new, warmup=1, seconds=sec),
        'full': lambda sec: timed(sample_full, B * a.new, warmup=1, min_calls=2, seconds=sec),
    }
    if a.serve:
        print(json.dumps({'ready': info}), flush=True)
        for line in sys.stdin:
            parts = line.split()
            if not parts or parts[0] == 'quit':
                break
            sec = float(parts[1]) if len(parts) > 1 else a.seconds
            if parts[0] not in jobs:
                print(json.dumps({'error': f'unknown command {parts[0]}'}), flush=True)
                continue
            print(json.dumps(jobs[parts[0]](sec)), flush=True)
        return
    info.update({name: job(a.seconds) for name, job in jobs.items()})
    print(json.dumps(info))


if __name__ == '__main__':
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report, never crash the bench
        print(json.dumps({'ok': False, 'reason': f'{type(e).__name__}: {e}'}))
        sys.exit(0)
