#!/usr/bin/env bash
# Session 57 run A: the d = 64 warp-specialised forward takes the row sums of its 16-bit P by the
# P v product itself, P [v | 1] as wgmma m64n72k16 (a fixed 16 x 64 tile of ones as the second
# panel), instead of p16_row_sums' 8 mma.sync per step (session 56: the forward 63.9 -> 68.9 us at
# block256x16 with the sums and out_lo). Build; GPU time against session 56's main (s56d) at
# configs 0 and 4; the random problems with the residual-D backward everywhere; the op's CUDA
# suite; the timeline at config 0.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s57a A
fwa_unpack .devbuild/s56d.so.xz /tmp/base.so
fwa_local_graph_ab 0 4
echo "graph done $(( $(date +%s) - t0 )) s"
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 120 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runA-random-residual.txt 2>&1
tail -2 $OUT/runA-random-residual.txt
echo "random done $(( $(date +%s) - t0 )) s"
timeout 60 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | grep -E "median|_ws_|prep|emset"
timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py --durations=3 > $OUT/runA-tests.txt 2>&1
tail -6 $OUT/runA-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
