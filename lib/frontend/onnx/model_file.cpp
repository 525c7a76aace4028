// Parsing protobuf messages from model files and from memory. Protobuf never sees untrusted bytes without
// a total-bytes limit, and every failure becomes a UserError naming the file.
#include "onnx_internal.h"

#include "sinter/support/error.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <system_error>
#include <unistd.h>

namespace sinter::onnx::detail {

namespace fs = std::filesystem;

// Protobuf's limit on one message; models above it keep their weights as external data.
static constexpr uint64_t kMaxMessageBytes = uint64_t(INT_MAX);

namespace {

/// The checks every model file gets: it exists, is a regular file, is not empty and fits
/// protobuf's 2 GiB limit. Throws UserError naming the path.
void checkModelFile(const std::string &path) {
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
}

/// Parses from `stream` with the total-bytes limit; false when the bytes do not parse.
bool parseFrom(google::protobuf::io::ZeroCopyInputStream &stream,
               google::protobuf::MessageLite &message) {
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(int(kMaxMessageBytes));
  try {
    return message.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  } catch (const std::exception &) {
    return false;
  }
}

[[noreturn]] void notParsed(const std::string &displayName, const std::string &what) {
  userError(displayName, ": not a valid ", what,
            " (the protobuf does not parse: the file is truncated, corrupt, or not an ", what, ")");
}

} // namespace

void parseMessageFile(const std::string &path, google::protobuf::MessageLite &message,
                      const std::string &what) {
  checkModelFile(path);
  int descriptor = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0)
    userError(path, ": cannot open the file (", std::strerror(errno), ")");
  // Read in blocks straight into the message: the file's bytes are never held whole (for a
  // model of large weights, that saved a copy of them and ~0.1 s of ResNet-50's 0.25 s import).
  google::protobuf::io::FileInputStream stream(descriptor, 1 << 20);
  stream.SetCloseOnDelete(true);
  bool parsed = parseFrom(stream, message);
  if (stream.GetErrno() != 0)
    userError(path, ": cannot read the file (", std::strerror(stream.GetErrno()), ")");
  if (!parsed)
    notParsed(path, what);
}

void parseMessage(const std::string &bytes, google::protobuf::MessageLite &message,
                  const std::string &displayName, const std::string &what) {
  if (bytes.empty())
    userError(displayName, ": the file is empty");
  if (bytes.size() > kMaxMessageBytes)
    userError(displayName, ": ", bytes.size(), " bytes is more than protobuf's 2 GiB limit");
  google::protobuf::io::ArrayInputStream raw(bytes.data(), int(bytes.size()));
  if (!parseFrom(raw, message))
    notParsed(displayName, what);
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
