#include "sinter/codegen/backend/backend.h"

#include "sinter/support/error.h"

#include <cctype>
#include <cstdio>
#include <string_view>

namespace sinter::codegen {

LoweredGroup lowerForBackend(const KernelGroup &group, const BackendCapabilities &capabilities) {
  LoweredGroup lowered;
  lowered.kernel = lowerGroup(group);
  if (capabilities.describesFusedAttention)
    lowered.attention = lowerFusedAttention(group);
  lowered.contraction = lowerContraction(group);
  lowered.pooling = lowerPooling(group);
  lowered.concatenation = describeConcatenation(group);
  for (const Value *input : group.inputs)
    lowered.constantInputs.push_back(input->isConstant() ? &input->constant() : nullptr);
  for (const Node *node : group.nodes)
    lowered.ops.push_back(node->kind());
  auto bytesOf = [](const Value *value) {
    return double(*elementCount(value->shape()) * dtypeSize(value->dtype()));
  };
  for (const Value *value : group.inputs)
    lowered.bytesMoved += bytesOf(value);
  for (const Value *value : group.outputs)
    lowered.bytesMoved += bytesOf(value);
  return lowered;
}

package::Kernel describeKernel(const LoweredGroup &group, const Kernel &kernel,
                               const std::string &generator) {
  package::Kernel entry;
  entry.name = kernel.name;
  entry.generator = generator;
  for (OpKind op : group.ops)
    entry.ops.push_back(std::string(opName(op)));
  entry.flops = double(kernel.flops);
  entry.bytesMoved = group.bytesMoved;
  return entry;
}

std::string distinctKernelKey(const std::string &code, const std::string &name, const package::Kernel &entry) {
  std::string key;
  key.reserve(code.size() + 256);
  auto isIdentifierChar = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t at = 0; at < code.size();) {
    size_t lineEnd = code.find('\n', at);
    lineEnd = lineEnd == std::string::npos ? code.size() : lineEnd + 1;
    std::string_view line(code.data() + at, lineEnd - at);
    size_t first = line.find_first_not_of(' ');
    if (first != std::string_view::npos && line.substr(first).rfind("// buffers:", 0) == 0) {
      at = lineEnd;
      continue;
    }
    for (size_t i = 0; i < line.size();) {
      if (line.compare(i, name.size(), name) == 0 && (i == 0 || !isIdentifierChar(line[i - 1])) &&
          (i + name.size() == line.size() || !isIdentifierChar(line[i + name.size()]))) {
        key += "\x01KERNEL\x01";
        i += name.size();
      } else {
        key += line[i++];
      }
    }
    at = lineEnd;
  }
  key += '\0' + entry.generator + '\0';
  for (const std::string &op : entry.ops)
    key += op + ',';
  char numbers[64];
  std::snprintf(numbers, sizeof numbers, "%a %a", entry.flops, entry.bytesMoved);
  return key + '\0' + numbers;
}

} // namespace sinter::codegen
