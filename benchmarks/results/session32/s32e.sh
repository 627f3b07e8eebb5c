#!/usr/bin/env bash
# Session 32 run E: build s32e = s32d + the key side's narrow last query block (kTailQ); run D: the query side's narrow last key block at Npad
# 192 (warpgroup 0: keys 0..63 and the last block, kTail wide; warpgroup 1: keys 64..127). Tests of
# every d <= 32 backward form and the narrow-block bitwise test, window_bitwise TAIL=0 vs default,
# the backward's kernels (profile) both ways, bench configs 1 and 3.
set -u
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s32e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
R=benchmarks/results/session32
timeout 330 python -m pytest -q tests/test_window_attention.py -k "narrow_last_block or tiled_backward_d32 or key_ranges or clustered or many_windows or dropout" > $OUT/runE-pytest.txt 2>&1; echo "rc $?" >> $OUT/runE-pytest.txt
tail -3 $OUT/runE-pytest.txt
FWA_WINDOW_WGMMA_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runE-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runE-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runE-bitwise.txt
tail -2 $OUT/runE-bitwise.txt
FWA_WINDOW_WGMMA_TAIL=0 python $R/prof_bwd.py 2>&1 | grep -v -i warn | sed 's/^/TAIL=0 /' | tee $OUT/runE-prof-bwd.txt
python $R/prof_bwd.py 2>&1 | grep -v -i warn | tee -a $OUT/runE-prof-bwd.txt
timeout 200 python benchmarks/bench_window_attention.py --configs 1,3 --out $OUT/runE-bench.json > $OUT/runE-bench.log 2>&1
tail -12 $OUT/runE-bench.log
timeout 220 python -m pytest -q tests/test_dropout.py tests/test_lifecycle.py tests/test_extremes.py tests/test_random_problems.py > $OUT/runE-pytest-suites.txt 2>&1; echo "rc $?" >> $OUT/runE-pytest-suites.txt
tail -3 $OUT/runE-pytest-suites.txt
