#!/usr/bin/env bash
# Session 38 run A: build s38a = main 7104968 (the wgmma forward's key-norm copy loop not unrolled)
# + the wgmma forward at head dims 33..64 and N <= 64 (128-byte rows). The wgmma-forward tests
# (float64 checks, every warpgroup count; the d = 64 cases among them); forward alone s37e / s38a;
# the d = 64 form against FWA_WINDOW_WGMMA_HD64=0; the benchmark's d = 64 row with every peer.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runA-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runA-build.txt
grep -E " error|error:" $OUT/runA-build.txt | head -20
readelf -d flash_window_attn/_C.abi3.so | grep -c "libstdc++" | sed 's/^/libstdc++ NEEDED entries: /'
cp flash_window_attn/_C.abi3.so /tmp/s38a.so
strip --strip-all -o /tmp/s38a_s.so /tmp/s38a.so && xz -T8 -3 -c /tmp/s38a_s.so > $OUT/s38a.so.xz
python tools/device/unxz.py tools/device/s37e_so/_C.abi3.so.xz /tmp/s37e.so
timeout 240 python -m pytest -q -m cuda tests/test_window_attention.py -k "wgmma_forward_in_subprocess or mma_sync_forward_at_wgmma or narrow_last_block" > $OUT/runA-tests.txt 2>&1; echo "rc $?" >> $OUT/runA-tests.txt
grep -E "passed|failed|error|rc " $OUT/runA-tests.txt | tail -3
grep -h -E "^FAILED|^ERROR|Fatal" $OUT/runA-tests.txt | head -10
F=benchmarks/results/session37/fwd_ab.py
for round in 1 2; do
  for b in s37e s38a; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    python $F $b 8 0 1 3 256,6,196,32,4,14,v2 2>&1 | grep -v -i warn
  done
  FWA_WINDOW_WGMMA_HD64=0 python $F s38a-HD64=0 8 256,4,49,64,4,7,v2 2>&1 | grep -v -i warn
  python $F s38a 256,4,49,64,4,7,v2 2>&1 | grep -v -i warn
done | tee $OUT/runA-fwd.txt
cp /tmp/s38a.so flash_window_attn/_C.abi3.so
timeout 200 python benchmarks/bench_window_attention.py --configs 8 --out $OUT/runA-bench8.json > $OUT/runA-bench8.log 2>&1
tail -25 $OUT/runA-bench8.log
echo "total $(( $(date +%s) - t0 )) s"
