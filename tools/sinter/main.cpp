// The sinter command line: global options, the subcommands (one file each, see commands.h), and
// the exit-code contract of docs/cli.md:
//   0  success
//   1  user error: a bad command line (CLI11 parse errors included) or a bad model or input file
//   2  internal error (a broken invariant) or any other exception
//   3  checks ran and failed (`sinter verify`: outputs diverge)
// Every error prints one line "sinter: error: <message>" to stderr; logs go to stderr too, so
// stdout carries only the command's output (e.g. `inspect --json`).
#include "commands.h"

#include "sinter/support/error.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <new>

#ifndef SINTER_VERSION
#define SINTER_VERSION "unknown"
#endif

namespace {

void configureLogging(int verbosity, bool quiet) {
  auto logger = spdlog::stderr_color_st("sinter");
  logger->set_pattern("sinter: %^%l%$: %v");
  if (quiet)
    logger->set_level(spdlog::level::err);
  else if (verbosity >= 2)
    logger->set_level(spdlog::level::trace);
  else if (verbosity == 1)
    logger->set_level(spdlog::level::debug);
  else
    logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

int fail(int code, const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "sinter: error: %s\n", message.c_str());
  return code;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"sinter: an ahead-of-time compiler for ONNX models", "sinter"};
  app.require_subcommand(1);
  app.fallthrough(); // global flags may follow the subcommand: `sinter run ... -v`
  int verbosity = 0;
  bool quiet = false;
  app.add_flag("-v,--verbose", verbosity, "More log output on stderr (-vv for the most)");
  app.add_flag("-q,--quiet", quiet, "Log only errors");
  app.set_version_flag("--version", "sinter " SINTER_VERSION);

  std::vector<sinter::cli::Command> commands = {
      sinter::cli::addInspectCommand(app),
      sinter::cli::addRunCommand(app),
      sinter::cli::addCompileCommand(app),
      sinter::cli::addBenchCommand(app),
      sinter::cli::addVerifyCommand(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &error) {
    if (error.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success))
      return app.exit(error); // --help, --version
    if (argc == 1) {
      std::fputs(app.help().c_str(), stderr);
      return 1;
    }
    std::string help = "sinter --help";
    for (const CLI::App *command : app.get_subcommands())
      help = "sinter " + command->get_name() + " --help";
    return fail(1, std::string(error.what()) + " (see '" + help + "')");
  }
  configureLogging(verbosity, quiet);

  try {
    for (const sinter::cli::Command &command : commands)
      if (command.app->parsed())
        command.run();
    std::fflush(stdout);
    return 0;
  } catch (const sinter::cli::ChecksFailed &error) {
    std::fflush(stdout);
    std::fprintf(stderr, "sinter: %s\n", error.what());
    return sinter::cli::kExitChecksFailed;
  } catch (const sinter::UserError &error) {
    return fail(1, error.what());
  } catch (const sinter::InternalError &error) {
    return fail(2, error.what());
  } catch (const std::bad_alloc &) {
    return fail(2, "out of memory");
  } catch (const std::exception &error) {
    return fail(2, std::string("unexpected error: ") + error.what());
  } catch (...) {
    return fail(2, "unexpected error of unknown type");
  }
}
