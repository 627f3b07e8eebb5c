#!/usr/bin/env bash
# Session 33 run C: build s33c = main (s32m) + on wgmma (d <= 32) the backward's key-side kernel
# computes the preprocess's row statistics (D; V2: the inverse norms of q and k) from its tiles
# and an out tile while its first two products run; no preprocess launch there. window_bitwise
# s32m vs s33c, the kernels' time per step at bench configs 1-4 (bf16) on both builds, and the
# CUDA tests of the tiled backward.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runC-bitwise.txt 2>&1
python $R/prof_kernels.py s32m 1 2 3 4 > $OUT/runC-prof.txt 2>&1
python tools/device/unxz.py tools/device/s33c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runC-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runC-bitwise.txt
tail -2 $OUT/runC-bitwise.txt
python $R/prof_kernels.py s33c 1 2 3 4 >> $OUT/runC-prof.txt 2>&1
grep -E "preprocess|kv_kernel|sum of" $OUT/runC-prof.txt
timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py -k "tiled_backward or many_windows or clustered or n1024 or deterministic or all_masked or global_dbias or key_ranges or backward_memory or grid_cuda or dropout" > $OUT/runC-pytest.txt 2>&1; echo "rc $?" >> $OUT/runC-pytest.txt
tail -2 $OUT/runC-pytest.txt
