#!/usr/bin/python3
"""PyTorch peer of the Studio's Hugging Face models (Llama / Qwen2 / Qwen3), for tests and
`npm run bench -- hf` only; never a dependency of the app.

An independent plain-torch forward pass written from the papers and the config.json fields
(transformers is not installed here): RMSNorm, RoPE in the rotate-half convention with
rope_theta and rope_scaling (linear, llama3), grouped-query attention, SwiGLU, tied embeddings,
Qwen2's q/k/v biases and Qwen3's per-head q/k RMSNorm. Weights are read from the safetensors
folder directly (single file or sharded index); bf16 is widened by shifting its 16 bits into
the top of a float32 (torch 1.13 cannot take bf16 from numpy).

Usage:
  hf_torch.py logprobs DIR OUT.f32     stdin: {"prompts": [[ids], ...]}; writes the float32
                                       log-softmax of every position of every prompt (each run
                                       alone, unpadded), rows in prompt order, [positions, V];
                                       computed in float64. Prints {"ok": true, "rows": N, "vocab": V}.
  hf_torch.py logprobs DIR OUT.f32 --adapter PEFT_DIR
                                       the same with a PEFT LoRA adapter folder applied to the base
                                       in DIR, read as PEFT writes it (adapter_config.json: r,
                                       lora_alpha, use_rslora; adapter_model.safetensors:
                                       base_model.model.<module>.lora_A/.lora_B.weight): each target
                                       linear gives W x + scaling·B A x, scaling = alpha/r (alpha/√r
                                       with rsLoRA), as PEFT's LoraLayer does.
  hf_torch.py bench DIR --threads 1 --prompt P --new N --batch B --seconds S [--device cpu|cuda]
                                       float32 prefill and KV-cached greedy decode timings.
  hf_torch.py rlstep DIR --batch B --prompt P --new N --steps S --rank R --alpha A [--device cpu|cuda]
                                       one MarsRL-style RL step with LoRA adapters on every linear,
                                       as bench/hf-rl-step.ts does it: a rollout (KV cache,
                                       temperature 1, N tokens per row), then −advantage·log π over
                                       the response tokens, one backward pass, one AdamW step on the
                                       adapters. Prints the best rollout and update times.
On cuda, TF32 is switched off (torch.backends.cuda.matmul.allow_tf32 = False): eager FP32.
"""
import json
import math
import os
import struct
import sys
import time

import numpy as np


def read_safetensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        out = {}
        for name, info in header.items():
            if name == '__metadata__':
                continue
            a, b = info['data_offsets']
            f.seek(base + a)
            raw = f.read(b - a)
            dt = info['dtype']
            if dt == 'F32':
                arr = np.frombuffer(raw, dtype='<f4').copy()
            elif dt == 'F16':
                arr = np.frombuffer(raw, dtype='<f2').astype(np.float32)
            elif dt == 'BF16':
                arr = (np.frombuffer(raw, dtype='<u2').astype(np.uint32) << 16).view(np.float32)
            else:
                raise ValueError(f'{path}: {name}: dtype {dt} not supported by the peer')
            out[name] = arr.reshape(info['shape'])
    return out


def read_folder(d):
    idx = os.path.join(d, 'model.safetensors.index.json')
    if os.path.exists(idx):
        with open(idx) as f:
            files = sorted(set(json.load(f)['weight_map'].values()))
        w = {}
        for fn in files:
            w.update(read_safetensors(os.path.join(d, fn)))
        return w
    return read_safetensors(os.path.join(d, 'model.safetensors'))


def inv_freq(cfg, hd):
    theta = cfg.get('rope_theta', 10000.0)
    inv = [1.0 / theta ** (2 * i / hd) for i in range(hd // 2)]
    rs = cfg.get('rope_scaling')
    if rs:
        kind = rs.get('rope_type', rs.get('type'))
        if kind == 'linear':
            inv = [x / rs['factor'] for x in inv]
        elif kind == 'llama3':
            # Meta's Llama 3.1 frequency rule: long wavelengths slowed by `factor`, short ones
            # kept, a linear blend in 1/wavelength between the two thresholds.
            f, lo, hi, old = rs['factor'], rs['low_freq_factor'], rs['high_freq_factor'], rs['original_max_position_embeddings']
            out = []
            for x in inv:
                wl = 2 * math.pi / x
                if wl < old / hi:
                    out.append(x)
                elif wl > old / lo:
                    out.append(x / f)
                else:
                    s = (old / wl - lo) / (hi - lo)
                    out.append((1 - s) * x / f + s * x)
            inv = out
        elif kind not in (None, 'default'):
            raise ValueError(f'rope_scaling {kind} not supported by the peer')
    return inv


LORA_TARGETS = ('q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj')


def pick_device(name):
    import torch
    if name == 'cuda':
        if not torch.cuda.is_available():
            raise SystemExit(json.dumps({'ok': False, 'reason': 'torch.cuda.is_available() is False'}))
        torch.backends.cuda.matmul.allow_tf32 = False  # eager FP32, not TF32 (PyTorch's default since 1.12, set to be sure)
        torch.backends.cudnn.allow_tf32 = False
    return torch.device(name)


def sync(device):
    import torch
    if device.type == 'cuda':
        torch.cuda.synchronize()


class Model:
    def __init__(self, d, dtype, device=None):
        import torch
        self.torch = torch
        self.device = device or torch.device('cpu')
        self.lora = None  # {name: (A [r, in], B [out, r])} and the scaling, set by add_lora
        with open(os.path.join(d, 'config.json')) as f:
            cfg = json.load(f)
        self.cfg = cfg
        self.D = cfg['hidden_size']
        self.H = cfg['num_attention_heads']
        self.KV = cfg.get('num_key_value_heads', self.H)
        self.hd = cfg.get('head_dim') or self.D // self.H
        self.L = cfg['num_hidden_layers']
        self.eps = cfg.get('rms_norm_eps', 1e-6)
        self.qk_norm = cfg['model_type'] == 'qwen3'
        raw = read_folder(d)
        self.w = {}
        for k in list(raw.keys()):
            self.w[k] = torch.from_numpy(np.ascontiguousarray(raw.pop(k))).to(dtype).to(self.device)
        self.head = self.w['model.embed_tokens.weight'] if cfg.get('tie_word_embeddings') else self.w['lm_head.weight']
        self.inv = torch.tensor(inv_freq(cfg, self.hd), dtype=torch.float64, device=self.device)
        self.dtype = dtype

    def add_lora(self, rank, alpha, seed=0):
        """LoRA (Hu et al. 2021) on every linear of LORA_TARGETS: A Kaiming-uniform U(±1/√in), B = 0,
        as PEFT initialises them; returns the trainable parameters."""
        torch = self.torch
        g = torch.Generator().manual_seed(seed)
        self.lora = {}
        self.lora_scaling = alpha / rank
        params = []
        for i in range(self.L):
            for m in LORA_TARGETS:
                name = f'model.layers.{i}.' + ('mlp.' if m in ('gate_proj', 'up_proj', 'down_proj') else 'self_attn.') + m
                out_dim, in_dim = self.w[name + '.weight'].shape
                a = ((torch.rand(rank, in_dim, generator=g) * 2 - 1) / math.sqrt(in_dim)).to(self.dtype).to(self.device).requires_grad_()
                b = torch.zeros(out_dim, rank, dtype=self.dtype, device=self.device, requires_grad=True)
                self.lora[name] = (a, b)
                params += [a, b]
        return params

    def load_peft(self, adapter_dir):
        """The adapters of a PEFT LoRA folder, by the names and config fields PEFT writes."""
        torch = self.torch
        with open(os.path.join(adapter_dir, 'adapter_config.json')) as f:
            cfg = json.load(f)
        r, alpha = cfg['r'], cfg['lora_alpha']
        self.lora_scaling = alpha / math.sqrt(r) if cfg.get('use_rslora') else alpha / r
        raw = read_safetensors(os.path.join(adapter_dir, 'adapter_model.safetensors'))
        prefix = 'base_model.model.'
        self.lora = {}
        for key in raw:
            if not key.endswith('.lora_A.weight'):
                continue
            name = key[len(prefix):-len('.lora_A.weight')]
            a = torch.from_numpy(np.ascontiguousarray(raw[key])).to(self.dtype)
            b = torch.from_numpy(np.ascontiguousarray(raw[prefix + name + '.lora_B.weight'])).to(self.dtype)
            assert name + '.weight' in self.w, f'adapter names {name}, which the base does not have'
            self.lora[name] = (a, b)

    def rms(self, x, g):
        return x * self.torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * g

    def rope(self, x, pos):
        # x [B, heads, T, hd]; pos [B, T]
        torch = self.torch
        ang = pos.to(torch.float64)[:, None, :, None] * self.inv[None, None, None, :]
        cos, sin = torch.cos(ang).to(self.dtype), torch.sin(ang).to(self.dtype)
        h = self.hd // 2
        x1, x2 = x[..., :h], x[..., h:]
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)

    def lin(self, x, name, bias=False):
        y = x @ self.w[name + '.weight'].T
        if bias and (name + '.bias') in self.w:
            y = y + self.w[name + '.bias']
        if self.lora is not None and name in self.lora:
            a, b = self.lora[name]
            y = y + self.lora_scaling * ((x @ a.T) @ b.T)
        return y

    def forward(self, ids, pos, past=None, last_only=False):
        """ids, pos [B, T] (no padding); past: list of (k, v) [B, KV, L, hd]. Returns logits (of
        the last position only with last_only, as a decoder needs), new past."""
        torch = self.torch
        B, T = ids.shape
        x = self.w['model.embed_tokens.weight'][ids]
        G = self.H // self.KV
        new = []
        Lp = 0 if past is None else past[0][0].shape[2]
        causal = torch.ones(T, Lp + T, dtype=torch.bool, device=self.device).tril(Lp)
        for i in range(self.L):
            p = f'model.layers.{i}.'
            h = self.rms(x, self.w[p + 'input_layernorm.weight'])
            q = self.lin(h, p + 'self_attn.q_proj', True).view(B, T, self.H, self.hd).transpose(1, 2)
            k = self.lin(h, p + 'self_attn.k_proj', True).view(B, T, self.KV, self.hd).transpose(1, 2)
            v = self.lin(h, p + 'self_attn.v_proj', True).view(B, T, self.KV, self.hd).transpose(1, 2)
            if self.qk_norm:
                q = self.rms(q, self.w[p + 'self_attn.q_norm.weight'])
                k = self.rms(k, self.w[p + 'self_attn.k_norm.weight'])
            q, k = self.rope(q, pos), self.rope(k, pos)
            if past is not None:
                k = torch.cat([past[i][0], k], 2)
                v = torch.cat([past[i][1], v], 2)
            new.append((k, v))
            kk = k.repeat_interleave(G, dim=1)
            vv = v.repeat_interleave(G, dim=1)
            s = (q @ kk.transpose(-1, -2)) / math.sqrt(self.hd)
            s = s.masked_fill(~causal, float('-inf'))
            o = (torch.softmax(s, -1) @ vv).transpose(1, 2).reshape(B, T, self.H * self.hd)
            x = x + self.lin(o, p + 'self_attn.o_proj')
            h = self.rms(x, self.w[p + 'post_attention_layernorm.weight'])
            g = self.lin(h, p + 'mlp.gate_proj')
            x = x + self.lin(torch.nn.functional.silu(g) * self.lin(h, p + 'mlp.up_proj'), p + 'mlp.down_proj')
        if last_only:
            x = x[:, -1:]
        x = self.rms(x, self.w['model.norm.weight'])
        return x @ self.head.T, new


def cmd_logprobs(d, out, adapter=None):
    import torch
    req = json.load(sys.stdin)
    m = Model(d, torch.float64)
    if adapter is not None:
        m.load_peft(adapter)
    rows = 0
    V = None
    with open(out, 'wb') as f:
        with torch.no_grad():
            for ids in req['prompts']:
                t = torch.tensor([ids])
                logits, _ = m.forward(t, torch.arange(len(ids))[None, :])
                lp = torch.log_softmax(logits[0], -1)
                V = lp.shape[-1]
                rows += lp.shape[0]
                f.write(lp.to(torch.float32).numpy().astype('<f4').tobytes())
    print(json.dumps({'ok': True, 'rows': rows, 'vocab': V}))


def cmd_bench(d, args):
    import torch
    threads = int(args.get('--threads', 1))
    torch.set_num_threads(threads)
    P, N, B, seconds = int(args['--prompt']), int(args['--new']), int(args['--batch']), float(args.get('--seconds', 3))
    device = pick_device(args.get('--device', 'cpu'))
    m = Model(d, torch.float32, device)
    V = m.head.shape[0]
    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(0, min(V, 100000), (B, P), generator=g).to(device)
    pos = torch.arange(P, device=device)[None, :].expand(B, P)

    def timed(fn):
        times = []
        end = time.perf_counter() + seconds
        while not times or time.perf_counter() < end:
            t0 = time.perf_counter()
            fn()
            sync(device)
            times.append(time.perf_counter() - t0)
        times.sort()
        return {'best_ms': times[0] * 1000, 'median_ms': times[len(times) // 2] * 1000, 'calls': len(times)}

    def prefill():
        with torch.no_grad():
            logits, past = m.forward(prompts, pos, last_only=True)
        return logits[:, -1], past

    def decode():
        with torch.no_grad():
            logits, past = prefill()
            sync(device)
            t0 = time.perf_counter()
            for j in range(N):
                nxt = logits.argmax(-1)[:, None]
                logits, past = m.forward(nxt, torch.full((B, 1), P + j, device=device), past, last_only=True)
                logits = logits[:, -1]
            nxt = logits.argmax(-1).cpu()  # the last token read back, as the Studio's sampler reads every step's
            return time.perf_counter() - t0

    pre = timed(lambda: prefill())
    dec_times = []
    end = time.perf_counter() + seconds
    while not dec_times or time.perf_counter() < end:
        dec_times.append(decode())
    dec_times.sort()
    print(json.dumps({
        'ok': True, 'torch': torch.__version__, 'threads': threads, 'device': str(device),
        'gpu': torch.cuda.get_device_name(0) if device.type == 'cuda' else None,
        'prefill': {**pre, 'tokens_per_call': B * P},
        'decode': {'best_ms': dec_times[0] * 1000, 'median_ms': dec_times[len(dec_times) // 2] * 1000, 'calls': len(dec_times), 'tokens_per_call': B * N},
    }))


def cmd_rlstep(d, args):
    import torch
    device = pick_device(args.get('--device', 'cpu'))
    if device.type == 'cpu':
        torch.set_num_threads(int(args.get('--threads', 1)))
    B, P, N, steps = int(args['--batch']), int(args['--prompt']), int(args['--new']), int(args.get('--steps', 2))
    m = Model(d, torch.float32, device)
    for w in m.w.values():
        w.requires_grad_(False)
    params = m.add_lora(int(args.get('--rank', 8)), float(args.get('--alpha', 16)))
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.999), weight_decay=0.01)
    V = m.head.shape[0]
    g = torch.Generator().manual_seed(7)
    best_roll, best_upd = float('inf'), float('inf')
    for step in range(steps):
        prompts = torch.randint(0, min(V, 150000), (B, P), generator=g).to(device)
        sync(device)
        t0 = time.perf_counter()
        with torch.no_grad():
            logits, past = m.forward(prompts, torch.arange(P, device=device)[None, :].expand(B, P), last_only=True)
            out = []
            for j in range(N):
                probs = torch.softmax(logits[:, -1], -1)
                nxt = torch.multinomial(probs, 1)
                out.append(nxt)
                nxt_host = nxt.cpu()  # the sampled token goes back to the host every step, as in the Studio
                del nxt_host
                if j + 1 < N:
                    logits, past = m.forward(nxt, torch.full((B, 1), P + j, device=device), past, last_only=True)
            response = torch.cat(out, 1)
        sync(device)
        best_roll = min(best_roll, time.perf_counter() - t0)
        adv = (torch.randint(0, 2, (B, 1), generator=g).to(device) * 2 - 1).to(torch.float32)
        t0 = time.perf_counter()
        seq = torch.cat([prompts, response], 1)
        T = P + N
        logits, _ = m.forward(seq[:, :-1], torch.arange(T - 1, device=device)[None, :].expand(B, T - 1))
        logp = torch.log_softmax(logits, -1).gather(-1, seq[:, 1:, None])[..., 0]  # [B, T-1]
        loss = -(adv * logp[:, P - 1:]).sum() / (B * N)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        loss_value = float(loss)  # read back, as the Studio reads the loss and the gradient norm
        sync(device)
        best_upd = min(best_upd, time.perf_counter() - t0)
    print(json.dumps({
        'ok': True, 'torch': torch.__version__, 'device': str(device),
        'gpu': torch.cuda.get_device_name(0) if device.type == 'cuda' else None,
        'trainable': sum(p.numel() for p in params), 'rollout_ms': best_roll * 1000, 'update_ms': best_upd * 1000,
        'loss': loss_value,
    }))


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    cmd, d = sys.argv[1], sys.argv[2]
    if cmd == 'logprobs':
        rest = sys.argv[4:]
        cmd_logprobs(d, sys.argv[3], rest[1] if rest[:1] == ['--adapter'] and len(rest) > 1 else None)
    elif cmd in ('bench', 'rlstep'):
        rest = sys.argv[3:]
        (cmd_bench if cmd == 'bench' else cmd_rlstep)(d, {rest[i]: rest[i + 1] for i in range(0, len(rest) - 1, 2)})
    else:
        print(f'unknown command {cmd}', file=sys.stderr)
        sys.exit(2)


if __name__ == '__main__':
    main()
