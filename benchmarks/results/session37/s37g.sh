#!/usr/bin/env bash
# Session 37 run G: build s37g = run E + the autograd kernels asking for the norms only where the
# backward reads them (CUDA, 16-bit, N > 64; a symbolic N asks). CUDA op-layer / compile tests;
# graph step s36g / s37g at (4096, 3, 64) (N <= 64: no norms now) and (512, 4, 144), 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runG-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runG-build.txt
grep -E " error|error:" $OUT/runG-build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/s37g.so
python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz /tmp/s36g.so
(timeout 300 python -m pytest -q -m cuda tests/test_qk_inv_norm.py tests/test_compile_opcheck.py tests/test_errors.py tests/test_qkvpacked.py tests/test_dropout.py > $OUT/runG-ops.txt 2>&1; echo "rc $?" >> $OUT/runG-ops.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_lifecycle.py > $OUT/runG-modules.txt 2>&1; echo "rc $?" >> $OUT/runG-modules.txt) &
wait
for f in $OUT/runG-ops.txt $OUT/runG-modules.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runG-*.txt | head -20
for r in 1 2; do
  for b in s36g s37g; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python benchmarks/results/session36/graph_ab.py $b 0 3 2>&1 | grep -v -i warn
  done
done | tee $OUT/runG-graph.txt
cp /tmp/s37g.so flash_window_attn/_C.abi3.so
echo "total $(( $(date +%s) - t0 )) s"
