"""PyTorch peer of `npm run bench:hf` (bench/hfPeers.ts runTorch starts it): the same HF Llama
checkpoint folder (read here: safetensors parsed by hand, BF16/F16/F32; Debian's python3-torch has
no `safetensors` or `transformers`), HF's maths written in torch ops (RMSNorm, rotate-half RoPE,
grouped K/V heads repeated, causal softmax attention, SwiGLU, tied head), f32 on the CPU.
argv: the folder, the thread count; stdin: the workloads (bench/hfPeers.ts Workloads, JSON);
stdout: one JSON object (EngineResult's fields): the check prompt's last logits, greedy tokens,
per-workload times in ms, peak RSS. Decode: the prompts in one batch, then one token per step
with a K/V cache; LoRA: rank 8, alpha 16 on every projection, next-token cross-entropy,
backward, AdamW (lr 1e-4) over the adapters only.

Not here: the tables (bench/hf.ts), any other peer.
"""
import json
import os
import resource
import sys
import time

import numpy as np
import torch


def read_folder(path):
    """HF name -> f32 tensor, and config.json."""
    cfg = json.load(open(os.path.join(path, "config.json")))
    out = {}
    for name in sorted(os.listdir(path)):
        if not name.endswith(".safetensors"):
            continue
        raw = open(os.path.join(path, name), "rb").read()
        n = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8:8 + n])
        base = 8 + n
        for key, info in header.items():
            if key == "__metadata__":
                continue
            a, b = info["data_offsets"]
            buf = raw[base + a:base + b]
            if info["dtype"] == "BF16":
                v = (np.frombuffer(buf, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
            elif info["dtype"] == "F16":
                v = np.frombuffer(buf, dtype=np.float16).astype(np.float32)
            else:
                v = np.frombuffer(buf, dtype=np.float32).copy()
            out[key] = torch.from_numpy(v.reshape(info["shape"]).copy())
    return out, cfg


class Llama(torch.nn.Module):
    def __init__(self, t, cfg, rank=0):
        super().__init__()
        self.cfg = cfg
        self.L = cfg["num_hidden_layers"]
        self.NH = cfg["num_attention_heads"]
        self.KV = cfg["num_key_value_heads"]
        self.C = cfg["hidden_size"]
        self.HS = self.C // self.NH
        self.eps = cfg["rms_norm_eps"]
        self.t = t
        self.emb = t["model.embed_tokens.weight"]
        self.head = t.get("lm_head.weight", self.emb)
        inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, self.HS, 2, dtype=torch.float64) / self.HS))
        ang = torch.outer(torch.arange(cfg["max_position_embeddings"], dtype=torch.float64), inv)
        ang = torch.cat([ang, ang], dim=-1)
        self.cos, self.sin = ang.cos().float(), ang.sin().float()
        self.lora = torch.nn.ParameterDict()
        self.scale = 16.0 / rank if rank else 0.0
        if rank:
            for k, v in t.items():
                if v.dim() == 2 and k.startswith("model.layers."):
                    key = k.replace(".", "_")
                    self.lora[key + "_A"] = torch.nn.Parameter(torch.randn(rank, v.shape[1]) / v.shape[1] ** 0.5)
                    self.lora[key + "_B"] = torch.nn.Parameter(torch.zeros(v.shape[0], rank))

    def lin(self, x, name):
        y = x @ self.t[name].T
        key = name.replace(".", "_")
        if key + "_A" in self.lora:
            y = y + (x @ self.lora[key + "_A"].T) @ self.lora[key + "_B"].T * self.scale
        return y

    def norm(self, x, g):
        return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def rope(self, x, pos):
        cos, sin = self.cos[pos][:, None], self.sin[pos][:, None]  # [T, 1, HS]
        h = self.HS // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
        return x * cos + rot * sin

    def forward(self, ids, cache=None, pos0=0):
        """ids [B, T]; cache: per layer (k, v) [B, KV, P, HS] or None. Returns logits, new cache."""
        B, T = ids.shape
        x = self.emb[ids]
        pos = torch.arange(pos0, pos0 + T)
        new = []
        for l in range(self.L):
            p = f"model.layers.{l}."
            h = self.norm(x, self.t[p + "input_layernorm.weight"])
            q = self.lin(h, p + "self_attn.q_proj.weight").view(B, T, self.NH, self.HS)
            k = self.lin(h, p + "self_attn.k_proj.weight").view(B, T, self.KV, self.HS)
            v = self.lin(h, p + "self_attn.v_proj.weight").view(B, T, self.KV, self.HS)
            q = self.rope(q, pos).transpose(1, 2)
            k = self.rope(k, pos).transpose(1, 2)
            v = v.transpose(1, 2)
            if cache is not None:
                k = torch.cat([cache[l][0], k], dim=2)
                v = torch.cat([cache[l][1], v], dim=2)
            new.append((k, v))
            rep = self.NH // self.KV
            kr, vr = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
            s = (q @ kr.transpose(-1, -2)) / self.HS ** 0.5
            S = kr.shape[2]
            mask = torch.arange(S)[None, :] > (pos0 + torch.arange(T))[:, None]
            s = s.masked_fill(mask, float("-inf"))
            a = (s.softmax(-1) @ vr).transpose(1, 2).reshape(B, T, self.C)
            x = x + self.lin(a, p + "self_attn.o_proj.weight")
            h = self.norm(x, self.t[p + "post_attention_layernorm.weight"])
            g = self.lin(h, p + "mlp.gate_proj.weight")
            x = x + self.lin(torch.nn.functional.silu(g) * self.lin(h, p + "mlp.up_proj.weight"), p + "mlp.down_proj.weight")
        return self.norm(x, self.t["model.norm.weight"]) @ self.head.T, new


def timed(fn, w, warm):
    t0 = time.perf_counter()
    warm()
    ms = []
    while len(ms) < w["reps"] and (not ms or time.perf_counter() - t0 < w["budgetS"]):
        a = time.perf_counter()
        fn()
        ms.append(1000 * (time.perf_counter() - a))
    return ms


def main():
    path, threads = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(threads)
    w = json.load(sys.stdin)
    a = time.perf_counter()
    t, cfg = read_folder(path)
    m = Llama(t, cfg)
    load_s = time.perf_counter() - a
    res = {"loadS": load_s, "logp": False, "notes": [f"torch threads {torch.get_num_threads()}"]}
    prefill = torch.tensor([w["prefill"]])
    with torch.no_grad():
        res["check"] = m(prefill)[0][0, -1].tolist()
        res["prefillMs"] = timed(lambda: m(prefill), w, lambda: m(prefill))

        def decode(k):
            ids = torch.tensor([p[: k["P"]] for p in w["prompts"][: k["S"]]])
            logits, cache = m(ids)
            nxt = logits[:, -1].argmax(-1)
            got = [nxt]
            for n in range(1, k["N"]):
                logits, cache = m(nxt[:, None], cache, k["P"] + n - 1)
                nxt = logits[:, -1].argmax(-1)
                got.append(nxt)
            return torch.stack(got, 1)[0].tolist()

        res["decodeMs"] = []
        for i, k in enumerate(w["decode"]):
            if i == 0:
                res["greedy"] = decode(k)
            res["decodeMs"].append(timed(lambda: decode(k), w, lambda: decode({"S": 1, "P": k["P"], "N": 2})))
    torch.manual_seed(1)
    lm = Llama(t, cfg, rank=8)
    opt = torch.optim.AdamW(lm.lora.parameters(), lr=1e-4)
    B, T = w["lora"]["B"], w["lora"]["T"]
    toks = torch.tensor(w["lora"]["tokens"]).view(B, T)

    def step():
        opt.zero_grad()
        logits, _ = lm(toks)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), toks[:, 1:].reshape(-1))
        loss.backward()
        opt.step()

    res["loraMs"] = timed(step, w, step)
    res["peakRss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    json.dump(res, sys.stdout)


main()
