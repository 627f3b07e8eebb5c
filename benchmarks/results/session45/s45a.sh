#!/usr/bin/env bash
# Session 45 run A (H200): the wgmma key side computing D itself (BwdParams::kv_computes_d,
# FWA_WINDOW_BWD_KV_D): build; bitwise FWA_WINDOW_BWD_KV_D=0 against the default (expected equal);
# the fwd+bwd step in a CUDA graph at bench configs 3 (N = 144), 1 (N = 256) and 4 (N = 576), the two
# settings alternating, 2 rounds; the backward's GPU timeline at config 3 both ways; then the tests of
# the change (own-D bitwise, kv tail, tiled d <= 32 forms).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $OUT/runA-gpu.txt
fwa_build s45a A
rm -f $OUT/s45a.so.xz
FWA_WINDOW_BWD_KV_D=0 timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runA-bitwise.txt
echo "bitwise done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for e in 0 1; do
  FWA_WINDOW_BWD_KV_D=$e timeout 120 python benchmarks/results/session36/graph_ab.py kvd$e 3 1 4 2>&1 | grep -v -i warn
done; done | tee $OUT/runA-graph.txt
echo "graph done $(( $(date +%s) - t0 )) s"
FWA_WINDOW_BWD_KV_D=0 timeout 60 python benchmarks/results/session42/timeline_bwd.py pre bf16 3 > $OUT/runA-timeline.txt 2>&1
timeout 60 python benchmarks/results/session42/timeline_bwd.py own bf16 3 >> $OUT/runA-timeline.txt 2>&1
grep -v -i warn $OUT/runA-timeline.txt | tail -40
echo "timeline done $(( $(date +%s) - t0 )) s"
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "own_d or kv_tail or tiled_backward_d32" > $OUT/runA-tests.txt 2>&1
tail -3 $OUT/runA-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
