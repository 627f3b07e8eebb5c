#!/usr/bin/env bash
# Session 28 run I: is run G's (256, 12, 64) fwd+bwd (0.30 ms; 0.13 in session 20) the GPU or the
# host? Per-kernel GPU time of fwd+bwd (configs 6 and 5) on s28a and on session 27's s27i, and the
# event time of a step without the L2 flush.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27i_so/_C.abi3.so.xz /tmp/i.so
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz /tmp/a.so
for so in i a; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== build $so"
  timeout 100 python tools/kernel_breakdown.py --configs 6,5 --iters 20 2>&1 | grep -v Warn
done
cp /tmp/a.so flash_window_attn/_C.abi3.so
timeout 100 python - <<'PY'
import sys, time, torch
sys.path.insert(0, "benchmarks")
import bench_window_attention as bw
for i in (6, 5):
    cfg = bw.CONFIGS[i]
    inp = bw.make_inputs(cfg, torch.bfloat16)
    a = (inp["q"], inp["k"], inp["v"], inp["bias"], inp["mask"], inp["logit_scale"])
    def step():
        out = bw.impl_ours(*a)
        torch.autograd.grad(out, bw.grad_leaves(inp), inp["dout"])
    for _ in range(20): step()
    torch.cuda.synchronize()
    for p in range(3):
        t0 = time.perf_counter()
        for _ in range(200): step()
        t1 = time.perf_counter(); torch.cuda.synchronize(); t2 = time.perf_counter()
        print(f"{cfg.name}: host issue {1e6*(t1-t0)/200:.1f} us/step, wall {1e6*(t2-t0)/200:.1f} us/step")
PY
