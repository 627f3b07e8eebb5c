#!/usr/bin/env bash
# Session 30 run G: the mma.sync window forward (d = 64 / 128, N > 256 at d = 32) launched as a
# programmatic dependent of the bm build, as the wgmma forward is (s30i = main +
# tools/patches/window-fwd-mma-sync-pdl-NO-GAIN.patch; not kept). Op forward /
# fwd+bwd medians (tools/time_ops.py) with FWA_WINDOW_PDL=1 / 0 alternating, 3 rounds; then the
# CUDA suites (3 processes); then bench_window_attention config 8 (d = 64) with every peer.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s30i_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2 3; do for m in 1 0; do
  FWA_WINDOW_PDL=$m timeout 100 python tools/time_ops.py --configs 8,4,0 --dtype bf16 --label "pdl=$m round $r" 2>&1 | grep -v Warn
done; done
timeout 290 python -m pytest -q -m cuda tests/test_window_attention.py -x > $OUT/tests_window.txt 2>&1 &
timeout 290 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_dropout.py -x > $OUT/tests_extremes.txt 2>&1 &
timeout 290 python -m pytest -q -m cuda tests/test_random_problems.py tests/test_lifecycle.py tests/test_compile_opcheck.py -x > $OUT/tests_random.txt 2>&1 &
wait
for f in $OUT/tests_*.txt; do echo "== $f"; tail -n 3 $f; done
timeout 100 python benchmarks/bench_window_attention.py --configs 8 --out $OUT/window-s30i-d64.json > $OUT/window-s30i-d64.log 2>&1
tail -n 12 $OUT/window-s30i-d64.log
