#!/usr/bin/env bash
# Session 41 run H (timing only): s40g / s41e, 2 rounds: the fwd+bwd step in a CUDA graph
# (session36/graph_ab.py) at config 3 and V1 (1024, 4, 144); swinv2_base_window12_192 (N = 144),
# bs 64, swapped, eager inference and training step GPU time with the op's kernels
# (tools/model_profile.py).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/s40g.so
python tools/device/unxz.py tools/device/s41e_so/_C.abi3.so.xz /tmp/s41e.so
for r in 1 2; do for b in s40g s41e; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session36/graph_ab.py $b 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done; done | tee $OUT/runH-graph.txt
echo "graph done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for b in s40g s41e; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  for mode in infer train; do
    echo "== round $r $b $mode"
    timeout 150 python tools/model_profile.py --model swinv2_base_window12_192 --variants swap --mode $mode --steps 5 --top 3 2>&1 | grep -v Warning | grep "GPU time per step"
  done
done; done | tee $OUT/runH-model.txt
echo "total $(( $(date +%s) - t0 )) s"
