// The sinter subcommands. Each file adds one subcommand to the app and returns the action that
// runs it once the command line has parsed; main.cpp maps the errors an action throws to exit
// codes. A new subcommand is a new file and one line in main.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>

namespace sinter::cli {

/// Thrown by a command whose checks ran and failed (`sinter verify`: outputs diverge). main.cpp
/// prints the message and exits with kExitChecksFailed, apart from user (1) and internal (2) errors.
class ChecksFailed : public std::runtime_error {
public:
  explicit ChecksFailed(const std::string &message) : std::runtime_error(message) {}
};
inline constexpr int kExitChecksFailed = 3;

struct Command {
  CLI::App *app;             ///< the subcommand, to ask whether it was given
  std::function<void()> run; ///< runs it; throws UserError / InternalError
};

/// `sinter inspect MODEL [--json] [--plan] [--ir] [--full-constants] [--shape ..] [--dim ..]`
Command addInspectCommand(CLI::App &parent);
/// `sinter compile MODEL.onnx -o MODEL.so [--target cuda|cpu] [--arch ..] [--cpu ..] ...`
Command addCompileCommand(CLI::App &parent);
/// `sinter run MODEL --reference [INPUTS..] [--input NAME=FILE ..] [-o OUT.npz | --output-dir DIR]`
Command addRunCommand(CLI::App &parent);
/// `sinter bench MODEL.so [--warmup N] [--iterations N] [--threads N] [--device N] [--json]`
Command addBenchCommand(CLI::App &parent);
/// `sinter verify MODEL.onnx [ARTIFACT.so] [--against ..|--golden DIR] [--random N] [--bisect] ...`
Command addVerifyCommand(CLI::App &parent);

} // namespace sinter::cli
