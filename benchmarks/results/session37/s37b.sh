#!/usr/bin/env bash
# Session 37 run B (no build): s37a's .so (run A) and s36g's (session 36 run G: main's forward
# kernels before this session), carried under tools/device. (1) The CUDA suites run A's crashed
# process left: test_errors alone under faulthandler, then dropout / packed / extremes. (2) Graph
# step, FWA_WINDOW_GIVEN_NORMS=0 / default, 2 rounds; the preprocess kernel time. (3) The forward
# alone, s36g / s37a, 2 rounds.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s37a_so/_C.abi3.so.xz /tmp/s37a.so
python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz /tmp/s36g.so
cp /tmp/s37a.so flash_window_attn/_C.abi3.so
(timeout 200 python -X faulthandler -m pytest -q -m cuda tests/test_errors.py > $OUT/runB-errors.txt 2>&1; echo "rc $?" >> $OUT/runB-errors.txt) &
(timeout 240 python -m pytest -q -m cuda tests/test_dropout.py tests/test_qkvpacked.py tests/test_extremes.py > $OUT/runB-ops.txt 2>&1; echo "rc $?" >> $OUT/runB-ops.txt) &
wait
for f in $OUT/runB-errors.txt $OUT/runB-ops.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runB-*.txt | head -10
G=benchmarks/results/session36/graph_ab.py
for round in 1 2; do
  for e in FWA_WINDOW_GIVEN_NORMS=0 FWA_WINDOW_GIVEN_NORMS=1; do
    env $e python $G $e 3 1 4 256,6,196,32,4,14,v2 2>&1 | grep -v -i warn
  done
done | tee $OUT/runB-graph.txt
for e in FWA_WINDOW_GIVEN_NORMS=0 FWA_WINDOW_GIVEN_NORMS=1; do
  env $e python benchmarks/results/session33/prof_kernels.py $e 3 1 2>&1 | grep -v -i warn | grep -E "preprocess|sum of"
done | tee $OUT/runB-prof.txt
F=benchmarks/results/session37/fwd_ab.py
for round in 1 2; do
  for b in s36g s37a; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python $F $b 3 1 4 0 256,6,196,32,4,14,v2 2>&1 | grep -v -i warn
  done
done | tee $OUT/runB-fwd.txt
cp /tmp/s37a.so flash_window_attn/_C.abi3.so
