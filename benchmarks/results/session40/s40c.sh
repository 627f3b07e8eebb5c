#!/usr/bin/env bash
# Session 40 run C: build s40c = s40b + a 3-stage row-tail kernel (FWA_ROW_TAIL_STAGES=3: two
# windows' copies in flight per CTA; 128 registers by launch bounds (128, 4), 82 KB at N = 144).
# Forward at N = 144 (config 3): the plan against the co-resident form (main grid at 3 warpgroups,
# largest carveout, one 3-stage row-tail CTA per SM beside it).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runC-build.txt 2>&1 || { tail -30 $OUT/runC-build.txt; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
strip --strip-all -o /tmp/x.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/x.so > $OUT/s40c.so.xz
run() { label=$1; shift; env "$@" python benchmarks/results/session37/fwd_ab.py $label 3 2>&1 | grep -v -i warn; }
CO="FWA_FWD_WG=3 FWA_FWD_CARVEOUT_EXP=1 FWA_ROW_TAIL_STAGES=3"
for r in 1 2; do
  run plan
  run co-t1 $CO FWA_ROW_TAIL_CTAS=1
  run co-t3 $CO
  run plan-s3 FWA_ROW_TAIL_STAGES=3
done | tee $OUT/runC-fwd.txt
env $CO FWA_ROW_TAIL_CTAS=1 python benchmarks/results/session39/timeline.py co-t1 3 2>&1 | grep -v -i warn | tee $OUT/runC-timeline.txt
FWA_ROW_TAIL_STAGES=3 python benchmarks/results/session39/timeline.py plan-s3 3 2>&1 | grep -v -i warn | tee -a $OUT/runC-timeline.txt
echo "total $(( $(date +%s) - t0 )) s"
