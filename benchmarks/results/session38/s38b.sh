#!/usr/bin/env bash
# Session 38 run B: s38a (run A's build, carried) under the CUDA suites: the window suite in two
# processes (subprocess tests / the rest), the op layer (inverse norms, errors, compile / opcheck,
# dropout, packed, lifecycle), modules / swap / extremes / random problems.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s38a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
(timeout 520 python -m pytest -q -m cuda tests/test_window_attention.py -k "subprocess" > $OUT/runB-window-sub.txt 2>&1; echo "rc $?" >> $OUT/runB-window-sub.txt) &
(timeout 520 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runB-window.txt 2>&1; echo "rc $?" >> $OUT/runB-window.txt) &
(timeout 520 python -X faulthandler -m pytest -q -m cuda tests/test_qk_inv_norm.py tests/test_errors.py tests/test_compile_opcheck.py tests/test_dropout.py tests/test_qkvpacked.py tests/test_lifecycle.py > $OUT/runB-ops.txt 2>&1; echo "rc $?" >> $OUT/runB-ops.txt;
 timeout 300 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runB-extremes.txt 2>&1; echo "rc $?" >> $OUT/runB-extremes.txt) &
(timeout 520 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runB-modules.txt 2>&1; echo "rc $?" >> $OUT/runB-modules.txt) &
wait
for f in $OUT/runB-*.txt; do echo "== $f"; grep -E "passed|failed|error|rc " $f | tail -3; done
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runB-*.txt | head -20
echo "total $(( $(date +%s) - t0 )) s"
