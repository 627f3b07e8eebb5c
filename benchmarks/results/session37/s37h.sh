#!/usr/bin/env bash
# Session 37 run H (no build; s37g's .so from run G still in place on a warm machine, else rebuilt):
# graph step at (4096, 3, 64), s37g and s36g alternating, s37g first, 3 rounds (run G had s36g first
# in each round and read s37g 1 % slower).
export PYTHONPATH=$PWD
[ -f /tmp/s37g.so ] || { MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /dev/null 2>&1; cp flash_window_attn/_C.abi3.so /tmp/s37g.so; }
[ -f /tmp/s36g.so ] || python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz /tmp/s36g.so
for r in 1 2 3; do
  for b in s37g s36g; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python benchmarks/results/session36/graph_ab.py $b 0 2>&1 | grep -v -i warn
  done
done | tee $OUT/runH-graph.txt
cp /tmp/s37g.so flash_window_attn/_C.abi3.so
