#!/usr/bin/env bash
# Session 56 run D: run C's sums of the 16-bit P by FADDs cost the forward 10-20 % (block256x16
# 66 -> 73-76 us, causal 183-191 -> 202-216). Now the warp-specialised and the 64-key-step wgmma
# forwards sum the packed P on the tensor cores (p16_row_sums: mma.sync m16n8k16 against ones, 8
# per 128-key step; the 128-key wgmma and the mma.sync forwards keep the FADD form, where the
# tensor-core form made ptxas serialise the wgmmas). Build; the random problems with the residual-D
# backward everywhere (run C: 1000 of 1000); the benchmark at configs 0, 1 with every peer; the
# sliding CUDA suites; the timeline at config 0.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runD.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s56d D
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 120 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runD-random-residual.txt 2>&1
tail -3 $OUT/runD-random-residual.txt
echo "random done $(( $(date +%s) - t0 )) s"
timeout 150 python benchmarks/bench_sliding_window.py --configs 0,1 --no-scaling --out $OUT/sliding-configs01.json > $OUT/sliding-configs01.log 2>&1
echo "bench 0,1 rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/sliding-configs01.log | tail -16
timeout 60 python benchmarks/results/session46/graph_timeline.py 0 bf16 ours 2>&1 | grep -v -i warn | grep -E "median|_ws_|prep|emset"
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py --durations=5 > $OUT/runD-tests.txt 2>&1
tail -8 $OUT/runD-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
