#!/usr/bin/env bash
# Session 41 run C (s41a's build, carried): the refactored row-tail kernel's forward at N = 80 and
# 72 (Npad 128, not folded) and config 3 again, s40g / s41a, 2 rounds; the two subprocess tests
# that failed in run B (the narrow-last-block bitwise test now with FWA_WINDOW_ROW_TAIL_FOLD=0 in
# both runs; the tiled backward at N <= 64, whose child printed ok and then aborted at exit);
# bench_window_attention config 3 with every peer (JSON / PNG / log).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/base.so
python tools/device/unxz.py tools/device/s41a_so/_C.abi3.so.xz /tmp/new.so
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session41/fwd_any_n.py $b 1024,4,80,32,16 1024,4,72,32,16 2>&1 | grep -v -i warn
  python benchmarks/results/session37/fwd_ab.py $b 3 2>&1 | grep -v -i warn
done; done | tee $OUT/runC-fwd.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "timing done $(( $(date +%s) - t0 )) s"
timeout 400 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/window-session41-config3.json > $OUT/window-session41-config3.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
tail -16 $OUT/window-session41-config3.log
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "narrow_last_block or tiled_backward_for_small" > $OUT/runC-sub.txt 2>&1; echo "rc $?" >> $OUT/runC-sub.txt
tail -n 4 $OUT/runC-sub.txt
grep -h -E "^FAILED|^ERROR" $OUT/runC-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
