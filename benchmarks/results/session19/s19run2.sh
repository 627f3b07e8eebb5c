#!/usr/bin/env bash
# session 19 run 2: build b: profile the (256,12,64) fwd+bwd anomaly; full window CUDA suites + modules/swap/lifecycle.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for S in 0 1; do FWA_WINDOW_WGMMA_SMALL=$S timeout 60 python tools/device/s19prof.py small$S 6 2>&1 | grep "^\[" | tee -a $OUT/summary.txt; done
FWA_WINDOW_WGMMA_SMALL=1 timeout 60 python tools/device/s19prof.py small1 0 2>&1 | grep "^\[" | tee -a $OUT/summary.txt
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_extremes.py tests/test_qkvpacked.py tests/test_dropout.py tests/test_random_problems.py tests/test_compile_opcheck.py -x 2>&1 | tail -5 | tee -a $OUT/summary.txt
timeout 200 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_lifecycle.py tests/test_cpb.py 2>&1 | tail -5 | tee -a $OUT/summary.txt
