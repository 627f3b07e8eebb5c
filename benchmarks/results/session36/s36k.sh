#!/usr/bin/env bash
# Session 36 run K (the final review's change): the tail kernel's D sums through warp_reduce.cuh's
# column_sums_step (generalised to any array size) instead of a copy of it, and its copy cursor's
# item index derived from (b, h). Bitwise against run G's build (s36g, carried) with the tail kernel
# on in both; kv_tail tests; kernel times; graph step A/B at (512, 4, 144).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/old.pt > $OUT/runK-bitwise.txt 2>&1
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runK-build.txt
python tools/window_bitwise.py cmp /tmp/old.pt >> $OUT/runK-bitwise.txt 2>&1; echo "s36k vs s36g (tail kernel on): cmp rc $?" >> $OUT/runK-bitwise.txt
grep -v "^ *equal" $OUT/runK-bitwise.txt | tail -3
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail or tiled_backward" -x > $OUT/runK-pytest.txt 2>&1; echo "rc $?" >> $OUT/runK-pytest.txt
tail -3 $OUT/runK-pytest.txt
env FWA_WINDOW_KV_TAIL=1 python benchmarks/results/session33/prof_kernels.py s36k 3 2>&1 | grep -v -i warn | grep -E "kv_|dsum|sum of" | tee $OUT/runK-prof.txt
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session36/graph_ab.py $e 3 2>&1 | grep -v -i warn
done | tee $OUT/runK-graph.txt
