"""Session 37: test_errors.py::test_cuda_non_unit_last_stride crashed (SIGSEGV) in runs A and B.
Each case in a subprocess of its own: which argument, through which entry point."""
import subprocess
import sys

CASE = r'''
import faulthandler, sys, torch
faulthandler.enable()
import flash_window_attn as fwa
arg, entry = sys.argv[1], sys.argv[2]
B_, H, N, D = 8, 2, 49, 32
t = {n: torch.randn(B_, H, N, D, device="cuda", dtype=torch.float16) for n in "qkv"}
t[arg] = torch.randn(B_, H, N, 2 * D, device="cuda", dtype=torch.float16)[..., ::2]
bias, mask = torch.randn(H, N, N, device="cuda"), torch.zeros(4, N, N, device="cuda")
ls = torch.full((H, 1, 1), 2.3, device="cuda")
try:
    if entry == "api":
        fwa.window_attention(t["q"], t["k"], t["v"], bias, mask, logit_scale=ls)
    elif entry == "op":
        torch.ops.flash_window_attn.window_attention_fwd(t["q"], t["k"], t["v"], bias, mask, ls, 1.0)
    elif entry == "op_v1":
        torch.ops.flash_window_attn.window_attention_fwd(t["q"], t["k"], t["v"], None, None, None, 0.25)
    elif entry == "op_cpu":
        c = {n: x.cpu() for n, x in t.items()}
        torch.ops.flash_window_attn.window_attention_fwd(c["q"], c["k"], c["v"], None, None, None, 0.25)
    print("no error")
except ValueError as e:
    print("ValueError:", str(e)[:90])
'''
for entry in ("op_cpu", "op_v1", "op", "api"):
    for arg in "qkv":
        r = subprocess.run([sys.executable, "-c", CASE, arg, entry], capture_output=True, text=True)
        last = (r.stdout.strip().splitlines() or [""])[-1]
        print(f"{entry:7s} {arg}: rc {r.returncode} {last}", flush=True)
        if r.returncode != 0:
            print("   ", " | ".join(r.stderr.strip().splitlines()[-6:])[:600], flush=True)
