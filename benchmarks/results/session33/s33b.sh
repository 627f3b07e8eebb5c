#!/usr/bin/env bash
# Session 33 run B: build s33b = main (s32m) + V2's inverse norms of q and k computed by the
# backward's key-side kernel from its tiles (the preprocess reads out and dout only).
# window_bitwise s32m vs s33b, the kernels' time per step at bench configs 1-4 (bf16) on both
# builds, and the CUDA tests of the tiled backward.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runB-bitwise.txt 2>&1
python $R/prof_kernels.py s32m 1 2 3 4 > $OUT/runB-prof.txt 2>&1
python tools/device/unxz.py tools/device/s33b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runB-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runB-bitwise.txt
tail -2 $OUT/runB-bitwise.txt
python $R/prof_kernels.py s33b 1 2 3 4 >> $OUT/runB-prof.txt 2>&1
grep -E "preprocess|kv_kernel|sum of" $OUT/runB-prof.txt
timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py -k "tiled_backward or many_windows or clustered or n1024 or deterministic or all_masked or global_dbias or key_ranges or backward_memory or grid_cuda or dropout" > $OUT/runB-pytest.txt 2>&1; echo "rc $?" >> $OUT/runB-pytest.txt
tail -2 $OUT/runB-pytest.txt
