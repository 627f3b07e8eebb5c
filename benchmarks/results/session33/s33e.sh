#!/usr/bin/env bash
# Session 33 run E: build s33e = main + the wgmma forward builds its bias+mask rows from the bias
# and mask tensors (no bm build launch in the forward; FWA_WINDOW_FWD_DIRECT_BM=0 restores it).
# window_bitwise s32m vs s33e, op forward A/B (2 rounds), kernel times per fwd+bwd step, and the
# window-op CUDA suites in 3 concurrent processes.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session33
python tools/device/unxz.py tools/device/s32m_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runE-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s33e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runE-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runE-bitwise.txt
tail -2 $OUT/runE-bitwise.txt
for round in 1 2; do
  FWA_WINDOW_FWD_DIRECT_BM=0 python $R/fwd_direct_ab.py build$round 2>&1 | grep -v Warn | tee -a $OUT/runE-fwd-ab.txt
  python $R/fwd_direct_ab.py direct$round 2>&1 | grep -v Warn | tee -a $OUT/runE-fwd-ab.txt
done
python $R/prof_kernels.py s33e 1 3 > $OUT/runE-prof.txt 2>&1
grep -E "bm_kernel|wgmma_kernel|row_tail|sum of" $OUT/runE-prof.txt
(timeout 400 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runE-window.txt 2>&1; echo "rc $?" >> $OUT/runE-window.txt) &
(timeout 400 python -m pytest -q -m cuda tests/test_extremes.py tests/test_qkvpacked.py tests/test_random_problems.py > $OUT/runE-extremes.txt 2>&1; echo "rc $?" >> $OUT/runE-extremes.txt) &
(timeout 400 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_lifecycle.py > $OUT/runE-modules.txt 2>&1; echo "rc $?" >> $OUT/runE-modules.txt) &
wait
for f in $OUT/runE-window.txt $OUT/runE-extremes.txt $OUT/runE-modules.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
