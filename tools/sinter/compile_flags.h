// The compile flags of `sinter compile`, shared with the commands that compile on the way
// (`sinter verify`): one struct, one function that adds them to a subcommand and one that turns
// them into CompileOptions, so every command that compiles takes the same flags with the same
// meaning and the same errors.
#pragma once

#include "options.h"

#include "sinter/compiler/compiler.h"

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

namespace sinter::cli {

struct CompileFlags {
  std::string target = "cuda";
  std::string archs = "sm_80,sm_90";
  std::string cpu = "x86-64-v2,x86-64-v3,x86-64-v4";
  std::string gpuCodegen = "cuda-c";
  std::string precision = "fp32";
  std::string emitSource;
  std::string fp32Contractions = "tensor-core";
  std::string tensorCoreTile;
  std::string wgmma = "on";
  std::string streamK = "auto";
  std::string normInputs = "auto";
  std::string tensorCoreEpilogue = "rows";
  std::string depthwiseKernel = "direct";
  std::string dumpIrAfter;
  std::vector<std::string> disabledPasses;
  /// How the toolchain work runs, not what it makes (describeCompileFlags leaves them out):
  /// -j (0: the host's cores), --no-cache, --cache-dir.
  unsigned jobs = 0;
  bool noCache = false;
  std::string cacheDirectory;
  ShapeFlags shapes;
  BindFlags bindings;
};

/// Adds the code-generation flags (--target ... --disable-pass) and --shape, --dim, --bind-input.
void addCompileFlags(CLI::App &command, CompileFlags &flags);
/// The compiler options the flags ask for (progress reports to the log). Bad values are
/// UserErrors naming the flag. Bound inputs are filled by the caller from the import options.
CompileOptions compileOptionsFrom(const CompileFlags &flags);
/// The code-generation flags as (flag, value) pairs in a fixed order, every one included, e.g.
/// {"--target", "cpu"}; --disable-pass appears once per pass. For records (golden manifests).
std::vector<std::pair<std::string, std::string>> describeCompileFlags(const CompileFlags &flags);

} // namespace sinter::cli
