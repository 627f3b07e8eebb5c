#!/usr/bin/env bash
# Session 40 run A (s39j's kernels: the window op unchanged since s38h, the sliding kernels = main's):
# (1) the N = 144 forward with the main grid at 3 warpgroups per CTA (FWA_FWD_WG=3: 48K registers,
#     140 KB) so that one row-tail CTA (128 registers x 128 threads, 62 KB) fits beside it on every
#     SM from the start, against the plan (4 warpgroups, the row tail after the main grid);
# (2) session 39's untested items: the wide-block-band test through every warp-specialised
#     kernel, and compute-sanitizer over the local family with the deferred dq (FWA_LOCAL_BWD_Q_WS=1).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39j_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do
  python benchmarks/results/session37/fwd_ab.py plan 3 2>&1 | grep -v -i warn
  FWA_FWD_WG=3 python benchmarks/results/session37/fwd_ab.py wg3 3 2>&1 | grep -v -i warn
done | tee $OUT/runA-fwd.txt
python benchmarks/results/session39/timeline.py plan 3 2>&1 | grep -v -i warn | tee $OUT/runA-timeline.txt
FWA_FWD_WG=3 python benchmarks/results/session39/timeline.py wg3 3 2>&1 | grep -v -i warn | tee -a $OUT/runA-timeline.txt
echo "fwd/timeline done $(( $(date +%s) - t0 )) s"
timeout 330 python -m pytest -q -m cuda tests/test_local_attention.py -k wide_block -x 2>&1 | tail -5 | tee $OUT/runA-wide.txt
echo "wide done $(( $(date +%s) - t0 )) s"
FWA_LOCAL_BWD_Q_WS=1 FWA_LOCAL_FWD_WS=1 SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 300 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runA-san.txt 2>&1
echo "rc $?" >> $OUT/runA-san.txt
tail -6 $OUT/runA-san.txt
echo "total $(( $(date +%s) - t0 )) s"
