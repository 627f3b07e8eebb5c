// Host-side launch helpers shared by the kernel launchers (torch-free).
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdlib>
#include <type_traits>

namespace fwa {

constexpr int kMaxDevices = 64;

// A default-on switch: false only when environment variable `name` starts with '0' (the A/B and
// fallback switches FWA_WINDOW_WGMMA, FWA_WINDOW_WGMMA_SMALL, FWA_WINDOW_PDL). Callers keep the
// answer in a function-local static: read once per process.
inline bool env_switch_on(const char* name) {
    const char* e = std::getenv(name);
    return e == nullptr || e[0] != '0';
}

// FWA_WINDOW_PDL (default on; "0": stream-ordered launches for A/B timing, or a platform without
// programmatic dependent launch): the window op's kernels launched as programmatic dependents (the
// forward and the backward's preprocess after the bias+mask build, the forward's row-tail kernel,
// the tiled backward's chain) and the sliding-window backward's preprocess -> key side -> query
// side chain (launch_local_bwd_impl).
inline bool window_pdl_enabled() {
    static const bool on = env_switch_on("FWA_WINDOW_PDL");
    return on;
}

// A launch configuration for cudaLaunchKernelEx, as a programmatic dependent of the previous launch
// on the stream (Hopper PDL) when `pdl`; `attr` is the attribute's storage (the caller's, alive
// until the launch).
inline cudaLaunchConfig_t launch_config(dim3 grid, dim3 block, size_t smem, cudaStream_t stream, bool pdl,
                                        cudaLaunchAttribute& attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cfg;
}

// f(std::integral_constant<int, W>{}) for the width W of a narrowed last 64-wide block: 16, 32 or
// 48, any other `width` 64 (the full block); the kernels' narrow forms are instantiated per W.
template <typename F>
decltype(auto) dispatch_block_width(int width, F&& f) {
    switch (width) {
        case 16: return f(std::integral_constant<int, 16>{});
        case 32: return f(std::integral_constant<int, 32>{});
        case 48: return f(std::integral_constant<int, 48>{});
        default: return f(std::integral_constant<int, 64>{});
    }
}

inline int current_device() {
    int dev = 0;
    cudaGetDevice(&dev);
    return dev < kMaxDevices ? dev : kMaxDevices - 1;
}

inline int num_sms() {
    static std::atomic<int> cache[kMaxDevices] = {};
    const int dev = current_device();
    int n = cache[dev].load(std::memory_order_relaxed);
    if (n == 0) {
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev);
        cache[dev].store(n, std::memory_order_relaxed);
    }
    return n;
}

// True when the current device has compute capability 9.0, where an sm_90a build's wgmma kernels
// run; asked once per device (a failed query answers false and is asked again next time).
inline bool current_device_is_sm90() {
    // per device: 0 = not asked yet, 1 = no, 2 = yes
    static std::atomic<int> cache[kMaxDevices] = {};
    const int dev = current_device();
    int v = cache[dev].load(std::memory_order_relaxed);
    if (v == 0) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
        }
        v = major == 9 && minor == 0 ? 2 : 1;
        cache[dev].store(v, std::memory_order_relaxed);
    }
    return v == 2;
}

inline size_t max_smem_per_block() {
    static std::atomic<long long> cache[kMaxDevices] = {};
    const int dev = current_device();
    long long n = cache[dev].load(std::memory_order_relaxed);
    if (n == 0) {
        int v = 0;
        cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
        n = v;
        cache[dev].store(n, std::memory_order_relaxed);
    }
    return static_cast<size_t>(n);
}

// Raises the kernel's dynamic shared-memory limit (once per device and size) and returns how many
// CTAs of `threads` threads fit on one SM. One instantiation per kernel, so the caches are too.
// The occupancy answers are cached per device in a small open-addressed table, each entry one
// 64-bit word (key and answer together: no torn reads between threads). A launcher may ask for
// several shared-memory sizes per call (the forward scores 2 placements x 3 pipeline depths) and a
// model calls it with several window sizes: with 8 direct-mapped slots those keys evicted each
// other, and every call paid ~6 occupancy queries (~1 us each) on the host.
template <auto Kernel>
cudaError_t prepare_kernel(size_t smem, int threads, int* ctas_per_sm) {
    constexpr int kSlots = 32;
    static std::atomic<long long> configured[kMaxDevices] = {};
    static std::atomic<long long> occ[kMaxDevices][kSlots] = {};
    const int dev = current_device();
    const long long want = static_cast<long long>(smem);
    if (smem > max_smem_per_block()) return cudaErrorInvalidValue;   // not set: no sticky error
    if (configured[dev].load(std::memory_order_relaxed) < want) {
        cudaError_t err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
        if (err != cudaSuccess) return err;
        configured[dev].store(want, std::memory_order_relaxed);
    }
    // entry = (key << 16) | answer, key = smem * 2048 + threads + 1 (never 0: 0 marks an empty slot)
    const long long key = want * 2048 + threads + 1;
    const int home = static_cast<int>((want / 16 * 31 + threads) % kSlots);
    for (int i = 0; i < kSlots; ++i) {
        const long long e = occ[dev][(home + i) % kSlots].load(std::memory_order_relaxed);
        if (e == 0) break;
        if ((e >> 16) == key) {
            *ctas_per_sm = static_cast<int>(e & 0xffff);
            return cudaSuccess;
        }
    }
    int n = 0;
    cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, smem);
    if (err != cudaSuccess) return err;
    n = n > 0 ? (n < 0xffff ? n : 0xffff) : 1;
    const long long entry = (key << 16) | n;
    int slot = home;   // the first empty slot on the probe path; the home slot when the table is full
    for (int i = 0; i < kSlots; ++i) {
        long long expected = 0;
        if (occ[dev][(home + i) % kSlots].compare_exchange_strong(expected, entry, std::memory_order_relaxed)) {
            slot = -1;
            break;
        }
        if ((expected >> 16) == key) { slot = -1; break; }   // another thread cached it meanwhile
    }
    if (slot >= 0) occ[dev][slot].store(entry, std::memory_order_relaxed);
    *ctas_per_sm = n;
    return cudaSuccess;
}

}  // namespace fwa
