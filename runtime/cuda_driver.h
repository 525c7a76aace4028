// The slice of the CUDA driver API that libsinter_rt uses, declared here (no CUDA headers) and
// loaded at run time from libcuda.so.1, so the runtime needs no CUDA toolkit and loads on
// machines without a GPU. Values of the enums match cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace sinter::rt::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

inline constexpr CUresult CUDA_SUCCESS = 0;
inline constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
inline constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
inline constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
inline constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
inline constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
inline constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
inline constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
inline constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
inline constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;

/// Function pointers into libcuda.so.1, by the versioned symbol each is fetched as.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);               // _v2
  CUresult (*cuCtxPushCurrent)(CUcontext context);                      // _v2
  CUresult (*cuCtxPopCurrent)(CUcontext *context);                      // _v2
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes);           // _v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                           // _v2
  CUresult (*cuMemcpyHtoD)(CUdeviceptr destination, const void *source, size_t bytes); // _v2
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr destination, const void *source, size_t bytes,
                                CUstream stream);                       // _v2
  CUresult (*cuMemcpyDtoHAsync)(void *destination, CUdeviceptr source, size_t bytes,
                                CUstream stream);                       // _v2
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr destination, CUdeviceptr source, size_t bytes,
                                CUstream stream);                       // _v2
  CUresult (*cuMemsetD8Async)(CUdeviceptr destination, unsigned char value, size_t bytes,
                              CUstream stream);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned optionCount,
                                 int *options, void **optionValues);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  /// cuModuleGetGlobal_v2: a module's `__device__` variable (CUDA_ERROR_NOT_FOUND when absent).
  CUresult (*cuModuleGetGlobal)(CUdeviceptr *address, size_t *bytes, CUmodule module, const char *name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX, unsigned gridY, unsigned gridZ,
                             unsigned blockX, unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream, void **params, void **extra);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);                         // _v2
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventDestroy)(CUevent event);                            // _v2
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);          // _v2
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph,
                                          unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);
  // For sinter_session_benchmark (timing events).
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float *milliseconds, CUevent start, CUevent end);
};

/// The driver, loaded and initialised (cuInit) once per process. Throws RuntimeError:
/// NO_DEVICE when libcuda.so.1 is missing or sees no GPU, DEVICE when it is unusable.
const Driver &driver();

/// For tests of the CUDA session logic on machines without a GPU: driver() returns `replacement`
/// from now on (null puts the real driver back). Call it only while no CUDA session exists.
void replaceDriverForTesting(const Driver *replacement);

/// "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory".
std::string describeError(const char *call, CUresult result);

/// Throws RuntimeError for a failed call: OUT_OF_MEMORY for allocation failures, NO_DEVICE for
/// a missing device, DEVICE otherwise, with the driver's error name and text.
void check(CUresult result, const char *call);

} // namespace sinter::rt::cuda
