#!/usr/bin/env bash
# Session 40 run B: build s40b (main + two experiment switches in launch_fwd_wgmma: FWA_FWD_CARVEOUT_EXP
# sets the largest shared-memory carveout on the N = 144 main and row-tail kernels, so that a
# row-tail CTA can share an SM with a 3-warpgroup main CTA; FWA_ROW_TAIL_CTAS sizes the row tail's
# grid for that many CTAs per SM). Forward at N = 144 (config 3) under each combination.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runB-build.txt 2>&1 || { tail -30 $OUT/runB-build.txt; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
strip --strip-all -o /tmp/x.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/x.so > $OUT/s40b.so.xz
run() { label=$1; shift; env "$@" python benchmarks/results/session37/fwd_ab.py $label 3 2>&1 | grep -v -i warn; }
for r in 1 2; do
  run plan
  run wg3-carve FWA_FWD_WG=3 FWA_FWD_CARVEOUT_EXP=1
  run wg3-carve-t1 FWA_FWD_WG=3 FWA_FWD_CARVEOUT_EXP=1 FWA_ROW_TAIL_CTAS=1
  run wg3-carve-t2 FWA_FWD_WG=3 FWA_FWD_CARVEOUT_EXP=1 FWA_ROW_TAIL_CTAS=2
  run plan-carve FWA_FWD_CARVEOUT_EXP=1
done | tee $OUT/runB-fwd.txt
for c in "wg3-carve FWA_FWD_WG=3 FWA_FWD_CARVEOUT_EXP=1" "wg3-carve-t1 FWA_FWD_WG=3 FWA_FWD_CARVEOUT_EXP=1 FWA_ROW_TAIL_CTAS=1"; do
  set -- $c; label=$1; shift
  env "$@" python benchmarks/results/session39/timeline.py $label 3 2>&1 | grep -v -i warn
done | tee $OUT/runB-timeline.txt
echo "total $(( $(date +%s) - t0 )) s"
