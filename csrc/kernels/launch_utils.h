// Host-side launch helpers shared by the kernel launchers (torch-free).
#pragma once
#include <cuda_runtime.h>

#include <atomic>

namespace fwa {

constexpr int kMaxDevices = 64;

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
// CTAs of kNumThreads threads fit on one SM. One instantiation per kernel, so the caches are too.
template <auto Kernel>
cudaError_t prepare_kernel(size_t smem, int threads, int* ctas_per_sm) {
    constexpr int kSlots = 8;   // occupancy answers cached per device, keyed by (smem, threads)
    static std::atomic<long long> configured[kMaxDevices] = {};
    static std::atomic<long long> occ_key[kMaxDevices][kSlots] = {};
    static std::atomic<int> occ_val[kMaxDevices][kSlots] = {};
    const int dev = current_device();
    const long long want = static_cast<long long>(smem);
    if (smem > max_smem_per_block()) return cudaErrorInvalidValue;   // not set: no sticky error
    if (configured[dev].load(std::memory_order_relaxed) < want) {
        cudaError_t err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
        if (err != cudaSuccess) return err;
        configured[dev].store(want, std::memory_order_relaxed);
    }
    const long long key = (want << 12) + threads + 1;
    for (int i = 0; i < kSlots; ++i) {
        if (occ_key[dev][i].load(std::memory_order_acquire) == key) {
            *ctas_per_sm = occ_val[dev][i].load(std::memory_order_relaxed);
            return cudaSuccess;
        }
    }
    int n = 0;
    cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, smem);
    if (err != cudaSuccess) return err;
    n = n > 0 ? n : 1;
    const int slot = static_cast<int>((want / 16 + threads) % kSlots);
    occ_val[dev][slot].store(n, std::memory_order_relaxed);
    occ_key[dev][slot].store(key, std::memory_order_release);
    *ctas_per_sm = n;
    return cudaSuccess;
}

}  // namespace fwa
