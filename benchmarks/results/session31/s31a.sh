#!/usr/bin/env bash
# Session 31 run A: the wgmma forward with narrow last key blocks (build s31a). Forward A/B
# (FWA_WINDOW_WGMMA_TAIL=0 / default, 2 rounds), window_bitwise tail off vs on, the new bitwise
# test and the wgmma forward tests, then bench config 3 (N = 144) with every peer.
set -u
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s31a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
R=benchmarks/results/session31
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
for r in 1 2; do
  FWA_WINDOW_WGMMA_TAIL=0 python $R/tail_ab.py 2>&1 | tee -a $OUT/runA-tail-ab.txt
  python $R/tail_ab.py 2>&1 | tee -a $OUT/runA-tail-ab.txt
done
FWA_WINDOW_WGMMA_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runA-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runA-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runA-bitwise.txt
timeout 200 python -m pytest -q -x tests/test_window_attention.py -k "wgmma_forward or narrow_last_block or mma_sync_forward_at" > $OUT/runA-pytest-wgmma.txt 2>&1; echo "rc $?" >> $OUT/runA-pytest-wgmma.txt
tail -3 $OUT/runA-pytest-wgmma.txt
timeout 150 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/runA-bench-n144.json > $OUT/runA-bench-n144.log 2>&1
tail -30 $OUT/runA-bench-n144.log
