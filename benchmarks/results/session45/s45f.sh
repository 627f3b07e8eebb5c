#!/usr/bin/env bash
# Session 45 run F (H200): the final build: the new local PDL-chain bitwise test and the local
# subprocess tests of the other kernel forms.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s45f F
rm -f $OUT/s45f.so.xz
timeout 300 python -m pytest -q -m cuda tests/test_local_attention.py -k "pdl_chain or wide_block" > $OUT/runF-tests.txt 2>&1
tail -2 $OUT/runF-tests.txt
echo "end $(( $(date +%s) - t0 )) s"
