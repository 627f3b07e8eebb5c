#!/usr/bin/env bash
# Session 41 run B (s41a's build, carried): forward A/B s40g / s41a at N = 80 (Npad 128: the
# refactored row-tail kernel) and config 3 (the folded row tail), 2 rounds; then in parallel:
# compute-sanitizer memcheck / racecheck / synccheck over the window family (its N = 144 d = 24
# problem runs the folded row tail), the window suite (subprocess tests included), extremes /
# random problems, modules / swap / CPB.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/base.so
python tools/device/unxz.py tools/device/s41a_so/_C.abi3.so.xz /tmp/new.so
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session37/fwd_ab.py $b 3 1024,4,80,32,16,9,v2 2>&1 | grep -v -i warn
done; done | tee $OUT/runB-fwd.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "timing done $(( $(date +%s) - t0 )) s"
(SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family window" timeout 500 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runB-san.txt 2>&1; echo "rc $?" >> $OUT/runB-san.txt) &
(timeout 520 python -m pytest -q -m cuda tests/test_window_attention.py -k subprocess > $OUT/runB-sub.txt 2>&1; echo "rc $?" >> $OUT/runB-sub.txt) &
(timeout 520 python -m pytest -q -m cuda tests/test_window_attention.py -k "not subprocess" > $OUT/runB-window.txt 2>&1; echo "rc $?" >> $OUT/runB-window.txt) &
(timeout 500 python -m pytest -q -m cuda tests/test_extremes.py tests/test_random_problems.py > $OUT/runB-extremes.txt 2>&1; echo "rc $?" >> $OUT/runB-extremes.txt) &
(timeout 500 python -m pytest -q -m cuda tests/test_modules.py tests/test_swap.py tests/test_cpb.py > $OUT/runB-modules.txt 2>&1; echo "rc $?" >> $OUT/runB-modules.txt) &
wait
rm -rf $OUT/san/*.log.big 2>/dev/null
for f in $OUT/runB-san.txt $OUT/runB-sub.txt $OUT/runB-window.txt $OUT/runB-extremes.txt $OUT/runB-modules.txt; do echo "== $f"; tail -n 4 $f; done
grep -h -E "^FAILED|^ERROR" $OUT/runB-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
