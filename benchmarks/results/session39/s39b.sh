#!/usr/bin/env bash
# Session 39 run B: build s39b = main + the warp-specialised sliding forward with each step's P v
# deferred to the next computed step (issued with its S, running during its softmax; 3 k / v
# stages; FWA_LOCAL_FWD_WS_DEFER=0 keeps the previous kernel, 2 stages). Bitwise against the
# undeferred kernel (default grids and FWA_LOCAL_FWD_WS=1 on every grid), then forward kernel times
# A/B (local_breakdown, configs 0 block256x16, 4 causal, 2 win(1024,0), 3 win(4096,0); 2 rounds).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runB-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
strip --strip-all -o /tmp/s39b_s.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s39b_s.so > $OUT/s39b.so.xz
for g in default every; do
  E=""; [ $g = every ] && E="FWA_LOCAL_FWD_WS=1"
  env $E FWA_LOCAL_FWD_WS_DEFER=0 timeout 100 python tools/local_bitwise.py save /tmp/ref_$g.pt > /dev/null 2>&1
  echo "== grid $g: DEFER default vs 0"
  env $E timeout 100 python tools/local_bitwise.py cmp /tmp/ref_$g.pt 2>&1 | grep -v -i warn | tail -4; echo "rc $?"
done | tee $OUT/runB-bitwise.txt
for r in 1 2; do for e in "FWA_LOCAL_FWD_WS_DEFER=0" "X=1"; do
  echo "== round $r $e"
  env $e timeout 100 python tools/local_breakdown.py --configs 0,4,2,3 --impls ours 2>&1 | grep -E "==|fwd"
done; done 2>&1 | tee $OUT/runB-kb.txt
echo "total $(( $(date +%s) - t0 )) s"
