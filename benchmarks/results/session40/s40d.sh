#!/usr/bin/env bash
# Session 40 run D (diagnostic, not kept): build s40d = main with FWA_DIAG_NO_PDP in the
# warp-specialised key side (no per-step column sums of P dP, no group barrier per step, no
# fixed-point flush: dq is WRONG in this build). Kernel times against s39j (main's kernels): what the
# exact D costs the key side now, the lever of the forward-residual D (session 11's option 2).
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runD-build.txt 2>&1 || { tail -30 $OUT/runD-build.txt; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
cp flash_window_attn/_C.abi3.so /tmp/diag.so
python tools/device/unxz.py tools/device/s39j_so/_C.abi3.so.xz /tmp/base.so
for r in 1 2; do
  for b in base diag; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    echo "== round $r $b"
    python tools/local_breakdown.py --configs 0,4,2 --impls ours 2>&1 | grep -E "==|local_attn|Memset"
  done
done | tee $OUT/runD-kb.txt
echo "total $(( $(date +%s) - t0 )) s"
