"""Developer tools that read committed profiles (no GPU needed): tools/ncu_source_summary.py over
session 53's ncu source page of the d = 64 warp-specialised sliding forward."""
import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CSV = os.path.join(ROOT, "benchmarks", "results", "session53", "runD-source-fwd_ws.csv.xz")


def test_ncu_source_summary_reads_the_committed_profile():
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "ncu_source_summary.py"), CSV, "--top", "3"],
                         capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert "local_attn_fwd_ws_kernel" in lines[0]
    assert lines[1] == "4400 instructions, 7121 samples"
    # the reasons are listed by share, the largest first: the fixed-latency waits, then the wgmma waits
    reasons = [ln.split()[0] for ln in lines[3:15]]
    assert reasons[:2] == ["wait", "barrier"]
    top = lines[lines.index(next(ln for ln in lines if ln.startswith("top 3"))) + 1]
    assert "WARPGROUP.DEPBAR" in top and " 613 " in top
    # the per-step run (executed 52224 times: 13056 consumer steps x 4 warps) holding the softmax
    assert any("exec    52224 n  376 samples    4111  57.7 %" in ln for ln in lines)
