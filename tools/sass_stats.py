"""SASS instruction counts of a kernel and of its loops, offline (developer tool, no GPU needed).

Compiles one instantiation file to a cubin (or takes a cubin), disassembles it with nvdisasm and,
for every kernel whose mangled name matches a regex, prints its instruction count, its loops (a
backward branch and the code it jumps back over) with their instruction counts, and the opcode
histogram of the largest loop: the per-item cost of a kernel's main loop before spending device
time (session 12: 4 integer divisions and the wgmma descriptor arithmetic were 10-15 % of the
sliding-window key side's instructions).

    python tools/sass_stats.py csrc/kernels/local/instantiations/local_bwd_bf16_hd128.cu \\
        --kernel 'kv_kernel.*Lb1E' [--arch sm_90a] [--top 25]
    python tools/sass_stats.py build.cubin --kernel fwd

nvdisasm is not part of the CUDA 13.0 toolkit of the build machine: the tool looks for it in
$NVDISASM, on PATH, next to nvcc, or in the `nvidia-cuda-nvdisasm` wheel
(`pip download --no-deps nvidia-cuda-nvdisasm`, unzip, point $NVDISASM at nvidia/cu13/bin/nvdisasm).
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
INSTR = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^(\.L_x_\d+):")
BRANCH = re.compile(r"\bBRA\b.*`\((\.L_x_\d+)\)")
SECTION = re.compile(r"^\s*\.section\s+\.text\.(\S+?),")


def find_nvdisasm() -> str:
    nvcc = shutil.which("nvcc")
    for cand in (os.environ.get("NVDISASM"), shutil.which("nvdisasm"),
                 os.path.join(os.path.dirname(nvcc), "nvdisasm") if nvcc else None):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    try:
        import nvidia  # the nvidia-cuda-nvdisasm wheel installs nvidia/cu13/bin/nvdisasm

        for base in nvidia.__path__:
            for sub in ("cu13", "cu12", "cuda_nvdisasm"):
                cand = os.path.join(base, sub, "bin", "nvdisasm")
                if os.path.isfile(cand):
                    return cand
    except ImportError:
        pass
    sys.exit("sass_stats: nvdisasm not found (set $NVDISASM; see the docstring)")


def compile_cubin(src: str, arch: str, out: str) -> None:
    from torch.utils.cpp_extension import include_paths

    cmd = ["nvcc", "-std=c++17", "-O3", "--use_fast_math", "--expt-relaxed-constexpr",
           f"-gencode=arch=compute_{arch[3:]},code={arch}", "-cubin", "-o", out,
           "-I" + os.path.join(ROOT, "csrc")] + ["-I" + p for p in include_paths()]
    if arch == "sm_90a":
        cmd.append("-DFWA_SM90A_BUILT")
    subprocess.run(cmd + [src], check=True)


def parse(sass: str):
    """{kernel: [(offset, text, labels_here)]} from nvdisasm's output."""
    kernels, cur, pending = {}, None, []
    for line in sass.splitlines():
        m = SECTION.match(line)
        if m:
            cur = m.group(1)
            kernels[cur] = []
            pending = []
            continue
        if cur is None:
            continue
        m = LABEL.match(line.strip())
        if m:
            pending.append(m.group(1))
            continue
        m = INSTR.match(line)
        if m:
            kernels[cur].append((int(m.group(1), 16), m.group(2), pending))
            pending = []
    return kernels


def opcode(text: str) -> str:
    text = re.sub(r"^@!?U?P\w+\s+", "", text)
    return text.split()[0] if text else "?"


def loops(instrs):
    """(first index, last index) of every backward branch's range, largest first."""
    at = {}
    for i, (_, _, labels) in enumerate(instrs):
        for lab in labels:
            at[lab] = i
    out = []
    for i, (_, text, _) in enumerate(instrs):
        m = BRANCH.search(text)
        if m and m.group(1) in at and at[m.group(1)] <= i:
            out.append((at[m.group(1)], i))
    return sorted(out, key=lambda r: r[0] - r[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input", help="a .cu instantiation file or a .cubin")
    ap.add_argument("--kernel", default=".", help="regex on the mangled kernel name")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--top", type=int, default=25, help="opcodes shown for the largest loop")
    args = ap.parse_args()
    nvdisasm = find_nvdisasm()
    with tempfile.TemporaryDirectory() as tmp:
        cubin = args.input
        if not cubin.endswith(".cubin"):
            cubin = os.path.join(tmp, "k.cubin")
            compile_cubin(args.input, args.arch, cubin)
        sass = subprocess.run([nvdisasm, cubin], check=True, capture_output=True, text=True).stdout
    found = False
    for name, instrs in parse(sass).items():
        if not re.search(args.kernel, name):
            continue
        found = True
        print(f"== {name}: {len(instrs)} instructions")
        lps = loops(instrs)
        for a, b in lps[:8]:
            print(f"   loop {instrs[a][0]:#07x}-{instrs[b][0]:#07x}: {b - a + 1} instructions")
        if lps:
            a, b = lps[0]
            hist = collections.Counter(opcode(t) for _, t, _ in instrs[a:b + 1])
            print("   largest loop by opcode: " +
                  ", ".join(f"{op} {n}" for op, n in hist.most_common(args.top)))
    if not found:
        print(f"sass_stats: no kernel matches {args.kernel!r}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
