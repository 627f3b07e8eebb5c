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

// Raises the kernel's dynamic shared-memory limit (once per device and size) and returns how many
// CTAs of kNumThreads threads fit on one SM. One instantiation per kernel, so the caches are too.
template <auto Kernel>
cudaError_t prepare_kernel(size_t smem, int threads, int* ctas_per_sm) {
    static std::atomic<long long> configured[kMaxDevices] = {};
    static std::atomic<long long> occ_key[kMaxDevices] = {};
    static std::atomic<int> occ_val[kMaxDevices] = {};
    const int dev = current_device();
    const long long want = static_cast<long long>(smem);
    if (configured[dev].load(std::memory_order_relaxed) < want) {
        cudaError_t err = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem));
        if (err != cudaSuccess) return err;
        configured[dev].store(want, std::memory_order_relaxed);
    }
    const long long key = want * 4096 + threads;
    if (occ_key[dev].load(std::memory_order_relaxed) != key) {
        int n = 0;
        cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, Kernel, threads, smem);
        if (err != cudaSuccess) return err;
        occ_val[dev].store(n > 0 ? n : 1, std::memory_order_relaxed);
        occ_key[dev].store(key, std::memory_order_relaxed);
    }
    *ctas_per_sm = occ_val[dev].load(std::memory_order_relaxed);
    return cudaSuccess;
}

}  // namespace fwa
