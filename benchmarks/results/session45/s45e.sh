#!/usr/bin/env bash
# Session 45 run E (H200): run D's chain with the query side's q / dout copies issued before its
# pdl_wait: build; bitwise FWA_WINDOW_PDL=0 against the default; GPU time (graph) at sliding config 1
# both ways, 2 rounds, and with the warp-specialised key / query sides forced (FWA_LOCAL_BWD_KV_WS,
# FWA_LOCAL_BWD_Q_WS = 1: below their item threshold there); the local CUDA tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s45e E
rm -f $OUT/s45e.so.xz
FWA_WINDOW_PDL=0 timeout 120 python tools/local_bitwise.py save /tmp/lref.pt > /dev/null 2>&1
timeout 120 python tools/local_bitwise.py cmp /tmp/lref.pt 2>&1 | grep -v -i warn | tail -3 | tee $OUT/runE-bitwise.txt
for r in 1 2; do for e in 0 1; do
  FWA_WINDOW_PDL=$e timeout 120 python benchmarks/results/session45/local_graph_ab.py pdl$e 1 2>&1 | grep -v -i warn
done; done | tee $OUT/runE-graph.txt
FWA_LOCAL_BWD_KV_WS=1 timeout 120 python benchmarks/results/session45/local_graph_ab.py kvws 1 2>&1 | grep -v -i warn | tee -a $OUT/runE-graph.txt
FWA_LOCAL_BWD_Q_WS=1 timeout 120 python benchmarks/results/session45/local_graph_ab.py qws 1 2>&1 | grep -v -i warn | tee -a $OUT/runE-graph.txt
echo "graph done $(( $(date +%s) - t0 )) s"
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py -x -k "not subprocess" > $OUT/runE-tests.txt 2>&1
tail -2 $OUT/runE-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
