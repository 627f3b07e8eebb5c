#!/usr/bin/env bash
# Session 37 run C: build s37c = run A's kernels + the forwards' return_inv_norms flag (the norms are
# written only where asked: the autograd kernels ask where a backward follows). Tests of the op
# layer; the SIGSEGV probe (s36g and s37c); forward alone s36g / s37c; graph step GIVEN_NORMS 0 / 1.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runC-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runC-build.txt
grep -E " error|error:" $OUT/runC-build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/s37c.so
strip --strip-all -o /tmp/s37c_s.so /tmp/s37c.so && xz -T8 -3 -c /tmp/s37c_s.so > $OUT/s37c.so.xz
python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz /tmp/s36g.so
(timeout 300 python -m pytest -q -m cuda tests/test_qk_inv_norm.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_qkvpacked.py > $OUT/runC-ops.txt 2>&1; echo "rc $?" >> $OUT/runC-ops.txt) &
(timeout 300 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_extremes.py -x > $OUT/runC-modules.txt 2>&1; echo "rc $?" >> $OUT/runC-modules.txt) &
wait
for f in $OUT/runC-ops.txt $OUT/runC-modules.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runC-*.txt | head -10
for b in s36g s37c; do echo "== $b"; cp /tmp/$b.so flash_window_attn/_C.abi3.so; python benchmarks/results/session37/segv_probe.py; done 2>&1 | tee $OUT/runC-segv.txt
F=benchmarks/results/session37/fwd_ab.py
for round in 1 2; do
  for b in s36g s37c; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python $F $b 3 0 256,6,196,32,4,14,v2 2>&1 | grep -v -i warn
  done
done | tee $OUT/runC-fwd.txt
cp /tmp/s37c.so flash_window_attn/_C.abi3.so
for e in FWA_WINDOW_GIVEN_NORMS=0 FWA_WINDOW_GIVEN_NORMS=1; do
  env $e python benchmarks/results/session36/graph_ab.py $e 3 1 2>&1 | grep -v -i warn
done | tee $OUT/runC-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
