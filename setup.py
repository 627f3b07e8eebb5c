# Build of flash_window_attn and its extension module flash_window_attn._C.
#
# Intended install (torch must already be installed; the build links against it):
#     pip install --no-build-isolation .          # or -e . for development
#
# Environment variables read here:
#   FLASH_WINDOW_ATTN_CPU_ONLY=1  build a CppExtension from csrc/ops/*.cpp only (no .cu file, no
#                                 csrc/ops/*_cuda*.cpp), with -DFWA_CPU_ONLY: no nvcc needed.
#   TORCH_CUDA_ARCH_LIST          archs to compile for. If unset: the visible GPUs' archs (compute
#                                 capability 9.0 as "9.0a", which the wgmma kernels need), or, when
#                                 no GPU is visible, "8.0;9.0a", so that a GPU-less build host still
#                                 builds every kernel (CUDA sources are never dropped).
#   FWA_PTXAS_VERBOSE=1           pass -Xptxas=-v to nvcc (register / spill report per kernel).
#   MAX_JOBS                      parallel compile jobs (handled by torch's BuildExtension + ninja).
import glob
import os
import shlex
import subprocess

import torch
import torch.utils.cpp_extension
from setuptools import find_packages, setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "flash_window_attn"


def env_flag(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() in ("1", "true", "yes", "on")


def libstdcxx_link_args() -> list:
    """The shared libstdc++ torch has loaded, where the C++ compiler would link libstdc++ statically.

    A toolchain whose library path holds libstdc++.a but no libstdc++.so (e.g. a GCC bundle next to
    the system's libstdc++.so.6, as on our GPU machine) links the extension with a static copy. With
    Python's -Wl,-Bsymbolic-functions that copy's functions then run on the process's libstdc++
    data (locale facets, registered by torch's libstdc++.so.6), and formatting an integer into an
    error message crashed (SIGSEGV, session 37). Linking the libstdc++.so.6 of this process keeps a
    single libstdc++. Elsewhere (the compiler finds a libstdc++.so) nothing is added.
    """
    cxx = shlex.split(os.environ.get("CXX", "c++"))
    try:
        found = subprocess.run(cxx + ["-print-file-name=libstdc++.so"], capture_output=True, text=True,
                               timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return []
    if os.path.isabs(found) and os.path.exists(found):
        return []
    try:
        with open("/proc/self/maps") as maps:   # (torch is imported above: its libstdc++ is mapped)
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith("libstdc++.so") and os.path.isabs(path):
                    return [path]
    except OSError:
        pass
    return []


def rel_glob(pattern: str, recursive: bool = False) -> list:
    # setuptools wants source paths relative to the project root; sorted so builds are reproducible.
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern), recursive=recursive))


def get_extensions():
    cpu_only = env_flag("FLASH_WINDOW_ATTN_CPU_ONLY")

    op_sources = rel_glob(os.path.join("csrc", "ops", "*.cpp"))
    cuda_sources = rel_glob(os.path.join("csrc", "kernels", "**", "*.cu"), recursive=True)

    cxx_flags = ["-O3", "-std=c++17", "-fopenmp"]
    # abi3 (py_limited_api=True below): recent torch's BuildExtension defines Py_LIMITED_API itself
    # (torch 2.11: 0x030A0000) after our flags; defining it too would only draw "redefined" warnings.
    if getattr(torch.utils.cpp_extension, "min_supported_cpython", None) is None:
        cxx_flags.append("-DPy_LIMITED_API=0x03090000")
    # The .so must depend on the libgomp that torch itself loads (same soname), so at::parallel_for's
    # inline OpenMP regions run in torch's thread pool.
    link_args = ["-fopenmp"] + libstdcxx_link_args()
    include_dirs = [os.path.join(ROOT, "csrc")]

    if cpu_only:
        sources = [s for s in op_sources if "_cuda" not in os.path.basename(s)]
        return [
            CppExtension(
                f"{PACKAGE}._C",
                sources,
                include_dirs=include_dirs,
                extra_compile_args={"cxx": cxx_flags + ["-DFWA_CPU_ONLY"]},
                extra_link_args=link_args,
                py_limited_api=True,
            )
        ]

    if not os.environ.get("TORCH_CUDA_ARCH_LIST"):
        if torch.cuda.is_available():
            # the visible GPUs' archs, Hopper as sm_90a (its wgmma kernels need the "a" target)
            caps = sorted({torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())})
            os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(f"{a}.{b}" + ("a" if (a, b) == (9, 0) else "") for a, b in caps)
        else:
            os.environ["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0a"
    archs = [a.strip() for a in os.environ["TORCH_CUDA_ARCH_LIST"].replace(" ", ";").split(";") if a.strip()]
    if any(a.lower().startswith("9.0a") for a in archs) and any(a.split("+")[0] == "9.0" for a in archs):
        # With both an sm_90 and an sm_90a image, which one a compute capability 9.0 GPU loads is the
        # driver's choice, and the wgmma kernels are traps in the sm_90 one: keep 9.0a only.
        archs = [a for a in archs if a.split("+")[0] != "9.0"]
        os.environ["TORCH_CUDA_ARCH_LIST"] = ";".join(archs)
        print(f"setup.py: TORCH_CUDA_ARCH_LIST lists 9.0 and 9.0a; building {os.environ['TORCH_CUDA_ARCH_LIST']}")
    archs = [a.lower() for a in archs]

    nvcc_flags = [
        "-O3",
        "-std=c++17",
        "--expt-relaxed-constexpr",
        "-lineinfo",
        "-DNDEBUG",
        # torch adds -D__CUDA_NO_HALF_OPERATORS__ and friends for every .cu; the tensor-core kernels
        # use the cuda_fp16 / cuda_bf16 operators and conversions, so undo that (as FlashAttention does).
        "-U__CUDA_NO_HALF_OPERATORS__",
        "-U__CUDA_NO_HALF_CONVERSIONS__",
        "-U__CUDA_NO_HALF2_OPERATORS__",
        "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
    ]
    # The sm_90a (wgmma) kernels run only when the build has sm_90a code: the host dispatch checks this.
    if any(a.startswith("9.0a") for a in archs):
        nvcc_flags.append("-DFWA_SM90A_BUILT")
    if env_flag("FWA_PTXAS_VERBOSE"):
        nvcc_flags.append("-Xptxas=-v")

    return [
        CUDAExtension(
            f"{PACKAGE}._C",
            op_sources + cuda_sources,
            include_dirs=include_dirs,
            extra_compile_args={"cxx": cxx_flags, "nvcc": nvcc_flags},
            extra_link_args=link_args,
            py_limited_api=True,
        )
    ]


# Name, version and dependencies live in pyproject.toml ([project]).
setup(
    packages=find_packages(include=[PACKAGE, f"{PACKAGE}.*"]),
    ext_modules=get_extensions(),
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
    # abi3: one build serves every CPython >= 3.9 that the torch build supports.
    options={"bdist_wheel": {"py_limited_api": "cp39"}},
)
