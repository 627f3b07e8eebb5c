#!/usr/bin/env bash
# Session 59 run A: (1) session 58's build (s58b, carried) under stress.py (memory reuse between
# calls; the test's call / float64 reference / call order) and the two repeatability tests, three
# times; (2) where any of that differed, the diagnostic patch (the residual-D query side waits
# before reading D) is applied; the working tree (LocalFwdParams::norm16 set by the ops layer from
# local_out_lo_wanted) is built and run through the same, then the norm16 / out_lo / residual-D tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runA.txt) 2>&1
source benchmarks/results/device_steps.sh
S=benchmarks/results/session59/stress.py
stress_and_tests() {
    timeout 100 python $S 600 fill 2>&1 | grep -v -i warn
    timeout 100 python $S 40 ref64 2>&1 | grep -v -i warn
    for r in 1 2 3; do
        timeout 60 python -m pytest -q -m cuda tests/test_local_attention.py -k "residual_d_backward or memory_reuse" 2>&1 | tail -1
    done
}
fwa_unpack .devbuild/s58b.so.xz flash_window_attn/_C.abi3.so
stress_and_tests | tee /tmp/base.txt
echo "base done $(( $(date +%s) - t0 )) s"
if grep -q -E "': \(|failed" /tmp/base.txt; then
    git apply tools/patches/local-bwd-q-ws-residual-wait-first-DIAGNOSTIC-UNTESTED.patch && echo "APPLIED the diagnostic patch"
fi
fwa_build s59a A
stress_and_tests
echo "new stress done $(( $(date +%s) - t0 )) s"
left=$(( 585 - ($(date +%s) - t0) ))
timeout $left python -m pytest -q -m cuda tests/test_local_attention.py -k "norm16 or fwd_res or residual_d or out_lo or memory_reuse or compile_dynamic" > $OUT/runA-tests.txt 2>&1
tail -3 $OUT/runA-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
