#!/usr/bin/env bash
# session 21 run 2: build s21b (= 01700fd + tile-major CTA order of the local kernels where one side
# of the band is unbounded, FWA_LOCAL_TILE_MAJOR=0/1 forces either): local CUDA tests, per-kernel
# A/B (profiler) of the two orders on block256x16 and causal, then the sliding bench configs 0,4.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s21b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
nvidia-smi --query-gpu=name --format=csv,noheader | tee $OUT/summary.txt
timeout 150 python -m pytest -q -m cuda tests/test_local_attention.py -k "cta_order or (grid_cuda and not subprocess) or deterministic or general_bands" 2>&1 | tail -3 | tee -a $OUT/summary.txt
for r in 1 2; do for o in 0 1; do
FWA_LOCAL_TILE_MAJOR=$o timeout 100 python tools/local_breakdown.py --configs 0,4 --impls ours --iters 20 > $OUT/bd_${o}_$r.txt 2>&1
echo "order $o round $r" | tee -a $OUT/summary.txt; grep -E "==|local_attn" $OUT/bd_${o}_$r.txt | cut -c1-100 | tee -a $OUT/summary.txt
done; done
timeout 280 python benchmarks/bench_sliding_window.py --configs 0,4 --no-scaling --out $OUT/sliding-s21b-configs04.json > $OUT/sliding-s21b-configs04.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt; tail -30 $OUT/sliding-s21b-configs04.log
