// How many thread-block clusters of 1-4 CTAs fit the device at once for CTAs shaped like the window
// wgmma forward's (512 threads, ~200-227 KB of dynamic shared memory, 1 CTA per SM): the SMs a
// cluster launch would leave idle (session 63's checklist item 2, key norms shared by a window's
// query-block CTAs through distributed shared memory).
//   nvcc -O2 -std=c++17 -arch=sm_90a -o /tmp/cluster_occupancy tools/proto/cluster_occupancy.cu && /tmp/cluster_occupancy
#include <cstdio>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(512) dummy(int* out) {
    extern __shared__ int smem[];
    if (threadIdx.x == 0 && out) out[blockIdx.x] = smem[0];
}

int main() {
    int dev = 0, sms = 0, max_optin = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    cudaFuncSetAttribute(dummy, cudaFuncAttributeMaxDynamicSharedMemorySize, max_optin);
    cudaFuncSetAttribute(dummy, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    printf("SMs %d, max dynamic smem per block %d\n", sms, max_optin);
    const int kb[] = {100, 150, 200, 210, 220, 227};
    for (int s : kb) {
        const int bytes = s * 1024 > max_optin ? max_optin : s * 1024;
        for (int c = 1; c <= 4; ++c) {
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(c * 64);
            cfg.blockDim = dim3(512);
            cfg.dynamicSmemBytes = bytes;
            cudaLaunchAttribute attr;
            attr.id = cudaLaunchAttributeClusterDimension;
            attr.val.clusterDim.x = c;
            attr.val.clusterDim.y = 1;
            attr.val.clusterDim.z = 1;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            int n = -1;
            const cudaError_t e = cudaOccupancyMaxActiveClusters(&n, dummy, &cfg);
            printf("smem %6d B cluster %d: max active clusters %4d -> CTAs %4d (%s)\n", bytes, c, n, n * c,
                   e == cudaSuccess ? "ok" : cudaGetErrorString(e));
        }
    }
    return 0;
}
