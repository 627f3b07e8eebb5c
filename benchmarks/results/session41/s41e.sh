#!/usr/bin/env bash
# Session 41 run E: build s41e = s41d with the folded row tail's windows staggered between a CTA's
# warpgroups ((ti + group) % num_m_blocks == m_block; 124 registers, no spill). Window bitwise
# against s41d (the same arithmetic per window: must be equal); forward A/B s40g / s41d / s41e at
# config 3 and V1 (1024, 4, 144), 2 rounds; the timeline; the row-tail tests alone.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > /tmp/build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee $OUT/runE-build.txt
grep -E " error|error:" /tmp/build.txt | head -20
cp flash_window_attn/_C.abi3.so /tmp/new.so
strip --strip-all -o /tmp/new_s.so /tmp/new.so && xz -T8 -3 -c /tmp/new_s.so > $OUT/s41e.so.xz
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz /tmp/base.so
python tools/device/unxz.py tools/device/s41d_so/_C.abi3.so.xz /tmp/s41d.so
cp /tmp/s41d.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py save /tmp/wref.pt > /dev/null 2>&1
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 120 python tools/window_bitwise.py cmp /tmp/wref.pt 2>&1 | grep -v -i warn | tail -4 | tee $OUT/runE-bitwise.txt
for r in 1 2; do for b in base s41d new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  python benchmarks/results/session37/fwd_ab.py $b 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done; done | tee $OUT/runE-fwd.txt
cp /tmp/new.so flash_window_attn/_C.abi3.so
python benchmarks/results/session39/timeline.py s41e 3 2>&1 | grep -v -i warn | tee $OUT/runE-timeline.txt
echo "timing done $(( $(date +%s) - t0 )) s"
timeout 300 python -m pytest -q -m cuda tests/test_window_attention.py -k "row_tail" > $OUT/runE-rowtail.txt 2>&1; echo "rc $?" >> $OUT/runE-rowtail.txt
tail -n 3 $OUT/runE-rowtail.txt
grep -h -E "^FAILED|^ERROR" $OUT/runE-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
