#!/usr/bin/env bash
# session 20 run 11: build g (= e + FWA_WINDOW_PDL switch): window8 swapped (+ compile) inference,
# PDL on / off alternating, 2 rounds; op A/B at N <= 64.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do for P in 1 0; do
FWA_WINDOW_PDL=$P timeout 120 python benchmarks/bench_models.py --models swinv2_tiny_window8_256 --variants swap_compile,swap --modes infer --out /tmp/m$P$r.json > $OUT/m-pdl$P-r$r.log 2>&1
echo "pdl $P round $r: $(grep -E '^[cd] ' $OUT/m-pdl$P-r$r.log | awk '{print $1, $NF, $0}' | cut -c1-60 | tr '\n' ';')" | tee -a $OUT/summary.txt
FWA_WINDOW_PDL=$P timeout 60 python tools/time_ops.py --dtype bf16 --configs 0,5,6 --label pdl$P 2>&1 | grep "^\[" | cut -c1-90 | tee -a $OUT/summary.txt
done; done
