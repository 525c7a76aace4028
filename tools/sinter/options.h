// Pieces shared by the sinter subcommands: --shape/--dim parsing into import options, model file
// classification, tensor file loading, pairing input files with a model's inputs, and
// human-readable numbers.
#pragma once

#include "sinter/frontend/onnx.h"
#include "sinter/ir/tensor.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sinter::cli {

/// --shape NAME=1x3x224x224 and --dim SYMBOL=N, as given on the command line (repeatable).
struct ShapeFlags {
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
};

/// --bind-input NAME=FILE, as given on the command line (repeatable).
using BindFlags = std::vector<std::string>;

/// Adds an option that takes one value per occurrence and may be repeated.
CLI::Option *addRepeatableOption(CLI::App &command, const std::string &name,
                                 std::vector<std::string> &values, const std::string &help,
                                 const std::string &typeName);
/// Adds --shape and --dim to a subcommand.
void addShapeFlags(CLI::App &command, ShapeFlags &flags);
/// Parses the flags into importer options; malformed or repeated entries are UserErrors.
onnx::ImportOptions parseShapeFlags(const ShapeFlags &flags);
/// A non-negative decimal integer, or nullopt.
std::optional<int64_t> parseNonNegative(std::string_view text);
/// Adds --bind-input to a subcommand.
void addBindFlags(CLI::App &command, BindFlags &flags);
/// Reads each --bind-input file into `options.boundInputs`; a malformed entry, a name given twice
/// and an unreadable file are UserErrors naming the entry. The importer checks names and types.
void parseBindFlags(const BindFlags &flags, onnx::ImportOptions &options);
/// The model's inputs less the bound ones (what is left to feed); a bound name that is not an
/// input is a UserError.
std::vector<onnx::ModelSummary::Port> unboundPorts(const std::vector<onnx::ModelSummary::Port> &ports,
                                                   const onnx::ImportOptions &options);
/// "1x3x224x224" (or "1,3,224,224"; "" is a scalar) -> {1, 3, 224, 224}.
std::vector<int64_t> parseDims(const std::string &text, const std::string &context);

/// What a model path names. Later: compiled artifacts (model.so).
enum class ModelKind { Onnx, Artifact };
/// Checks that the file exists and says what kind it is (by extension; unknown ones are ONNX).
ModelKind classifyModelFile(const std::string &path);

/// Reads a tensor from .npy or ONNX TensorProto (.pb) by extension.
Tensor loadTensorFile(const std::string &path);

/// A tensor file paired with the model input it feeds.
struct InputFile {
  std::string name;   ///< the model's input name
  std::string path;   ///< the file
  std::string origin; ///< how it was given, for messages: "--input x=a.npy" or "positional #1"
};

/// Pairs `--input NAME=FILE` flags and positional files (which follow the model's input order)
/// with the model's inputs. Unknown names, an input given twice, too many positional files and
/// missing inputs are UserErrors listing the expected inputs with their types.
std::vector<InputFile> pairInputFiles(const std::vector<onnx::ModelSummary::Port> &expected,
                                      const std::vector<std::string> &named,
                                      const std::vector<std::string> &positional);

/// Checks a tensor against a model input type as `TensorType::str()` prints it
/// ("f32[batch,3,224,224]"): the dtype, the rank, static dims, and that each symbol has one size
/// across all inputs (`symbols` maps each symbol to its size and what fixed it, e.g. "input 'x'"
/// or "--dim batch=4"). Types sinter cannot parse are not checked. Mismatches are UserErrors
/// naming the input and the file.
void checkInputAgainstType(const InputFile &input, const Tensor &tensor, const std::string &type,
                           std::map<std::string, std::pair<int64_t, std::string>> &symbols);

/// "expected inputs: x: f32[batch,3], mask: bool[batch]".
std::string describeExpectedInputs(const std::vector<onnx::ModelSummary::Port> &expected);

/// 1536 -> "1.5 KiB"; below 1024 -> "N B".
std::string humanBytes(int64_t bytes);
/// 25557032 -> "25.6M"; below 1000 -> "N".
std::string humanCount(int64_t count);

} // namespace sinter::cli
