#!/usr/bin/env bash
# Session 42 run J (s42h's kernels): the window subprocess tests; swinv2_base_window12_192 (N = 144)
# bs 64 swapped, inference and training step GPU time, s41e / s42h (tools/model_profile.py).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s41e_so/_C.abi3.so.xz /tmp/s41e.so
python tools/device/unxz.py tools/device/s42h_so/_C.abi3.so.xz /tmp/s42h.so
cp /tmp/s42h.so flash_window_attn/_C.abi3.so
timeout 390 python -m pytest -q -m cuda tests/test_window_attention.py -k subprocess > $OUT/runJ-sub.txt 2>&1; echo "rc $?" >> $OUT/runJ-sub.txt
tail -n 3 $OUT/runJ-sub.txt
echo "tests done $(( $(date +%s) - t0 )) s"
for b in s41e s42h; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  for mode in infer train; do
    echo "== $b $mode"
    timeout 100 python tools/model_profile.py --model swinv2_base_window12_192 --variants swap --mode $mode --steps 5 --top 3 2>&1 | grep -v Warning | grep "GPU time per step"
  done
done | tee $OUT/runJ-model.txt
grep -h -E "^FAILED|^ERROR" $OUT/runJ-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
