#!/usr/bin/env bash
# Session 41 run G (s41e, carried): the window suite's subprocess tests (run F's timeout cut them
# after 25 of 31), alone.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s41e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 560 python -m pytest -q -m cuda tests/test_window_attention.py -k subprocess > $OUT/runG-sub.txt 2>&1; echo "rc $?" >> $OUT/runG-sub.txt
tail -n 3 $OUT/runG-sub.txt
grep -h -E "^FAILED|^ERROR" $OUT/runG-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
