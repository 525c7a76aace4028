// Helpers shared by the code generation tests: the header fields of a cubin, and a kernel group
// made of one node.
#pragma once

#include "sinter/codegen/lowering/lowering.h"
#include "sinter/ir/graph.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace sinter::testing {

/// e_machine of an ELF file (EM_CUDA is 190) and the SM number. CUDA 13's ptxas writes cubins
/// with the newer CUDA ELF ABI (EI_OSABI 0x41), which keeps the SM in bits 8-15 of e_flags
/// (sm_90: 0x06005a04).
struct CubinHeader {
  uint16_t machine = 0;
  unsigned sm = 0;
};

inline CubinHeader readCubinHeader(const std::vector<uint8_t> &bytes) {
  CubinHeader header;
  if (bytes.size() < 64 || std::memcmp(bytes.data(), "\x7f" "ELF", 4) != 0)
    return header;
  std::memcpy(&header.machine, bytes.data() + 18, 2);
  uint32_t flags = 0;
  std::memcpy(&flags, bytes.data() + 48, 4);
  header.sm = (flags >> 8) & 0xff;
  return header;
}

/// The group of one node, as the compiler forms it without fusion; `index` names the kernel.
inline codegen::KernelGroup singleNodeGroup(const Node &node, int index) {
  codegen::KernelGroup group;
  group.nodes = {&node};
  for (Value *input : node.inputs())
    if (input)
      group.inputs.push_back(input);
  group.outputs.assign(node.outputs().begin(), node.outputs().end());
  group.name = codegen::kernelName(group.nodes, index);
  return group;
}

} // namespace sinter::testing
