#!/usr/bin/env bash
# Session 28 run E (s28a's build: no zero-filled lse / rng_state gradients, the exact-D workspace
# memset): the CUDA suites whose autograd paths the change touches (packed qkv, dropout, compile /
# opcheck, modules, swap, window, local).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 280 python -m pytest -q -m cuda tests/test_qkvpacked.py tests/test_dropout.py tests/test_compile_opcheck.py tests/test_modules.py tests/test_swap.py tests/test_cpb.py 2>&1 | tail -4 > $OUT/tests1.txt
cat $OUT/tests1.txt
timeout 250 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_local_attention.py -x 2>&1 | tail -4 > $OUT/tests2.txt
cat $OUT/tests2.txt
