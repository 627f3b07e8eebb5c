#!/usr/bin/env bash
# session 22 run C: per-kernel A/B of the small-window backward (base / small3 / small3pdl), the WS prototype, local CUDA suite on grp
export PYTHONPATH=$PWD
for B in base grp small3 small3pdl; do python tools/device/unxz.py tools/device/${B}_so/_C.abi3.so.xz /tmp/$B.so; done
use() { cp /tmp/$1.so flash_window_attn/_C.abi3.so; }
for r in 1 2; do for B in base small3 small3pdl; do use $B
timeout 60 python tools/kernel_breakdown.py --configs 0,6,8,7 > $OUT/kb_${B}_$r.txt 2>&1
echo "== $B round $r" | tee -a $OUT/summary.txt; grep -vE "^\s*$" $OUT/kb_${B}_$r.txt | grep -E "==|bwd|build|reduce|fwd|total" | cut -c1-100 | tee -a $OUT/summary.txt
done; done
for b in proto3 ws4 ws3 wsn; do echo "== $b"; timeout 30 tools/device/proto/$b 6144 2>&1 | tail -4; done 2>&1 | tee -a $OUT/summary.txt
use grp; cp tools/device/grp_tests/test_local_attention.py tests/test_local_attention.py
timeout 240 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -3 | tee -a $OUT/summary.txt
