#!/usr/bin/env bash
# Session 37 run E: build s37e = run C's kernels + setup.py linking the libstdc++.so.6 torch loaded
# (the device's GCC bundle linked libstdc++ statically: the SIGSEGV of runs A-D). Its NEEDED
# entries; the CUDA error tests; the window suite and the op-layer tests; the .so saved for run F.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runE-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runE-build.txt
grep -E " error|error:" $OUT/runE-build.txt | head -20
readelf -d flash_window_attn/_C.abi3.so | grep NEEDED | tee $OUT/runE-needed.txt
strip --strip-all -o /tmp/s37e.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s37e.so > $OUT/s37e.so.xz
python benchmarks/results/session37/segv_gdb.py 2>&1 | tail -3 | cut -c1-300 | tee $OUT/runE-segv.txt
(timeout 200 python -X faulthandler -m pytest -q -m cuda tests/test_errors.py tests/test_qk_inv_norm.py > $OUT/runE-errors.txt 2>&1; echo "rc $?" >> $OUT/runE-errors.txt) &
(timeout 450 python -m pytest -q -m cuda tests/test_window_attention.py > $OUT/runE-window.txt 2>&1; echo "rc $?" >> $OUT/runE-window.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_compile_opcheck.py tests/test_dropout.py tests/test_qkvpacked.py tests/test_lifecycle.py > $OUT/runE-ops.txt 2>&1; echo "rc $?" >> $OUT/runE-ops.txt) &
wait
for f in $OUT/runE-errors.txt $OUT/runE-window.txt $OUT/runE-ops.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runE-*.txt | head -20
echo "total $(( $(date +%s) - t0 )) s"
