// libFuzzer target: the artifact loader. The first byte picks the mode:
//   even: the rest is a whole file -> sinter_model_load -> (if it loads) a session and one run.
//         Reaches the file checks before dlopen: ELF header, segments, sections, trailer, digest.
//   odd:  the rest replaces the start of a real CPU artifact's manifest metadata (the file named
//         by SINTER_FUZZ_ARTIFACT, compiled by scripts/fuzz.sh); the harness then recomputes the
//         metadata hash and the whole-file digest, as a forger would, so the bytes reach the
//         manifest decoder, the validator and, when they pass, a run of the plan.
// Every status is an acceptable answer; a crash, a hang or a sanitizer report is a finding.
// SINTER_FUZZ_VERBOSE=1 prints each load's, session's and run's outcome.
#include "sinter/package/file_digest.h"
#include "sinter/package/format.h"
#include "sinter/runtime.h"

#include <elf.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> seedFile;
uint64_t sectionOffset = 0, metadataBytes = 0;
std::string scratchPath;

template <typename T> T readAt(const std::vector<uint8_t> &bytes, uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

/// Finds the .sinter_artifact section of the (trusted) seed artifact.
bool locateManifest() {
  if (seedFile.size() < sizeof(Elf64_Ehdr))
    return false;
  auto header = readAt<Elf64_Ehdr>(seedFile, 0);
  auto names = readAt<Elf64_Shdr>(seedFile, header.e_shoff + header.e_shstrndx * sizeof(Elf64_Shdr));
  for (uint64_t i = 0; i < header.e_shnum; ++i) {
    auto section = readAt<Elf64_Shdr>(seedFile, header.e_shoff + i * sizeof(Elf64_Shdr));
    if (std::strcmp(reinterpret_cast<const char *>(seedFile.data() + names.sh_offset + section.sh_name),
                    ".sinter_artifact") == 0) {
      sectionOffset = section.sh_offset;
      metadataBytes = readAt<uint64_t>(seedFile, sectionOffset + 32);
      return true;
    }
  }
  return false;
}

void reseal(std::vector<uint8_t> &file) {
  uint64_t metadata = sectionOffset + sinter::package::kArtifactHeaderBytes;
  uint64_t hash = sinter::package::hashBytes(
      std::span<const uint8_t>(file.data() + metadata, metadataBytes));
  std::memcpy(file.data() + sectionOffset + 40, &hash, 8);
  uint64_t covered = file.size() - sinter::package::kDigestTrailerBytes;
  auto trailer = sinter::package::digestTrailer(
      covered, sinter::package::xxh64(std::span<const uint8_t>(file.data(), covered)));
  std::memcpy(file.data() + covered, trailer.data(), trailer.size());
}

void loadAndRun(const std::vector<uint8_t> &file) {
  {
    std::ofstream out(scratchPath, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(file.data()), std::streamsize(file.size()));
  }
  static const bool verbose = std::getenv("SINTER_FUZZ_VERBOSE") != nullptr;
  sinter_model *model = nullptr;
  if (sinter_model_load(scratchPath.c_str(), &model) != SINTER_OK) {
    if (verbose)
      std::fprintf(stderr, "load: %s\n", sinter_last_error());
    return;
  }
  sinter_session_options options;
  sinter_session_options_init(&options);
  options.threads = 1;
  sinter_session *session = nullptr;
  sinter_status created = sinter_session_create(model, &options, &session);
  if (verbose && created != SINTER_OK)
    std::fprintf(stderr, "session: %s\n", sinter_last_error());
  if (created == SINTER_OK) {
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<sinter_tensor> inputs, outputs;
    for (int input = 0; input < 2; ++input) {
      int32_t count = input ? sinter_model_input_count(model) : sinter_model_output_count(model);
      for (int32_t i = 0; i < count; ++i) {
        sinter_tensor_info info;
        if ((input ? sinter_model_input_info(model, i, &info)
                   : sinter_model_output_info(model, i, &info)) != SINTER_OK)
          continue;
        size_t elements = 1;
        for (int32_t axis = 0; axis < info.rank; ++axis)
          elements *= size_t(info.dims[axis]);
        size_t bytes = elements * 8; // at least the element size; trimmed below
        sinter_tensor tensor{};
        tensor.dtype = info.dtype;
        tensor.rank = info.rank;
        std::memcpy(tensor.dims, info.dims, sizeof tensor.dims);
        if (bytes > (size_t(64) << 20))
          continue; // a forged signature asking for huge buffers: not this harness's concern
        buffers.emplace_back(bytes);
        tensor.data = buffers.back().data();
        (input ? inputs : outputs).push_back(tensor);
      }
    }
    // byte_size must match exactly; the runtime's message tells the size, so ask it once.
    for (auto *list : {&inputs, &outputs})
      for (sinter_tensor &tensor : *list) {
        size_t elements = 1;
        for (int32_t axis = 0; axis < tensor.rank; ++axis)
          elements *= size_t(tensor.dims[axis]);
        size_t width = tensor.dtype == SINTER_FLOAT64 || tensor.dtype == SINTER_INT64 ||
                               tensor.dtype == SINTER_UINT64
                           ? 8
                       : tensor.dtype == SINTER_FLOAT32 || tensor.dtype == SINTER_INT32 ||
                               tensor.dtype == SINTER_UINT32
                           ? 4
                       : tensor.dtype == SINTER_FLOAT16 || tensor.dtype == SINTER_BFLOAT16 ||
                               tensor.dtype == SINTER_INT16 || tensor.dtype == SINTER_UINT16
                           ? 2
                           : 1;
        tensor.byte_size = elements * width;
      }
    sinter_status status = sinter_session_run_host(session, inputs.data(), int32_t(inputs.size()),
                                                   outputs.data(), int32_t(outputs.size()));
    if (verbose)
      std::fprintf(stderr, "run: %d %s\n", int(status), sinter_last_error());
    sinter_session_destroy(session);
  }
  sinter_model_free(model);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *seed = std::getenv("SINTER_FUZZ_ARTIFACT");
  if (seed) {
    std::ifstream in(seed, std::ios::binary);
    seedFile.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!locateManifest()) {
    std::fprintf(stderr, "SINTER_FUZZ_ARTIFACT must name a CPU artifact (scripts/fuzz.sh makes one)\n");
    std::exit(1);
  }
  const char *folder = std::getenv("TMPDIR");
  scratchPath = std::string(folder ? folder : "/tmp") + "/sinter-fuzz-" + std::to_string(getpid()) + ".so";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  if ((data[0] & 1) == 0) {
    loadAndRun(std::vector<uint8_t>(data + 1, data + size));
    return 0;
  }
  std::vector<uint8_t> file = seedFile;
  size_t take = std::min<size_t>(size - 1, metadataBytes);
  std::memcpy(file.data() + sectionOffset + sinter::package::kArtifactHeaderBytes, data + 1, take);
  reseal(file);
  loadAndRun(file);
  return 0;
}
