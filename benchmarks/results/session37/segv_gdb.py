"""Session 37 run D: the CUDA forward on a q with a non-unit last stride (the SIGSEGV of runs A-C),
with torch's C++ stack trace on fatal signals."""
import torch
import flash_window_attn  # noqa: F401

torch._C._set_print_stack_traces_on_fatal_signal(True)
B_, H, N, D = 8, 2, 49, 32
q = torch.randn(B_, H, N, 2 * D, device="cuda", dtype=torch.float16)[..., ::2]
k = torch.randn(B_, H, N, D, device="cuda", dtype=torch.float16)
try:
    torch.ops.flash_window_attn.window_attention_fwd(q, k, k, None, None, None, 0.25)
    print("no error")
except ValueError as e:
    print("ValueError:", e)
