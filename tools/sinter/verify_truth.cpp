#include "verify_truth.h"

#include "sinter/io/npy.h"
#include "sinter/support/error.h"
#include "sinter/support/temporary_folder.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace sinter::cli {
namespace {

namespace fs = std::filesystem;

// Runs the model with onnxruntime's CPU provider, its graph optimisations off (the plain
// semantics): argv[1:4] = model, input folder, output folder.
constexpr const char *kOnnxruntimeScript = R"(import sys
import numpy as np
import onnxruntime as ort
model, inputs, outputs = sys.argv[1:4]
options = ort.SessionOptions()
options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
feeds = {port.name: np.load(f"{inputs}/input_{k}.npy") for k, port in enumerate(session.get_inputs())}
for k, value in enumerate(session.run(None, feeds)):
    np.save(f"{outputs}/output_{k}.npy", np.asarray(value))
)";

} // namespace

int runProgram(const std::vector<std::string> &argv, bool quiet) {
  std::vector<char *> arguments;
  for (const std::string &argument : argv)
    arguments.push_back(const_cast<char *>(argument.c_str()));
  arguments.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  } else {
    posix_spawn_file_actions_adddup2(&actions, 2, 1); // keep sinter's stdout for its report
  }
  pid_t pid = 0;
  int spawned = posix_spawnp(&pid, arguments[0], &actions, nullptr, arguments.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    return 127;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return 127;
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::vector<std::string> onnxruntimeCommand() {
  std::string python = "python3";
  if (const char *chosen = std::getenv("SINTER_PYTHON"); chosen && *chosen)
    python = chosen;
  else if (const char *venv = std::getenv("VIRTUAL_ENV"); venv && *venv)
    python = (fs::path(venv) / "bin" / "python").string();
  if (runProgram({python, "-c", "import numpy, onnxruntime"}, /*quiet=*/true) != 0)
    userError("--against onnxruntime needs a Python that imports numpy and onnxruntime; '", python,
              "' does not. Install them (pip install onnxruntime numpy), point SINTER_PYTHON at a Python "
              "that has them, or give --against-command CMD");
  return {python, "-c", kOnnxruntimeScript};
}

std::vector<std::string> shellCommand(const std::string &command) {
  return {"/bin/sh", "-c", command + " \"$@\"", "sinter-verify"};
}

std::vector<Tensor> runTruthCommand(const std::vector<std::string> &argv, const std::string &model,
                                    const std::vector<const Tensor *> &inputs, size_t outputCount,
                                    const std::string &description) {
  TemporaryFolder folder("sinter-verify-truth");
  fs::path inputDir = folder.path() / "inputs", outputDir = folder.path() / "outputs";
  fs::create_directories(inputDir);
  fs::create_directories(outputDir);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k]->dtype() == DType::BFloat16)
      userError(description, " is fed .npy files, and bfloat16 has no numpy dtype: verify bfloat16 inputs "
                "against the reference evaluator or golden files");
    io::writeNpy((inputDir / ("input_" + std::to_string(k) + ".npy")).string(), *inputs[k]);
  }
  std::vector<std::string> command = argv;
  command.push_back(fs::absolute(model).string());
  command.push_back(inputDir.string());
  command.push_back(outputDir.string());
  spdlog::debug("running the truth: {}", description);
  int status = runProgram(command);
  if (status != 0)
    userError(description, " failed (exit status ", status, "); its messages are above");
  std::vector<Tensor> outputs;
  for (size_t k = 0; k < outputCount; ++k) {
    fs::path file = outputDir / ("output_" + std::to_string(k) + ".npy");
    std::error_code error;
    if (!fs::exists(file, error))
      userError(description, " wrote no ", file.filename().string(), " (the model has ", outputCount,
                " output", outputCount == 1 ? "" : "s", "; a truth command writes output_K.npy for each)");
    outputs.push_back(io::readNpy(file.string()));
  }
  return outputs;
}

} // namespace sinter::cli
