// Reading model files and parsing protobuf messages. Protobuf never sees untrusted bytes without
// a total-bytes limit, and every failure becomes a UserError naming the file.
#include "onnx_internal.h"

#include "sinter/support/error.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace sinter::onnx::detail {

namespace fs = std::filesystem;

// Protobuf's limit on one message; models above it keep their weights as external data.
static constexpr uint64_t kMaxMessageBytes = uint64_t(INT_MAX);

std::string readModelFile(const std::string &path) {
  std::error_code error;
  fs::file_status status = fs::status(path, error);
  if (error || !fs::exists(status))
    userError(path, ": no such file");
  if (fs::is_directory(status))
    userError(path, ": is a directory, not a file");
  if (!fs::is_regular_file(status))
    userError(path, ": is not a regular file");
  uint64_t size = fs::file_size(path, error);
  if (error)
    userError(path, ": cannot read the file size (", error.message(), ")");
  if (size == 0)
    userError(path, ": the file is empty");
  if (size > kMaxMessageBytes)
    userError(path, ": the file is ", size, " bytes; protobuf cannot read more than 2 GiB in one ",
              "message (store large weights as external data)");
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    userError(path, ": cannot open the file");
  std::string bytes(size, '\0');
  stream.read(bytes.data(), std::streamsize(size));
  if (stream.gcount() != std::streamsize(size))
    userError(path, ": cannot read the file");
  return bytes;
}

void parseMessage(const std::string &bytes, google::protobuf::MessageLite &message,
                  const std::string &displayName, const std::string &what) {
  if (bytes.empty())
    userError(displayName, ": the file is empty");
  if (bytes.size() > kMaxMessageBytes)
    userError(displayName, ": ", bytes.size(), " bytes is more than protobuf's 2 GiB limit");
  google::protobuf::io::ArrayInputStream raw(bytes.data(), int(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(int(kMaxMessageBytes));
  bool parsed = false;
  try {
    parsed = message.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  } catch (const std::exception &) {
    parsed = false;
  }
  if (!parsed)
    userError(displayName, ": not a valid ", what,
              " (the protobuf does not parse: the file is truncated, corrupt, or not an ", what,
              ")");
}

std::string canonicalDomain(const std::string &domain) {
  return domain.empty() ? std::string("ai.onnx") : domain;
}

std::optional<int64_t> domainOpset(const ::onnx::ModelProto &model, const std::string &domain) {
  std::string wanted = canonicalDomain(domain);
  for (const auto &entry : model.opset_import())
    if (canonicalDomain(entry.domain()) == wanted)
      return entry.version();
  return std::nullopt;
}

std::optional<int64_t> aiOnnxOpset(const ::onnx::ModelProto &model) {
  return domainOpset(model, "");
}

} // namespace sinter::onnx::detail
