#!/usr/bin/env bash
# Session 40 run J: is run I's N = 144 fwd+bwd (0.457 / 0.561 ms against 0.374 / 0.316 in session 38)
# host-bound or slower on the GPU? The fwd+bwd step in a CUDA graph (session36/graph_ab.py, median of
# 200 replays) on s39j (main's window kernels before this session) and s40g, 2 rounds; then the
# benchmark's own timing again for config 3 on s40g.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s39j_so/_C.abi3.so.xz /tmp/base.so
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/new.so
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 2>&1 | grep -v -i warn
done; done | tee $OUT/runJ-graph.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 200 python benchmarks/bench_window_attention.py --configs 3 --impls ours --out /tmp/x.json 2>&1 | grep -E "ours +fwd|N144" | tee $OUT/runJ-bench.txt
