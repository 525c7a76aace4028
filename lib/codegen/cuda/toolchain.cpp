#include "sinter/codegen/cuda/toolchain.h"

#include "sinter/support/error.h"
#include "sinter/support/kernel_cache.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <spawn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace sinter::codegen::cuda {
namespace {

namespace fs = std::filesystem;

// The part of NVRTC's C API sinter uses (nvrtc.h); results are ints, 0 is success.
using NvrtcProgram = void *;
struct Nvrtc {
  int (*version)(int *, int *);
  int (*createProgram)(NvrtcProgram *, const char *, const char *, int, const char *const *,
                       const char *const *);
  int (*destroyProgram)(NvrtcProgram *);
  int (*compileProgram)(NvrtcProgram, int, const char *const *);
  int (*getPTXSize)(NvrtcProgram, size_t *);
  int (*getPTX)(NvrtcProgram, char *);
  int (*getProgramLogSize)(NvrtcProgram, size_t *);
  int (*getProgramLog)(NvrtcProgram, char *);
  const char *(*getErrorString)(int);
  std::string error; ///< why it could not be loaded
};

std::vector<std::string> cudaHomes() {
  std::vector<std::string> homes;
  for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const char *value = std::getenv(variable))
      homes.push_back(value);
  homes.push_back("/usr/local/cuda");
  return homes;
}

const Nvrtc &nvrtc() {
  static Nvrtc api = [] {
    Nvrtc api{};
    std::vector<std::string> candidates;
    if (const char *path = std::getenv("SINTER_NVRTC"))
      candidates.push_back(path);
    candidates.push_back("libnvrtc.so.13");
    candidates.push_back("libnvrtc.so.12");
    for (const std::string &home : cudaHomes()) {
      candidates.push_back(home + "/lib64/libnvrtc.so.13");
      candidates.push_back(home + "/lib64/libnvrtc.so.12");
      candidates.push_back(home + "/lib64/libnvrtc.so");
    }
    void *handle = nullptr;
    for (const std::string &candidate : candidates)
      if ((handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)))
        break;
    if (!handle) {
      api.error = "NVRTC (libnvrtc.so.13) was not found; install the CUDA toolkit, or set "
                  "SINTER_NVRTC to the library's path";
      return api;
    }
    auto get = [&](auto &fn, const char *name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
      if (!fn && api.error.empty())
        api.error = std::string("NVRTC lacks ") + name;
    };
    get(api.version, "nvrtcVersion");
    get(api.createProgram, "nvrtcCreateProgram");
    get(api.destroyProgram, "nvrtcDestroyProgram");
    get(api.compileProgram, "nvrtcCompileProgram");
    get(api.getPTXSize, "nvrtcGetPTXSize");
    get(api.getPTX, "nvrtcGetPTX");
    get(api.getProgramLogSize, "nvrtcGetProgramLogSize");
    get(api.getProgramLog, "nvrtcGetProgramLog");
    get(api.getErrorString, "nvrtcGetErrorString");
    return api;
  }();
  return api;
}

std::string findPtxas() {
  if (const char *path = std::getenv("SINTER_PTXAS"))
    return path;
  if (const char *pathVariable = std::getenv("PATH")) {
    std::stringstream stream(pathVariable);
    std::string folder;
    while (std::getline(stream, folder, ':'))
      if (!folder.empty() && access((folder + "/ptxas").c_str(), X_OK) == 0)
        return folder + "/ptxas";
  }
  for (const std::string &home : cudaHomes())
    if (access((home + "/bin/ptxas").c_str(), X_OK) == 0)
      return home + "/bin/ptxas";
  userError("ptxas was not found on the PATH or under /usr/local/cuda/bin; install the CUDA "
            "toolkit or set SINTER_PTXAS");
}

/// Runs `program` with `arguments` (argv[0] first), its stdout and stderr going to `output`, and
/// waits; returns its exit status, 127 when it could not be started, -1 when a signal ended it.
/// posix_spawn, not fork: forking a compiler that holds a model's weights copied its page tables
/// and made every page it wrote while ptxas ran a copy-on-write fault.
int runProcess(const std::string &program, const std::vector<std::string> &arguments, int output) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, output, 1);
  posix_spawn_file_actions_adddup2(&actions, output, 2);
  std::vector<char *> argv;
  for (const std::string &argument : arguments)
    argv.push_back(const_cast<char *>(argument.c_str()));
  argv.push_back(nullptr);
  pid_t child = 0;
  int error = posix_spawn(&child, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0)
    return 127;
  int waitStatus = 0;
  while (waitpid(child, &waitStatus, 0) < 0)
    if (errno != EINTR)
      return -1;
  return WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1;
}

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// What `ptxas --version` prints (its release and build), once per process: part of every
/// cubin's cache key, so a new toolkit never reuses an old one's cubins.
const std::string &ptxasVersion() {
  static const std::string version = [] {
    std::string ptxas = findPtxas();
    int pipe[2];
    SINTER_ASSERT(::pipe2(pipe, O_CLOEXEC) == 0, "pipe for ptxas --version failed");
    // The child's dup2 clears close-on-exec on its copies; the parent reads until ptxas exits.
    std::string text;
    std::thread reader([&] {
      char buffer[512];
      for (ssize_t got; (got = ::read(pipe[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, size_t(got));
    });
    int status = runProcess(ptxas, {"ptxas", "--version"}, pipe[1]);
    ::close(pipe[1]);
    reader.join();
    ::close(pipe[0]);
    if (status != 0)
      userError("could not run ", ptxas, " --version");
    return ptxas + "\n" + text;
  }();
  return version;
}

} // namespace

std::string describeNvrtc() {
  const Nvrtc &api = nvrtc();
  if (!api.error.empty())
    return api.error;
  int major = 0, minor = 0;
  api.version(&major, &minor);
  return "NVRTC " + std::to_string(major) + "." + std::to_string(minor);
}

std::string compileToPtx(const std::string &source, const std::string &virtualArch,
                         const std::string &programName, const KernelCache *cache,
                         bool lineInfo) {
  const Nvrtc &api = nvrtc();
  if (!api.error.empty())
    userError(api.error);
  std::string archOption = "--gpu-architecture=" + virtualArch;
  std::vector<const char *> options = {archOption.c_str(), "--std=c++17", "-default-device",
                                      "--fmad=true"};
  if (lineInfo)
    options.push_back("-lineinfo");
  std::string key;
  if (cache && cache->enabled()) {
    std::string optionText;
    for (const char *option : options)
      optionText += std::string(option) + "\n";
    key = cacheKey({"nvrtc ptx", describeNvrtc(), optionText, programName, source});
    if (std::optional<std::string> ptx = cache->load(key))
      return *ptx;
  }
  NvrtcProgram program = nullptr;
  int status = api.createProgram(&program, source.c_str(), programName.c_str(), 0, nullptr, nullptr);
  SINTER_ASSERT(status == 0, "nvrtcCreateProgram: ", api.getErrorString(status));
  status = api.compileProgram(program, int(options.size()), options.data());
  size_t logSize = 0;
  api.getProgramLogSize(program, &logSize);
  std::string log(logSize, '\0');
  if (logSize)
    api.getProgramLog(program, log.data());
  if (status != 0) {
    api.destroyProgram(&program);
    SINTER_ASSERT(false, "NVRTC rejected the generated CUDA C for ", virtualArch, ":\n", log);
  }
  size_t ptxSize = 0;
  api.getPTXSize(program, &ptxSize);
  std::string ptx(ptxSize, '\0');
  api.getPTX(program, ptx.data());
  api.destroyProgram(&program);
  while (!ptx.empty() && ptx.back() == '\0')
    ptx.pop_back();
  if (!key.empty())
    cache->store(key, ptx);
  return ptx;
}

std::vector<uint8_t> assemblePtx(const std::string &ptx, const std::string &arch,
                                 const std::string &workDirectory, const KernelCache *cache) {
  static std::mutex ptxasLock; // one file pair per arch; keep the log readable
  std::string ptxas = findPtxas();
  std::string key;
  if (cache && cache->enabled()) {
    key = cacheKey({"ptxas cubin", ptxasVersion(), "-arch=" + arch, "-O3", ptx});
    if (std::optional<std::string> cubin = cache->load(key))
      return std::vector<uint8_t>(cubin->begin(), cubin->end());
  }
  fs::path input = fs::path(workDirectory) / (arch + ".ptx");
  fs::path output = fs::path(workDirectory) / (arch + ".cubin");
  fs::path log = fs::path(workDirectory) / (arch + ".ptxas.log");
  {
    std::ofstream out(input, std::ios::binary);
    out << ptx;
  }
  int logFile = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (logFile < 0)
    userError("cannot write '", log.string(), "': ", std::strerror(errno));
  int status = runProcess(ptxas, {"ptxas", "-arch=" + arch, "-O3", input.string(), "-o", output.string()},
                          logFile);
  ::close(logFile);
  if (status != 0) {
    std::lock_guard<std::mutex> guard(ptxasLock);
    if (status == 127)
      userError("could not run ", ptxas);
    SINTER_ASSERT(false, "ptxas -arch=", arch, " failed:\n", readFile(log));
  }
  std::string bytes = readFile(output);
  if (!key.empty())
    cache->store(key, bytes);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

} // namespace sinter::codegen::cuda
