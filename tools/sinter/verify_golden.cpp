#include "verify_golden.h"

#include "json_value.h"

#include "sinter/io/json.h"
#include "sinter/io/npy.h"
#include "sinter/support/error.h"

#include <filesystem>

#include <unistd.h>

namespace sinter::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char *kFormat = "sinter-golden";
constexpr int kFormatVersion = 1;

bool isGoldenFolder(const fs::path &folder) {
  std::error_code error;
  fs::path manifest = folder / "manifest.json";
  if (!fs::is_regular_file(manifest, error))
    return false;
  try {
    JsonValue root = parseJson(io::readFileBytes(manifest.string()), manifest.string());
    const JsonValue *format = root.find("format");
    return format && format->kind() == JsonValue::Kind::String && format->asString("format") == kFormat;
  } catch (const UserError &) {
    return false;
  }
}

std::string manifestText(const GoldenRecord &record) {
  io::JsonWriter json;
  json.beginObject();
  json.key("format").value(kFormat);
  json.key("format_version").value(kFormatVersion);
  json.key("sinter_version").value(record.sinterVersion);
  json.key("model").beginObject();
  json.key("file").value(record.modelFile);
  json.key("sha256").value(record.modelSha256);
  json.endObject();
  json.key("truth").value(record.truth);
  json.key("target").value(record.target);
  json.key("cpu_level").value(record.cpuLevel);
  json.key("storage_precision").value(record.storagePrecision);
  json.key("compile_flags").beginArray();
  for (const auto &[flag, value] : record.compileFlags)
    json.beginArray().value(flag).value(value).endArray();
  json.endArray();
  json.key("bound_inputs").beginArray();
  for (const auto &[name, hash] : record.boundInputs)
    json.beginObject().key("name").value(name).key("sha256").value(hash).endObject();
  json.endArray();
  json.key("inputs").beginArray();
  for (const auto &port : record.inputs)
    json.beginObject().key("name").value(port.name).key("type").value(port.type).endObject();
  json.endArray();
  json.key("outputs").beginArray();
  for (const auto &port : record.outputs) {
    json.beginObject().key("name").value(port.name).key("type").value(port.type);
    auto tolerance = record.tolerances.find(port.name);
    if (tolerance != record.tolerances.end())
      json.key("rtol").value(tolerance->second.rtol).key("atol").value(tolerance->second.atol);
    json.endObject();
  }
  json.endArray();
  json.key("cases").beginArray();
  for (const VerifyCase &data : record.cases)
    json.value(data.name);
  json.endArray();
  json.endObject();
  return json.str() + "\n";
}

std::vector<onnx::ModelSummary::Port> readPorts(const JsonValue &root, const char *key, const std::string &where,
                                                GoldenRecord *tolerances) {
  std::vector<onnx::ModelSummary::Port> ports;
  for (const JsonValue &entry : root.at(key, where).asArray(where + " \"" + key + "\"")) {
    std::string context = where + " \"" + key + "\" entry";
    onnx::ModelSummary::Port port{entry.at("name", context).asString(context + " name"),
                                  entry.at("type", context).asString(context + " type")};
    if (tolerances && entry.find("rtol") && entry.find("atol"))
      tolerances->tolerances[port.name] = {entry.at("rtol", context).asNumber(context + " rtol"),
                                           entry.at("atol", context).asNumber(context + " atol")};
    ports.push_back(port);
  }
  return ports;
}

} // namespace

void writeGolden(const std::string &folder, const GoldenRecord &record, bool force) {
  std::error_code error;
  fs::path target(folder);
  bool exists = fs::exists(target, error);
  if (exists && !force)
    userError("--write-golden: '", folder, "' exists; pass --force to replace it");
  if (exists && !isGoldenFolder(target))
    userError("--write-golden: '", folder, "' exists and is not a golden folder (no sinter manifest.json "
              "in it); sinter replaces only golden folders, even with --force");
  fs::path partial = target;
  partial += ".partial-" + std::to_string(::getpid());
  fs::remove_all(partial, error);
  if (!fs::create_directories(partial, error) || error)
    userError("--write-golden: cannot create '", partial.string(), "': ", error.message());
  try {
    for (const VerifyCase &data : record.cases) {
      fs::path set = partial / data.name;
      fs::create_directories(set);
      for (size_t k = 0; k < data.inputs.size(); ++k)
        onnx::writeTensorProtoFile((set / ("input_" + std::to_string(k) + ".pb")).string(), data.inputs[k]);
      for (size_t k = 0; k < data.outputs.size(); ++k)
        onnx::writeTensorProtoFile((set / ("output_" + std::to_string(k) + ".pb")).string(), data.outputs[k]);
    }
    io::writeFileBytes((partial / "manifest.json").string(), manifestText(record));
  } catch (...) {
    fs::remove_all(partial, error);
    throw;
  }
  if (exists)
    fs::remove_all(target, error);
  fs::rename(partial, target, error);
  if (error)
    userError("--write-golden: cannot move '", partial.string(), "' to '", folder, "': ", error.message());
}

GoldenRecord readGolden(const std::string &folder) {
  std::error_code error;
  fs::path manifest = fs::path(folder) / "manifest.json";
  if (!fs::is_directory(folder, error))
    userError("--golden '", folder, "' is not a folder");
  if (!fs::exists(manifest, error))
    userError("--golden '", folder, "' has no manifest.json; write one with sinter verify --write-golden ", folder);
  std::string where = manifest.string();
  JsonValue root = parseJson(io::readFileBytes(where), where);
  const JsonValue *format = root.find("format");
  if (!format || format->kind() != JsonValue::Kind::String || format->asString(where) != kFormat)
    userError(where, " is not a sinter golden manifest (its \"format\" is not \"", kFormat, "\")");
  int version = int(root.at("format_version", where).asNumber(where + " format_version"));
  if (version != kFormatVersion)
    userError(where, " has format_version ", version, "; this sinter reads version ", kFormatVersion);
  GoldenRecord record;
  record.sinterVersion = root.at("sinter_version", where).asString(where + " sinter_version");
  const JsonValue &model = root.at("model", where);
  record.modelFile = model.at("file", where + " model").asString(where + " model file");
  record.modelSha256 = model.at("sha256", where + " model").asString(where + " model sha256");
  record.truth = root.at("truth", where).asString(where + " truth");
  record.target = root.at("target", where).asString(where + " target");
  record.cpuLevel = root.at("cpu_level", where).asString(where + " cpu_level");
  record.storagePrecision = root.at("storage_precision", where).asString(where + " storage_precision");
  for (const JsonValue &pair : root.at("compile_flags", where).asArray(where + " compile_flags")) {
    const auto &items = pair.asArray(where + " compile_flags entry");
    if (items.size() != 2)
      userError(where, ": a compile_flags entry should be [flag, value]");
    record.compileFlags.emplace_back(items[0].asString(where + " compile flag"), items[1].asString(where + " compile flag value"));
  }
  for (const JsonValue &entry : root.at("bound_inputs", where).asArray(where + " bound_inputs"))
    record.boundInputs.emplace_back(entry.at("name", where + " bound input").asString(where + " bound input name"),
                                    entry.at("sha256", where + " bound input").asString(where + " bound input sha256"));
  record.inputs = readPorts(root, "inputs", where, nullptr);
  record.outputs = readPorts(root, "outputs", where, &record);
  for (const JsonValue &name : root.at("cases", where).asArray(where + " cases")) {
    VerifyCase data;
    data.name = name.asString(where + " case name");
    if (data.name.empty() || data.name.find('/') != std::string::npos || data.name.find("..") != std::string::npos)
      userError(where, ": case name '", data.name, "' is not a folder name inside the golden folder");
    fs::path set = fs::path(folder) / data.name;
    auto load = [&](const std::string &file) {
      fs::path path = set / file;
      if (!fs::exists(path, error))
        userError("golden folder '", folder, "' lacks ", data.name, "/", file, " (manifest.json lists it)");
      return onnx::readTensorProtoFile(path.string());
    };
    for (size_t k = 0; k < record.inputs.size(); ++k)
      data.inputs.push_back(load("input_" + std::to_string(k) + ".pb"));
    for (size_t k = 0; k < record.outputs.size(); ++k)
      data.outputs.push_back(load("output_" + std::to_string(k) + ".pb"));
    record.cases.push_back(std::move(data));
  }
  if (record.cases.empty())
    userError(where, " lists no cases");
  return record;
}

} // namespace sinter::cli
