#!/usr/bin/env bash
# Session 43 run E: build s43e = main + the backward preprocess in 4 forms (FWA_PRE_MODE, this build
# only): 0 = main's; 1 = 4 rows per thread group, 32-bit index arithmetic advanced without
# division, all loads first; 2 = 1 + the bm build's bias / mask as float4; 3 = 2 with the rows in
# (b, i, h) order. window_bitwise mode 0 vs 1, 2, 3 (must be equal); the window suite's
# non-subprocess tests and the forced-tiled small-window test in modes 2 and 3; the fwd+bwd
# timeline (bf16, configs 3 and 1) in each mode with dout contiguous and (B, N, H, d).
# (The build, bitwise and graph steps: benchmarks/results/device_steps.sh, factored out after the run.)
export PYTHONPATH=$PWD
source benchmarks/results/device_steps.sh
t0=$(date +%s)
fwa_build s43e E
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
for m in 1 2 3; do
  echo "mode $m: $(FWA_PRE_MODE=$m timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -1)"
done | tee $OUT/runE-bitwise.txt
for m in 2 3; do
  FWA_PRE_MODE=$m timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess or tiled_backward_for_small_windows" -x > $OUT/runE-window-m$m.txt 2>&1; echo "rc $?" >> $OUT/runE-window-m$m.txt
  echo "mode $m tests: $(tail -n 2 $OUT/runE-window-m$m.txt | head -1)"
done
echo "tests done $(( $(date +%s) - t0 )) s"
for lay in bhnd bnhd; do for m in 0 1 2 3; do
  FWA_PRE_MODE=$m timeout 60 python benchmarks/results/session43/pre_ab.py m$m bf16 $lay 3 1 2>&1 | grep -v -i warn | grep -E "==|preprocess|kv_kernel"
done; done | tee $OUT/runE-timeline.txt
echo "total $(( $(date +%s) - t0 )) s"
