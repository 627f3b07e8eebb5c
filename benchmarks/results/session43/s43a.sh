#!/usr/bin/env bash
# Session 43 run A: build s43a = main (s42h's kernels) + the backward key side's persistent grid
# (wgmma form: at most the resident CTAs, each walking items blockIdx.x + k gridDim.x, the next
# item's k, v and first query block copied during this item's last block; FWA_WINDOW_KV_PERSIST=0:
# one CTA per item). window_bitwise against s42h (must be equal: same operations per item); the new
# persistent tests (bitwise vs KV_PERSIST=0, float64) and the window suite's non-subprocess tests;
# the fwd+bwd timeline at configs 3 and 1 (default and KV_PERSIST=0); the graph step s42h / s43a at
# configs 3, V1 (1024, 4, 144), 1 and 4, 2 rounds.
# (The build, bitwise and graph steps: benchmarks/results/device_steps.sh, factored out after the run.)
export PYTHONPATH=$PWD
source benchmarks/results/device_steps.sh
t0=$(date +%s)
fwa_build s43a A
fwa_bitwise_vs s42h A
timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_persistent" > $OUT/runA-test-persist.txt 2>&1; echo "rc $?" >> $OUT/runA-test-persist.txt
tail -n 3 $OUT/runA-test-persist.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" -x > $OUT/runA-window.txt 2>&1; echo "rc $?" >> $OUT/runA-window.txt
tail -n 3 $OUT/runA-window.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for dt in fp16 bf16; do
  python benchmarks/results/session42/timeline_bwd.py s43a $dt 3 1 2>&1 | grep -v -i warn
  FWA_WINDOW_KV_PERSIST=0 python benchmarks/results/session42/timeline_bwd.py s43a-nopersist $dt 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runA-timeline.txt
fwa_graph_ab A 3 1024,4,144,32,16,12,v1 1 4
echo "total $(( $(date +%s) - t0 )) s"
