#pragma once
// MOE_HD marks a small function that host and device code share (fragment maps, layouts): the
// CPU tests run the very functions the kernels do.
#if defined(__CUDACC__)
#define MOE_HD __host__ __device__ __forceinline__
#else
#define MOE_HD inline
#endif
