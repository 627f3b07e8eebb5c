#!/usr/bin/env bash
# Session 36 run J: s36j = main + the tail kernel's per-item spills removed (its item loop on the
# (b, h) cursor, no 64-bit item index; dv stored before dk). kv_tail tests; bitwise KV_TAIL=0 vs
# default; kernel times; graph step A/B at (512, 4, 144) and (2048, 4, 144).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runJ-build.txt
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail" -x > $OUT/runJ-pytest-tail.txt 2>&1; echo "rc $?" >> $OUT/runJ-pytest-tail.txt
tail -3 $OUT/runJ-pytest-tail.txt
FWA_WINDOW_KV_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runJ-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runJ-bitwise.txt 2>&1; echo "KV_TAIL default vs 0: cmp rc $?" >> $OUT/runJ-bitwise.txt
grep -v "^ *equal" $OUT/runJ-bitwise.txt | tail -3
env FWA_WINDOW_KV_TAIL=1 python benchmarks/results/session33/prof_kernels.py s36j 3 2>&1 | grep -v -i warn | grep -E "kv_|dsum|sum of" | tee $OUT/runJ-prof.txt
for round in 1 2; do
  for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
    env $e python benchmarks/results/session36/graph_ab.py $e 3 2048,4,144,32,16,12,v2 2>&1 | grep -v -i warn
  done
done | tee $OUT/runJ-graph.txt
