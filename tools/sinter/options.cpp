#include "options.h"

#include "sinter/io/npy.h"
#include "sinter/support/error.h"

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <set>

namespace sinter::cli {
namespace {

/// Splits "NAME=VALUE" at the first or last '='; both sides must be non-empty except VALUE when
/// `allowEmptyValue`.
std::pair<std::string, std::string> splitAssignment(const std::string &text, const char *flag,
                                                    const char *form, bool atLast,
                                                    bool allowEmptyValue = false) {
  size_t equals = atLast ? text.rfind('=') : text.find('=');
  if (equals == std::string::npos || equals == 0 ||
      (!allowEmptyValue && equals + 1 == text.size()))
    userError(flag, " expects ", form, ", got '", text, "'");
  return {text.substr(0, equals), text.substr(equals + 1)};
}


std::string lowercase(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

} // namespace

std::optional<int64_t> parseNonNegative(std::string_view text) {
  int64_t value = 0;
  auto result = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || result.ec != std::errc() || result.ptr != text.data() + text.size() ||
      value < 0)
    return std::nullopt;
  return value;
}

void addShapeFlags(CLI::App &command, ShapeFlags &flags) {
  addRepeatableOption(command, "--shape", flags.shapes,
                      "Fix an input's whole shape: NAME=1x3x224x224 (repeatable)", "NAME=DIMS");
  addRepeatableOption(command, "--dim", flags.dims,
                      "Bind a symbolic dim everywhere: SYMBOL=N (repeatable)", "SYMBOL=N");
}

void addBindFlags(CLI::App &command, BindFlags &flags) {
  addRepeatableOption(command, "--bind-input", flags,
                      "Give a graph input its value at compile time: NAME=FILE (.npy or "
                      "TensorProto .pb); it becomes a constant and leaves the signature "
                      "(repeatable)",
                      "NAME=FILE");
}

void parseBindFlags(const BindFlags &flags, onnx::ImportOptions &options) {
  for (const std::string &entry : flags) {
    auto [name, path] = splitAssignment(entry, "--bind-input", "NAME=FILE", /*atLast=*/false);
    std::string origin = "--bind-input " + entry;
    if (options.boundInputs.count(name))
      userError("input '", name, "' is bound twice: ", options.boundInputs[name].origin, " and ",
                origin);
    Tensor value;
    try {
      value = loadTensorFile(path);
    } catch (const UserError &error) {
      userError(origin, ": ", error.what());
    }
    options.boundInputs[name] = {std::move(value), origin};
  }
}

std::vector<onnx::ModelSummary::Port> unboundPorts(const std::vector<onnx::ModelSummary::Port> &ports,
                                                   const onnx::ImportOptions &options) {
  for (const auto &[name, bound] : options.boundInputs) {
    bool found = false;
    for (const auto &port : ports)
      found |= port.name == name;
    if (!found)
      userError(bound.origin, ": the model has no graph input named '", name, "'; ",
                describeExpectedInputs(ports));
  }
  std::vector<onnx::ModelSummary::Port> unbound;
  for (const auto &port : ports)
    if (!options.boundInputs.count(port.name))
      unbound.push_back(port);
  return unbound;
}

CLI::Option *addRepeatableOption(CLI::App &command, const std::string &name,
                                 std::vector<std::string> &values, const std::string &help,
                                 const std::string &typeName) {
  // One value per occurrence, so "--input x=a.npy model.onnx" leaves model.onnx positional.
  return command.add_option(name, values, help)
      ->type_name(typeName)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

std::vector<int64_t> parseDims(const std::string &text, const std::string &context) {
  std::vector<int64_t> dims;
  if (text.empty() || text == "scalar")
    return dims;
  size_t start = 0;
  while (true) {
    size_t end = text.find_first_of("x,", start);
    std::string part = text.substr(start, end == std::string::npos ? std::string::npos
                                                                    : end - start);
    std::optional<int64_t> dim = parseNonNegative(part);
    if (!dim)
      userError(context, ": '", part, "' is not a dimension (a non-negative integer); write "
                "dims like 1x3x224x224");
    dims.push_back(*dim);
    if (end == std::string::npos)
      return dims;
    start = end + 1;
  }
}

onnx::ImportOptions parseShapeFlags(const ShapeFlags &flags) {
  onnx::ImportOptions options;
  for (const std::string &entry : flags.shapes) {
    auto [name, dims] = splitAssignment(entry, "--shape", "NAME=DIMS (e.g. x=1x3x224x224)",
                                        /*atLast=*/true, /*allowEmptyValue=*/true);
    if (options.inputShapes.count(name))
      userError("--shape gives input '", name, "' twice");
    options.inputShapes[name] = parseDims(dims, "--shape " + entry);
  }
  for (const std::string &entry : flags.dims) {
    auto [symbol, value] = splitAssignment(entry, "--dim", "SYMBOL=N (e.g. batch=8)", true);
    std::optional<int64_t> size = parseNonNegative(value);
    if (!size)
      userError("--dim ", entry, ": '", value, "' is not a non-negative integer");
    if (options.dimBindings.count(symbol))
      userError("--dim binds '", symbol, "' twice");
    options.dimBindings[symbol] = *size;
  }
  return options;
}

ModelKind classifyModelFile(const std::string &path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    userError("no such file: '", path, "'");
  if (std::filesystem::is_directory(path, error))
    userError("'", path, "' is a directory, not a model file");
  std::string extension = lowercase(std::filesystem::path(path).extension().string());
  return extension == ".so" ? ModelKind::Artifact : ModelKind::Onnx;
}

Tensor loadTensorFile(const std::string &path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error))
    userError("no such file: '", path, "'");
  std::string extension = lowercase(std::filesystem::path(path).extension().string());
  if (extension == ".npy")
    return io::readNpy(path);
  if (extension == ".pb")
    return onnx::readTensorProtoFile(path);
  if (extension == ".npz")
    userError("'", path, "' is an .npz archive; give each input as its own .npy or .pb file");
  userError("'", path, "': unknown tensor file type '", extension,
            "' (inputs are .npy or ONNX TensorProto .pb files)");
}

std::string describeExpectedInputs(const std::vector<onnx::ModelSummary::Port> &expected) {
  if (expected.empty())
    return "the model has no inputs";
  std::string text = "expected inputs: ";
  for (size_t i = 0; i < expected.size(); ++i)
    text += (i ? ", " : "") + expected[i].name + ": " + expected[i].type;
  return text;
}

std::vector<InputFile> pairInputFiles(const std::vector<onnx::ModelSummary::Port> &expected,
                                      const std::vector<std::string> &named,
                                      const std::vector<std::string> &positional) {
  std::map<std::string, InputFile> byName;
  auto isExpected = [&](const std::string &name) {
    for (const auto &port : expected)
      if (port.name == name)
        return true;
    return false;
  };
  for (const std::string &entry : named) {
    auto [name, path] = splitAssignment(entry, "--input", "NAME=FILE", /*atLast=*/false);
    if (!isExpected(name))
      userError("the model has no input named '", name, "' (--input ", entry, "); ",
                describeExpectedInputs(expected));
    InputFile file{name, path, "--input " + entry};
    if (!byName.emplace(name, file).second)
      userError("input '", name, "' is given twice: ", byName[name].origin, " and ", file.origin);
  }
  if (positional.size() > expected.size())
    userError(positional.size(), " input files given but the model has ", expected.size(),
              " input", expected.size() == 1 ? "" : "s", "; ", describeExpectedInputs(expected));
  for (size_t i = 0; i < positional.size(); ++i) {
    const std::string &name = expected[i].name;
    InputFile file{name, positional[i], "positional input #" + std::to_string(i + 1) + " (" +
                                            positional[i] + ")"};
    if (!byName.emplace(name, file).second)
      userError("input '", name, "' is given twice: ", byName[name].origin, " and ", file.origin);
  }
  std::vector<InputFile> files;
  std::vector<std::string> missing;
  for (const auto &port : expected) {
    auto found = byName.find(port.name);
    if (found == byName.end())
      missing.push_back("'" + port.name + "' (" + port.type + ")");
    else
      files.push_back(found->second);
  }
  if (!missing.empty()) {
    std::string list;
    for (size_t i = 0; i < missing.size(); ++i)
      list += (i ? ", " : "") + missing[i];
    userError("missing input", missing.size() == 1 ? " " : "s ", list,
              "; give each as --input NAME=FILE or positionally in input order; ",
              describeExpectedInputs(expected));
  }
  return files;
}

void checkInputAgainstType(const InputFile &input, const Tensor &tensor, const std::string &type,
                           std::map<std::string, std::pair<int64_t, std::string>> &symbols) {
  size_t open = type.find('[');
  if (open == std::string::npos || type.back() != ']')
    return;
  std::optional<DType> dtype = dtypeFromName(std::string_view(type).substr(0, open));
  if (!dtype)
    return;
  std::string given = tensor.type().str();
  std::string where = "input '" + input.name + "' (" + input.path + ")";
  if (*dtype != tensor.dtype())
    userError(where, " has dtype ", dtypeName(tensor.dtype()), " but the model expects ", type,
              "; convert the file, e.g. array.astype(...)");
  std::vector<std::string> dims;
  std::string inside = type.substr(open + 1, type.size() - open - 2);
  for (size_t start = 0; !inside.empty();) {
    size_t comma = inside.find(',', start);
    dims.push_back(inside.substr(start, comma == std::string::npos ? std::string::npos
                                                                   : comma - start));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (static_cast<int>(dims.size()) != tensor.rank())
    userError(where, " has shape ", given, " (rank ", tensor.rank(), ") but the model expects ",
              type, " (rank ", dims.size(), ")");
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t size = tensor.dims()[i];
    if (std::optional<int64_t> fixed = parseNonNegative(dims[i])) {
      if (*fixed != size)
        userError(where, " has shape ", given, " but the model expects ", type, " (dim ", i,
                  " must be ", *fixed, ")");
    } else if (dims[i] != "?") {
      auto [entry, inserted] =
          symbols.emplace(dims[i], std::make_pair(size, "input '" + input.name + "'"));
      if (!inserted && entry->second.first != size)
        userError(where, " has shape ", given, ", so dim '", dims[i], "' would be ", size,
                  ", but ", entry->second.second, " makes it ", entry->second.first);
    }
  }
}

std::string humanBytes(int64_t bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f %s", value, units[unit]);
  return buffer;
}

std::string humanCount(int64_t count) {
  static const char *suffixes[] = {"", "K", "M", "G", "T"};
  if (count < 1000)
    return std::to_string(count);
  double value = static_cast<double>(count);
  int suffix = 0;
  while (value >= 1000 && suffix < 4) {
    value /= 1000;
    ++suffix;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f%s", value, suffixes[suffix]);
  return buffer;
}

} // namespace sinter::cli
