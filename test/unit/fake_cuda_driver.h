// A CUDA driver made of host memory, for testing the CUDA session logic (device shares, streams,
// graph capture, pools) on machines without a GPU: "device memory" is malloc'ed host memory,
// copies are memcpy run at once (every stream is synchronous), a captured graph records the
// copies queued during capture and replays them on launch. Modules load any image (text: a
// module has a global of each name its text holds) and kernels cannot launch (the plans tested
// through it are copies). It counts what the tests check:
// allocations alive, weight-sized uploads, primary-context retains.
#pragma once

#include "../../runtime/cuda_driver.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace sinter::testing {

namespace cuda = sinter::rt::cuda;

struct FakeCuda {
  struct Copy {
    cuda::CUdeviceptr destination, source;
    size_t bytes;
  };
  struct Stream {
    bool capturing = false;
    std::vector<Copy> captured;
  };
  struct Graph {
    std::vector<Copy> copies;
  };

  std::mutex mutex;
  int deviceCount = 2;
  std::map<cuda::CUdeviceptr, size_t> live;     ///< allocations alive, by address
  std::atomic<int> hostToDeviceSyncCopies{0};   ///< cuMemcpyHtoD calls (the weights' upload)
  std::atomic<int> contextRetains{0};           ///< retains minus releases
  std::atomic<int> modulesLoaded{0};            ///< loads minus unloads
  std::atomic<int> graphLaunches{0};

  size_t liveBytes() {
    std::lock_guard<std::mutex> lock(mutex);
    size_t total = 0;
    for (const auto &[address, bytes] : live)
      total += bytes;
    return total;
  }
  size_t liveAllocations() {
    std::lock_guard<std::mutex> lock(mutex);
    return live.size();
  }

  static FakeCuda &instance() {
    static FakeCuda fake;
    return fake;
  }

  /// The Driver table over this fake; install it with cuda::replaceDriverForTesting.
  static const cuda::Driver &driver();
};

inline const cuda::Driver &FakeCuda::driver() {
  using namespace cuda;
  static Driver d = [] {
    Driver d{};
    d.cuInit = [](unsigned) { return CUDA_SUCCESS; };
    d.cuDriverGetVersion = [](int *version) { *version = 12040; return CUDA_SUCCESS; };
    d.cuGetErrorName = [](CUresult, const char **name) { *name = "FAKE_ERROR"; return CUDA_SUCCESS; };
    d.cuGetErrorString = [](CUresult, const char **text) { *text = "fake"; return CUDA_SUCCESS; };
    d.cuDeviceGetCount = [](int *count) { *count = instance().deviceCount; return CUDA_SUCCESS; };
    d.cuDeviceGet = [](CUdevice *device, int ordinal) { *device = ordinal; return CUDA_SUCCESS; };
    d.cuDeviceGetAttribute = [](int *value, int attribute, CUdevice) {
      *value = attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? 9
               : attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 0
                                                                           : 227 * 1024;
      return CUDA_SUCCESS;
    };
    d.cuDeviceGetName = [](char *name, int length, CUdevice) {
      std::strncpy(name, "fake GPU", size_t(length));
      return CUDA_SUCCESS;
    };
    d.cuDevicePrimaryCtxRetain = [](CUcontext *context, CUdevice device) {
      ++instance().contextRetains;
      *context = reinterpret_cast<CUcontext>(uintptr_t(0x1000 + device));
      return CUDA_SUCCESS;
    };
    d.cuDevicePrimaryCtxRelease = [](CUdevice) { --instance().contextRetains; return CUDA_SUCCESS; };
    d.cuCtxPushCurrent = [](CUcontext) { return CUDA_SUCCESS; };
    d.cuCtxPopCurrent = [](CUcontext *context) { *context = nullptr; return CUDA_SUCCESS; };
    d.cuMemAlloc = [](CUdeviceptr *pointer, size_t bytes) {
      void *memory = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
      if (!memory)
        return CUDA_ERROR_OUT_OF_MEMORY;
      *pointer = reinterpret_cast<CUdeviceptr>(memory);
      std::lock_guard<std::mutex> lock(instance().mutex);
      instance().live[*pointer] = bytes;
      return CUDA_SUCCESS;
    };
    d.cuMemFree = [](CUdeviceptr pointer) {
      std::lock_guard<std::mutex> lock(instance().mutex);
      if (!instance().live.erase(pointer))
        return 1; // CUDA_ERROR_INVALID_VALUE: not an allocation of ours
      std::free(reinterpret_cast<void *>(pointer));
      return CUDA_SUCCESS;
    };
    d.cuMemcpyHtoD = [](CUdeviceptr destination, const void *source, size_t bytes) {
      ++instance().hostToDeviceSyncCopies;
      std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyHtoDAsync = [](CUdeviceptr destination, const void *source, size_t bytes, CUstream) {
      std::memcpy(reinterpret_cast<void *>(destination), source, bytes);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyDtoHAsync = [](void *destination, CUdeviceptr source, size_t bytes, CUstream) {
      std::memcpy(destination, reinterpret_cast<const void *>(source), bytes);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyDtoDAsync = [](CUdeviceptr destination, CUdeviceptr source, size_t bytes,
                             CUstream stream) {
      auto *fake = reinterpret_cast<Stream *>(stream);
      if (fake && fake->capturing)
        fake->captured.push_back({destination, source, bytes});
      else
        std::memmove(reinterpret_cast<void *>(destination), reinterpret_cast<const void *>(source),
                     bytes);
      return CUDA_SUCCESS;
    };
    d.cuMemsetD8Async = [](CUdeviceptr destination, unsigned char value, size_t bytes, CUstream) {
      std::memset(reinterpret_cast<void *>(destination), value, bytes);
      return CUDA_SUCCESS;
    };
    d.cuModuleLoadDataEx = [](CUmodule *module, const void *image, unsigned, int *, void **) {
      ++instance().modulesLoaded;
      *module = reinterpret_cast<CUmodule>(new std::string(static_cast<const char *>(image)));
      return CUDA_SUCCESS;
    };
    d.cuModuleUnload = [](CUmodule module) {
      --instance().modulesLoaded;
      delete reinterpret_cast<std::string *>(module);
      return CUDA_SUCCESS;
    };
    // A module has a global of every name its image's text holds.
    d.cuModuleGetGlobal = [](CUdeviceptr *address, size_t *bytes, CUmodule module, const char *name) {
      if (reinterpret_cast<std::string *>(module)->find(name) == std::string::npos)
        return 500; // CUDA_ERROR_NOT_FOUND
      *address = 0x3000;
      *bytes = 4;
      return CUDA_SUCCESS;
    };
    d.cuModuleGetFunction = [](CUfunction *function, CUmodule, const char *) {
      *function = reinterpret_cast<CUfunction>(uintptr_t(0x2000));
      return CUDA_SUCCESS;
    };
    d.cuFuncSetAttribute = [](CUfunction, int, int) { return CUDA_SUCCESS; };
    d.cuLaunchKernel = [](CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void **, void **) {
      return 1; // the fake runs no kernels
    };
    d.cuStreamCreate = [](CUstream *stream, unsigned) {
      *stream = reinterpret_cast<CUstream>(new Stream);
      return CUDA_SUCCESS;
    };
    d.cuStreamDestroy = [](CUstream stream) {
      delete reinterpret_cast<Stream *>(stream);
      return CUDA_SUCCESS;
    };
    d.cuStreamSynchronize = [](CUstream) { return CUDA_SUCCESS; };
    d.cuStreamWaitEvent = [](CUstream, CUevent, unsigned) { return CUDA_SUCCESS; };
    d.cuEventCreate = [](CUevent *event, unsigned) {
      *event = reinterpret_cast<CUevent>(new int(0));
      return CUDA_SUCCESS;
    };
    d.cuEventRecord = [](CUevent, CUstream) { return CUDA_SUCCESS; };
    d.cuEventDestroy = [](CUevent event) {
      delete reinterpret_cast<int *>(event);
      return CUDA_SUCCESS;
    };
    d.cuStreamBeginCapture = [](CUstream stream, int) {
      reinterpret_cast<Stream *>(stream)->capturing = true;
      return CUDA_SUCCESS;
    };
    d.cuStreamEndCapture = [](CUstream stream, CUgraph *graph) {
      auto *fake = reinterpret_cast<Stream *>(stream);
      fake->capturing = false;
      *graph = reinterpret_cast<CUgraph>(new Graph{std::move(fake->captured)});
      fake->captured.clear();
      return CUDA_SUCCESS;
    };
    d.cuGraphInstantiateWithFlags = [](CUgraphExec *exec, CUgraph graph, unsigned long long) {
      *exec = reinterpret_cast<CUgraphExec>(new Graph(*reinterpret_cast<Graph *>(graph)));
      return CUDA_SUCCESS;
    };
    d.cuGraphLaunch = [](CUgraphExec exec, CUstream) {
      ++instance().graphLaunches;
      for (const Copy &copy : reinterpret_cast<Graph *>(exec)->copies)
        std::memmove(reinterpret_cast<void *>(copy.destination),
                     reinterpret_cast<const void *>(copy.source), copy.bytes);
      return CUDA_SUCCESS;
    };
    d.cuGraphExecDestroy = [](CUgraphExec exec) {
      delete reinterpret_cast<Graph *>(exec);
      return CUDA_SUCCESS;
    };
    d.cuGraphDestroy = [](CUgraph graph) {
      delete reinterpret_cast<Graph *>(graph);
      return CUDA_SUCCESS;
    };
    d.cuEventSynchronize = [](CUevent) { return CUDA_SUCCESS; };
    d.cuEventElapsedTime = [](float *milliseconds, CUevent, CUevent) {
      *milliseconds = 0;
      return CUDA_SUCCESS;
    };
    return d;
  }();
  return d;
}

} // namespace sinter::testing
