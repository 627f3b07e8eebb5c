#!/usr/bin/env bash
# Session 37 run A: build s37a = main + the forward's qk_inv_norm result (V2's inverse norms of q
# and k, written by the forward kernels) handed back to the backward, whose preprocess then reads
# out and dout only. The CUDA suites touched (new test file, ops / compile / errors / dropout /
# packed; the window suite; extremes / random / modules) in 3 processes; the .so saved for run B.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runA-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runA-build.txt
grep -E " error|error:" $OUT/runA-build.txt | head -20
strip --strip-all -o /tmp/s37a.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s37a.so > $OUT/s37a.so.xz
(timeout 420 python -m pytest -q -m cuda tests/test_qk_inv_norm.py tests/test_compile_opcheck.py tests/test_errors.py tests/test_dropout.py tests/test_qkvpacked.py tests/test_extremes.py > $OUT/runA-ops.txt 2>&1; echo "rc $?" >> $OUT/runA-ops.txt) &
(timeout 440 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runA-window.txt 2>&1; echo "rc $?" >> $OUT/runA-window.txt) &
(timeout 420 python -m pytest -q -m cuda tests/test_random_problems.py tests/test_modules.py tests/test_swap.py tests/test_cpb.py tests/test_lifecycle.py > $OUT/runA-modules.txt 2>&1; echo "rc $?" >> $OUT/runA-modules.txt) &
wait
for f in $OUT/runA-ops.txt $OUT/runA-window.txt $OUT/runA-modules.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR" $OUT/runA-*.txt | head -20
echo "total $(( $(date +%s) - t0 )) s"
