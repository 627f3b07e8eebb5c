#!/usr/bin/env bash
# Session 36 run A: build s36a = main + the key side's last key block on a kernel of its own, a warp
# per (window, head) item (session 35's run I patch) reworked: no 64-bit division per unit (a copy
# cursor advanced per unit), the D partial by a reduce-scatter (8 shuffles, was 24), the k rows of
# the epilogue from the A fragments, one item buffer, 3 unit slots, 4 CTAs (16 warps) per SM.
# Bitwise KV_TAIL=0 vs default; kernel times; fwd+bwd graph step A/B; tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runA-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runA-build.txt
grep -i "error" $OUT/runA-build.txt | head -20
strip --strip-all -o /tmp/s36a.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s36a.so > $OUT/s36a_C.abi3.so.xz
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail" -x > $OUT/runA-pytest-tail.txt 2>&1; echo "rc $?" >> $OUT/runA-pytest-tail.txt
tail -5 $OUT/runA-pytest-tail.txt
FWA_WINDOW_KV_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runA-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runA-bitwise.txt 2>&1; echo "KV_TAIL default vs 0: cmp rc $?" >> $OUT/runA-bitwise.txt
grep -v "^ *equal" $OUT/runA-bitwise.txt | tail -12
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 2>&1 | grep -v -i warn | grep -E "kv_|q_wg|dsum|sum of"
done | tee $OUT/runA-prof.txt
for round in 1 2; do
  for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
    env $e python benchmarks/results/session36/graph_ab.py $e 3 2>&1 | grep -v -i warn
  done
done | tee $OUT/runA-graph.txt
timeout 240 python -m pytest -q -m cuda tests/test_window_attention.py -k "narrow_last or wgmma_forward_in or row_tail or tiled_backward or d32_forms" -x > $OUT/runA-pytest.txt 2>&1; echo "rc $?" >> $OUT/runA-pytest.txt
tail -4 $OUT/runA-pytest.txt
