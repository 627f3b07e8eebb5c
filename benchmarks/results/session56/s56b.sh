#!/usr/bin/env bash
# Session 56 run B (run A's build, .devbuild/s56a.so.xz = main's kernels): bitwise against session
# 55's main (.devbuild/s55b.so.xz, run with session 55's Python package from
# .devbuild/base_pkg_s55.tar, which the new package's op check refuses) with
# FWA_LOCAL_BWD_RESIDUAL=0 (48 of 48 expected) and with the default; the sliding CUDA suites (op,
# lifecycle, extremes, random problems); the 1000 random problems again with both warp-specialised
# backward kernels on every grid (the residual-D backward wherever d > 32 in 16 bits).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runB.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_unpack .devbuild/s56a.so.xz flash_window_attn/_C.abi3.so
mkdir -p /tmp/basetree && tar -xf .devbuild/base_pkg_s55.tar -C /tmp/basetree
fwa_unpack .devbuild/s55b.so.xz /tmp/basetree/flash_window_attn/_C.abi3.so
(cd /tmp/basetree && PYTHONPATH=/tmp/basetree timeout 120 python tools/local_bitwise.py save /tmp/bitwise_ref.pt > /dev/null 2>&1)
FWA_LOCAL_BWD_RESIDUAL=0 timeout 120 python tools/local_bitwise.py cmp /tmp/bitwise_ref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runB-bitwise-exact.txt
timeout 120 python tools/local_bitwise.py cmp /tmp/bitwise_ref.pt 2>&1 | grep -v -i warn | tail -12 | tee $OUT/runB-bitwise-default.txt
echo "bitwise done $(( $(date +%s) - t0 )) s"
timeout 400 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_lifecycle.py \
  tests/test_local_extremes.py tests/test_local_random.py -x --durations=15 > $OUT/runB-tests.txt 2>&1
tail -22 $OUT/runB-tests.txt
echo "suites done $(( $(date +%s) - t0 )) s"
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_BWD_KV_WS=1 timeout 120 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runB-random-residual.txt 2>&1
tail -4 $OUT/runB-random-residual.txt
echo "end $(( $(date +%s) - t0 )) s"
