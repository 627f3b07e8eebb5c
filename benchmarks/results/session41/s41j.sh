#!/usr/bin/env bash
# Session 41 run J (experiment, not kept; the working tree had an FWA_FWD_STAGGER_NS switch: odd
# warpgroups of the wgmma forward's CTAs __nanosleep before their window loop, so that co-resident
# warpgroups do not start their phases in lockstep). Build; forward at configs 1, 2 (N = 256),
# 3 (N = 144, the fold) and 0 (Npad 64) with 0 / 800 / 2000 ns, 2 rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runJ-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
for r in 1 2; do for ns in 0 800 2000; do
  FWA_FWD_STAGGER_NS=$ns python benchmarks/results/session37/fwd_ab.py stagger$ns 1 2 3 0 2>&1 | grep -v -i warn
done; done | tee $OUT/runJ-fwd.txt
echo "total $(( $(date +%s) - t0 )) s"
