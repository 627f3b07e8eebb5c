#!/usr/bin/env bash
# Session 39 run L (experiment): build s39l = main + FWA_LOCAL_FWD_WS_D64=64, the d = 64
# warp-specialised forward in 64-key steps with the deferred P v (offline: no spill, no C75xx;
# the default d = 64 kernel's SASS unchanged). Forward kernel times A/B (configs 0, 4; 2 rounds),
# then the every-grid subprocess test and the random problems with it.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runL-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
for r in 1 2; do for e in "X=1" "FWA_LOCAL_FWD_WS_D64=64"; do
  echo "== round $r $e"
  env $e timeout 60 python tools/local_breakdown.py --configs 0,4 --impls ours 2>&1 | grep -E "==|fwd"
done; done 2>&1 | tee $OUT/runL-kb.txt
export FWA_LOCAL_FWD_WS_D64=64
(timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py -k "ws_fwd_every_grid" > $OUT/runL-sub.txt 2>&1; echo "rc $?" >> $OUT/runL-sub.txt) &
(FWA_LOCAL_FWD_WS=1 timeout 200 python -m pytest -q -m cuda tests/test_local_random.py > $OUT/runL-random.txt 2>&1; echo "rc $?" >> $OUT/runL-random.txt) &
wait
for f in $OUT/runL-sub.txt $OUT/runL-random.txt; do echo "== $f"; tail -2 $f; done
echo "total $(( $(date +%s) - t0 )) s"
