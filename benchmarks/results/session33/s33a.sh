#!/usr/bin/env bash
# Session 33 run A: build s33a = main (s32m) + the backward preprocess with 4 rows per thread and
# every load issued before any arithmetic (not kept: no gain, the kernel is DRAM-bound).
# window_bitwise s32m vs s33a, the kernels' time per step at bench configs 1-4 (bf16) on both
# builds, and the CUDA tests of the tiled backward.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runA-bitwise.txt 2>&1
python $R/prof_kernels.py s32m 1 2 3 4 > $OUT/runA-prof.txt 2>&1
python tools/device/unxz.py tools/device/s33a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runA-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runA-bitwise.txt
tail -2 $OUT/runA-bitwise.txt
python $R/prof_kernels.py s33a 1 2 3 4 >> $OUT/runA-prof.txt 2>&1
grep -E "preprocess|sum of" $OUT/runA-prof.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "tiled_backward or many_windows or clustered or n1024 or deterministic or all_masked or global_dbias or key_ranges or backward_memory or (grid_cuda and (144 or 100))" > $OUT/runA-pytest.txt 2>&1; echo "rc $?" >> $OUT/runA-pytest.txt
tail -2 $OUT/runA-pytest.txt
