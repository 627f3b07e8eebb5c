"""Session 50: the Swin V2 position biases of a whole model's layers, forward + backward, captured
in a CUDA graph (after eager warm-up calls: the index cache filled, as in a model step): the
batched ops (swin_cpb_bias_batch_forward / _backward: one launch per kernel) against the one-layer
op called per layer. Median GPU time of 300 replays (CUDA events) and each kernel's time per step
(profiler over 20 replays). Layer lists: swinv2_tiny_window16_256 and swinv2_base_window12_192.

    python benchmarks/results/session50/cpb_batch_graph.py
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import flash_window_attn  # noqa: F401 (registers the ops)
from flash_window_attn.modules import _relative_position_index

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
import _bench_common  # noqa: E402

OPS = torch.ops.flash_window_attn
MODELS = {
    "window16": [(16, 3)] * 2 + [(16, 6)] * 2 + [(16, 12)] * 6 + [(8, 24)] * 2,
    "base12": [(12, 4)] * 2 + [(12, 8)] * 2 + [(12, 16)] * 18 + [(6, 32)] * 2,
}


def layer(w, H, seed):
    rh = torch.arange(-(w - 1), w, dtype=torch.float32)
    table = torch.stack(torch.meshgrid(rh, rh, indexing="ij")).permute(1, 2, 0).reshape(-1, 2)
    table = table / max(w - 1, 1) * 8
    table = (torch.sign(table) * torch.log2(table.abs() + 1.0) / 3).contiguous().cuda()   # (as the modules' buffer)
    index = _relative_position_index(w, w).cuda()
    torch.manual_seed(seed)
    w1 = (torch.randn(512, 2) * 0.5).cuda().requires_grad_()
    b1 = (torch.randn(512) * 0.1).cuda().requires_grad_()
    w2 = (torch.randn(H, 512) * 0.05).cuda().requires_grad_()
    g = torch.randn(H, w * w, w * w, device="cuda")
    return table, w1, b1, w2, index, g


def steps(layers):
    def per_layer():
        outs = []
        for table, w1, b1, w2, index, g in layers:
            bias, h, sig = OPS.swin_cpb_bias_forward(table, w1, b1, w2, index)
            outs.append(OPS.swin_cpb_bias_backward(g, table, w1, b1, w2, index, h, sig))
        return outs

    cols = list(zip(*layers))

    def batched():
        bias, h, sig = OPS.swin_cpb_bias_batch_forward(*[list(c) for c in cols[:5]])
        return OPS.swin_cpb_bias_batch_backward(list(cols[5]), *[list(c) for c in cols[:5]], h, sig)

    return {"per-layer": per_layer, "batched": batched}


def main():
    for model, shapes in MODELS.items():
        layers = [layer(w, H, 100 * i + H) for i, (w, H) in enumerate(shapes)]
        with torch.no_grad():
            fns = steps(layers)
            ref = [t.clone() for r in fns["per-layer"]() for t in r]
            got = [t.clone() for r in zip(*fns["batched"]()) for t in r]   # (dw1s, db1s, dw2s) per layer
            same = all(torch.equal(a, b) for a, b in zip(ref, got))
            for name, fn in fns.items():
                g, _out = _bench_common.cuda_graph_capture(fn, warmup=3)
                us = 1000 * _bench_common.cuda_event_median_ms(g.replay, 300, flush_l2=False, warmup=20)
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(20):
                        g.replay()
                    torch.cuda.synchronize()
                ks = []
                for ev in prof.key_averages():
                    if ev.device_time_total > 0:
                        k = ev.key.replace("(anonymous namespace)::", "").split("(")[0].split("<")[0].split("::")[-1]
                        ks.append(f"{k.replace('cpb_', '').replace('_kernel', '')} {ev.device_time_total / 20:.1f}"
                                  f" x{ev.count // 20}")
                print(f"[{model}] {len(shapes)} layers, {name:9s}: graph {us:6.1f} us | " + ", ".join(sorted(ks)),
                      flush=True)
                if model == "window16":   # every kernel's full name, once
                    for ev in prof.key_averages():
                        if ev.device_time_total > 0 and "cpb" not in ev.key:
                            print(f"    {ev.key[:240]}")
            print(f"[{model}] batched bitwise the per-layer op: {same}", flush=True)


if __name__ == "__main__":
    main()
