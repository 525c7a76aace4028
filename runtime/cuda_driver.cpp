// Loads libcuda.so.1 once per process and fetches each entry point by the exact symbol of the ABI
// version declared in cuda_driver.h (the `_v2` names where cuda.h maps to them). The library is
// never closed: the driver does not support being unloaded.
#include "cuda_driver.h"

#include "status.h"

#include <atomic>
#include <dlfcn.h>
#include <mutex>

namespace sinter::rt::cuda {
namespace {

std::string describeWith(const Driver &d, const char *call, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (d.cuGetErrorName)
    d.cuGetErrorName(result, &name);
  if (d.cuGetErrorString)
    d.cuGetErrorString(result, &text);
  return detail::concat(call, " failed: ", name ? name : "CUDA error", " (", result, ")",
                        text ? detail::concat(": ", text) : std::string());
}

struct LoadState {
  Driver driver{};
  sinter_status status = SINTER_OK;
  std::string message;
};

template <typename Function> bool fetch(void *library, Function &field, const char *symbol,
                                        std::string &missing) {
  field = reinterpret_cast<Function>(dlsym(library, symbol));
  if (!field)
    missing += (missing.empty() ? "" : ", ") + std::string(symbol);
  return field != nullptr;
}

void loadDriver(LoadState &state) {
  void *library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *reason = dlerror();
    state.status = SINTER_ERROR_NO_DEVICE;
    state.message = detail::concat("no CUDA driver: libcuda.so.1 could not be loaded (",
                                   reason ? reason : "unknown reason",
                                   "); install the NVIDIA driver to run CUDA artifacts");
    return;
  }
  Driver &d = state.driver;
  std::string missing;
  fetch(library, d.cuInit, "cuInit", missing);
  fetch(library, d.cuDriverGetVersion, "cuDriverGetVersion", missing);
  fetch(library, d.cuGetErrorName, "cuGetErrorName", missing);
  fetch(library, d.cuGetErrorString, "cuGetErrorString", missing);
  fetch(library, d.cuDeviceGetCount, "cuDeviceGetCount", missing);
  fetch(library, d.cuDeviceGet, "cuDeviceGet", missing);
  fetch(library, d.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  fetch(library, d.cuDeviceGetName, "cuDeviceGetName", missing);
  fetch(library, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  fetch(library, d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", missing);
  fetch(library, d.cuCtxPushCurrent, "cuCtxPushCurrent_v2", missing);
  fetch(library, d.cuCtxPopCurrent, "cuCtxPopCurrent_v2", missing);
  fetch(library, d.cuMemAlloc, "cuMemAlloc_v2", missing);
  fetch(library, d.cuMemFree, "cuMemFree_v2", missing);
  fetch(library, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2", missing);
  fetch(library, d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
  fetch(library, d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
  fetch(library, d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  fetch(library, d.cuMemsetD8Async, "cuMemsetD8Async", missing);
  fetch(library, d.cuModuleLoadDataEx, "cuModuleLoadDataEx", missing);
  fetch(library, d.cuModuleUnload, "cuModuleUnload", missing);
  fetch(library, d.cuModuleGetFunction, "cuModuleGetFunction", missing);
  fetch(library, d.cuModuleGetGlobal, "cuModuleGetGlobal_v2", missing);
  fetch(library, d.cuFuncSetAttribute, "cuFuncSetAttribute", missing);
  fetch(library, d.cuLaunchKernel, "cuLaunchKernel", missing);
  fetch(library, d.cuStreamCreate, "cuStreamCreate", missing);
  fetch(library, d.cuStreamDestroy, "cuStreamDestroy_v2", missing);
  fetch(library, d.cuStreamSynchronize, "cuStreamSynchronize", missing);
  fetch(library, d.cuStreamWaitEvent, "cuStreamWaitEvent", missing);
  fetch(library, d.cuEventCreate, "cuEventCreate", missing);
  fetch(library, d.cuEventRecord, "cuEventRecord", missing);
  fetch(library, d.cuEventDestroy, "cuEventDestroy_v2", missing);
  fetch(library, d.cuStreamBeginCapture, "cuStreamBeginCapture_v2", missing);
  fetch(library, d.cuStreamEndCapture, "cuStreamEndCapture", missing);
  fetch(library, d.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", missing);
  fetch(library, d.cuGraphLaunch, "cuGraphLaunch", missing);
  fetch(library, d.cuGraphExecDestroy, "cuGraphExecDestroy", missing);
  fetch(library, d.cuGraphDestroy, "cuGraphDestroy", missing);
  fetch(library, d.cuEventSynchronize, "cuEventSynchronize", missing);
  fetch(library, d.cuEventElapsedTime, "cuEventElapsedTime", missing);
  if (!missing.empty()) {
    state.status = SINTER_ERROR_NO_DEVICE;
    state.message = "the CUDA driver is too old (CUDA 11.4 or newer is needed); it lacks " + missing;
    return;
  }
  CUresult result = d.cuInit(0);
  if (result != CUDA_SUCCESS) {
    state.status = SINTER_ERROR_NO_DEVICE;
    state.message = "the CUDA driver found no usable GPU: " + describeWith(d, "cuInit", result);
  }
}

LoadState &loadState() {
  static LoadState state;
  static std::once_flag once;
  std::call_once(once, [] { loadDriver(state); });
  return state;
}

std::atomic<const Driver *> replacementDriver{nullptr};

} // namespace

void replaceDriverForTesting(const Driver *replacement) { replacementDriver = replacement; }

const Driver &driver() {
  if (const Driver *replacement = replacementDriver.load())
    return *replacement;
  LoadState &state = loadState();
  if (state.status != SINTER_OK)
    throw RuntimeError(state.status, state.message);
  return state.driver;
}

std::string describeError(const char *call, CUresult result) {
  if (const Driver *replacement = replacementDriver.load())
    return describeWith(*replacement, call, result);
  return describeWith(loadState().driver, call, result);
}

void check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return;
  sinter_status status = SINTER_ERROR_DEVICE;
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    status = SINTER_ERROR_OUT_OF_MEMORY;
  else if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_INVALID_DEVICE)
    status = SINTER_ERROR_NO_DEVICE;
  throw RuntimeError(status, describeError(call, result));
}

} // namespace sinter::rt::cuda
