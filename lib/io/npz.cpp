// The .npz format: a zip archive (PKWARE APPNOTE) of .npy entries.
//
// Reading walks the central directory (found through the end-of-central-directory record, or its
// zip64 form), then each entry's local header; every offset and size is checked against the file
// before it is used. Entries may be stored or deflated (zlib, raw inflate); CRC32 is verified.
// numpy writes its entries with zip64 local headers (force_zip64), so local-header sizes are never
// trusted: the central directory's are.
//
// Writing produces stored entries with fixed DOS timestamps (1980-01-01 00:00), no extra fields,
// in the order given, so the bytes depend only on the names and tensors.
#include "sinter/io/npy.h"

#include "sinter/support/error.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <set>

namespace sinter::io {
namespace {

constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr uint32_t kCentralHeaderSignature = 0x02014b50;
constexpr uint32_t kEndSignature = 0x06054b50;
constexpr uint32_t kZip64EndSignature = 0x06064b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr size_t kEndRecordSize = 22;
constexpr size_t kCentralHeaderSize = 46;
constexpr size_t kLocalHeaderSize = 30;
constexpr uint16_t kDosDate19800101 = (0 << 9) | (1 << 5) | 1; // years since 1980, month, day
constexpr uint16_t kFlagUtf8Names = 1 << 11;
/// Deflate cannot expand data by more than about 1032:1; a larger claim is a lie.
constexpr uint64_t kMaxDeflateRatio = 1032;

/// Bounds-checked little-endian reads from the archive's bytes.
class ArchiveReader {
public:
  ArchiveReader(std::string_view bytes, const std::string &file) : bytes_(bytes), file_(file) {}

  size_t size() const { return bytes_.size(); }
  [[noreturn]] void fail(const std::string &what) const {
    userError(file_, ": malformed .npz archive (", what, ")");
  }
  void require(uint64_t offset, uint64_t length, const char *what) const {
    if (offset > bytes_.size() || length > bytes_.size() - offset)
      fail(std::string(what) + " at offset " + std::to_string(offset) + " runs past the end of the " +
           std::to_string(bytes_.size()) + "-byte file");
  }
  uint64_t read(uint64_t offset, int width, const char *what) const {
    require(offset, width, what);
    uint64_t value = 0;
    for (int i = width - 1; i >= 0; --i)
      value = (value << 8) | static_cast<unsigned char>(bytes_[offset + i]);
    return value;
  }
  uint16_t u16(uint64_t offset, const char *what) const { return uint16_t(read(offset, 2, what)); }
  uint32_t u32(uint64_t offset, const char *what) const { return uint32_t(read(offset, 4, what)); }
  uint64_t u64(uint64_t offset, const char *what) const { return read(offset, 8, what); }
  std::string_view slice(uint64_t offset, uint64_t length, const char *what) const {
    require(offset, length, what);
    return bytes_.substr(offset, length);
  }
  const std::string &file() const { return file_; }

private:
  std::string_view bytes_;
  const std::string &file_;
};

struct CentralEntry {
  std::string name;
  uint16_t flags = 0;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t compressedSize = 0;
  uint64_t uncompressedSize = 0;
  uint64_t localHeaderOffset = 0;
};

struct Directory {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t entries = 0;
};

Directory findDirectory(const ArchiveReader &archive) {
  if (archive.size() < kEndRecordSize)
    archive.fail("too short for a zip archive");
  // The end record sits at the end, followed only by a comment of at most 64 KiB.
  size_t lowest = archive.size() - kEndRecordSize > 0xffff ? archive.size() - kEndRecordSize - 0xffff
                                                           : 0;
  std::optional<size_t> endOffset;
  for (size_t offset = archive.size() - kEndRecordSize + 1; offset-- > lowest;) {
    if (archive.u32(offset, "end record") == kEndSignature &&
        offset + kEndRecordSize + archive.u16(offset + 20, "end record") <= archive.size()) {
      endOffset = offset;
      break;
    }
  }
  if (!endOffset)
    archive.fail("no end-of-central-directory record; not a zip archive, or truncated");
  size_t end = *endOffset;
  if (archive.u16(end + 4, "end record") != 0 || archive.u16(end + 6, "end record") != 0)
    archive.fail("multi-part archives are not supported");
  Directory directory;
  directory.entries = archive.u16(end + 10, "end record");
  directory.size = archive.u32(end + 12, "end record");
  directory.offset = archive.u32(end + 16, "end record");
  bool zip64 = directory.entries == 0xffff || directory.size == 0xffffffff ||
               directory.offset == 0xffffffff;
  if (zip64 && end >= 20 && archive.u32(end - 20, "zip64 locator") == kZip64LocatorSignature) {
    uint64_t record = archive.u64(end - 20 + 8, "zip64 locator");
    if (archive.u32(record, "zip64 end record") != kZip64EndSignature)
      archive.fail("the zip64 locator points at no zip64 end record");
    directory.entries = archive.u64(record + 32, "zip64 end record");
    directory.size = archive.u64(record + 40, "zip64 end record");
    directory.offset = archive.u64(record + 48, "zip64 end record");
  }
  archive.require(directory.offset, directory.size, "central directory");
  return directory;
}

/// Applies a central entry's zip64 extra field (id 1) to the fields that were set to 0xffffffff.
void applyZip64Extra(const ArchiveReader &archive, uint64_t extraStart, uint64_t extraLength,
                     CentralEntry &entry, bool sizeMaxed, bool compressedMaxed, bool offsetMaxed) {
  uint64_t position = extraStart, end = extraStart + extraLength;
  while (position + 4 <= end) {
    uint16_t id = archive.u16(position, "extra field");
    uint16_t length = archive.u16(position + 2, "extra field");
    uint64_t data = position + 4;
    if (data + length > end)
      archive.fail("an extra field of entry '" + entry.name + "' overruns its header");
    if (id == 1) {
      uint64_t cursor = data;
      auto take = [&]() {
        if (cursor + 8 > data + length)
          archive.fail("short zip64 extra field in entry '" + entry.name + "'");
        uint64_t value = archive.u64(cursor, "zip64 extra field");
        cursor += 8;
        return value;
      };
      if (sizeMaxed)
        entry.uncompressedSize = take();
      if (compressedMaxed)
        entry.compressedSize = take();
      if (offsetMaxed)
        entry.localHeaderOffset = take();
      return;
    }
    position = data + length;
  }
  if (sizeMaxed || compressedMaxed || offsetMaxed)
    archive.fail("entry '" + entry.name + "' lacks the zip64 extra field its sizes call for");
}

std::vector<CentralEntry> readDirectory(const ArchiveReader &archive, const Directory &directory) {
  std::vector<CentralEntry> entries;
  uint64_t position = directory.offset, end = directory.offset + directory.size;
  for (uint64_t i = 0; i < directory.entries; ++i) {
    if (position + kCentralHeaderSize > end)
      archive.fail("the central directory ends after " + std::to_string(i) + " of " +
                   std::to_string(directory.entries) + " entries");
    if (archive.u32(position, "central header") != kCentralHeaderSignature)
      archive.fail("bad central directory header signature at offset " + std::to_string(position));
    CentralEntry entry;
    entry.flags = archive.u16(position + 8, "central header");
    entry.method = archive.u16(position + 10, "central header");
    entry.crc = archive.u32(position + 16, "central header");
    entry.compressedSize = archive.u32(position + 20, "central header");
    entry.uncompressedSize = archive.u32(position + 24, "central header");
    uint16_t nameLength = archive.u16(position + 28, "central header");
    uint16_t extraLength = archive.u16(position + 30, "central header");
    uint16_t commentLength = archive.u16(position + 32, "central header");
    entry.localHeaderOffset = archive.u32(position + 42, "central header");
    uint64_t next = position + kCentralHeaderSize + nameLength + extraLength + commentLength;
    if (next > end)
      archive.fail("central directory entry " + std::to_string(i) + " overruns the directory");
    entry.name = std::string(archive.slice(position + kCentralHeaderSize, nameLength, "entry name"));
    applyZip64Extra(archive, position + kCentralHeaderSize + nameLength, extraLength, entry,
                    entry.uncompressedSize == 0xffffffff, entry.compressedSize == 0xffffffff,
                    entry.localHeaderOffset == 0xffffffff);
    entries.push_back(std::move(entry));
    position = next;
  }
  return entries;
}

uint32_t crc32Of(std::string_view bytes) {
  return static_cast<uint32_t>(
      crc32_z(0L, reinterpret_cast<const Bytef *>(bytes.data()), bytes.size()));
}

std::string inflateEntry(const ArchiveReader &archive, const CentralEntry &entry,
                         std::string_view compressed) {
  if (entry.uncompressedSize > compressed.size() * kMaxDeflateRatio + 1024)
    archive.fail("entry '" + entry.name + "' claims " + std::to_string(entry.uncompressedSize) +
                 " bytes from " + std::to_string(compressed.size()) + " compressed bytes");
  // One spare byte, so data longer than claimed shows up as a size mismatch below.
  std::string out(entry.uncompressedSize + 1, '\0');
  z_stream stream{};
  if (inflateInit2(&stream, -MAX_WBITS) != Z_OK)
    userError(archive.file(), ": cannot start zlib inflate");
  constexpr uint64_t kChunk = 1u << 30; // zlib counts in 32-bit units
  uint64_t inPosition = 0, outPosition = 0;
  int status;
  while (true) {
    if (stream.avail_in == 0 && inPosition < compressed.size()) {
      uint64_t take = std::min<uint64_t>(kChunk, compressed.size() - inPosition);
      stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(compressed.data() + inPosition));
      stream.avail_in = static_cast<uInt>(take);
      inPosition += take;
    }
    if (stream.avail_out == 0 && outPosition < out.size()) {
      uint64_t take = std::min<uint64_t>(kChunk, out.size() - outPosition);
      stream.next_out = reinterpret_cast<Bytef *>(out.data() + outPosition);
      stream.avail_out = static_cast<uInt>(take);
      outPosition += take;
    }
    status = inflate(&stream, Z_NO_FLUSH);
    bool canRefill = (stream.avail_in == 0 && inPosition < compressed.size()) ||
                     (stream.avail_out == 0 && outPosition < out.size());
    if (status == Z_OK || (status == Z_BUF_ERROR && canRefill))
      continue;
    break; // Z_STREAM_END, or stuck (truncated data, output too small), or corrupt data
  }
  uint64_t produced = stream.total_out;
  inflateEnd(&stream);
  if (status != Z_STREAM_END)
    archive.fail("entry '" + entry.name + "' has corrupt or truncated deflate data" +
                 (stream.msg ? std::string(" (") + stream.msg + ")" : std::string()));
  if (produced != entry.uncompressedSize)
    archive.fail("entry '" + entry.name + "' inflates to " + std::to_string(produced) +
                 " bytes, not the " + std::to_string(entry.uncompressedSize) + " its header says");
  out.resize(entry.uncompressedSize);
  return out;
}

void appendLittle(std::string &out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

} // namespace

std::vector<NamedTensor> parseNpz(std::string_view bytes, const std::string &file) {
  ArchiveReader archive(bytes, file);
  Directory directory = findDirectory(archive);
  std::vector<NamedTensor> tensors;
  std::set<std::string> seen;
  for (const CentralEntry &entry : readDirectory(archive, directory)) {
    if (!entry.name.empty() && entry.name.back() == '/')
      continue; // a folder entry
    if (entry.flags & 1)
      archive.fail("entry '" + entry.name + "' is encrypted");
    uint64_t local = entry.localHeaderOffset;
    if (local > archive.size() - std::min<uint64_t>(archive.size(), kLocalHeaderSize) ||
        archive.u32(local, "local header") != kLocalHeaderSignature)
      archive.fail("entry '" + entry.name + "' points at no local header (offset " +
                   std::to_string(local) + ")");
    uint64_t dataStart = local + kLocalHeaderSize + archive.u16(local + 26, "local header") +
                         archive.u16(local + 28, "local header");
    std::string_view compressed = archive.slice(dataStart, entry.compressedSize, "entry data");
    std::string inflated;
    std::string_view data;
    if (entry.method == 0) {
      if (entry.compressedSize != entry.uncompressedSize)
        archive.fail("stored entry '" + entry.name + "' has different stored and real sizes");
      data = compressed;
    } else if (entry.method == 8) {
      inflated = inflateEntry(archive, entry, compressed);
      data = inflated;
    } else {
      archive.fail("entry '" + entry.name + "' uses compression method " +
                   std::to_string(entry.method) + "; only stored (0) and deflate (8) are read");
    }
    if (crc32Of(data) != entry.crc)
      archive.fail("CRC32 mismatch in entry '" + entry.name + "'");
    std::string key = entry.name;
    if (key.size() > 4 && key.ends_with(".npy"))
      key.resize(key.size() - 4);
    if (!seen.insert(key).second)
      archive.fail("two entries are named '" + key + "'");
    tensors.emplace_back(key, parseNpy(data, file + ":" + entry.name));
  }
  return tensors;
}

std::string serializeNpz(const std::vector<NamedTensor> &tensors) {
  std::string out, directory;
  std::set<std::string> seen;
  for (const auto &[name, tensor] : tensors) {
    if (name.empty())
      userError("cannot save a tensor with an empty name in an .npz archive");
    if (!seen.insert(name).second)
      userError("cannot save two tensors named '", name, "' in one .npz archive");
    std::string entryName = name + ".npy";
    if (entryName.size() > 0xffff)
      userError("tensor name '", name.substr(0, 64), "...' is too long for an .npz entry");
    std::string data = serializeNpy(tensor);
    if (data.size() >= 0xffffffffu || out.size() + data.size() + 1024 + entryName.size() >= 0xffffffffu)
      userError("cannot save '", name, "': .npz archives over 4 GiB are not written by sinter; "
                                      "write one .npy per output with --output-dir instead");
    bool utf8 = std::any_of(entryName.begin(), entryName.end(),
                            [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    uint16_t flags = utf8 ? kFlagUtf8Names : 0;
    uint32_t crc = crc32Of(data);
    uint64_t localOffset = out.size();

    // Fields shared by the local and the central header, from "version needed" on.
    auto appendCommon = [&](std::string &header) {
      appendLittle(header, 20, 2); // version needed to extract: 2.0
      appendLittle(header, flags, 2);
      appendLittle(header, 0, 2); // method: stored
      appendLittle(header, 0, 2); // time 00:00:00
      appendLittle(header, kDosDate19800101, 2);
      appendLittle(header, crc, 4);
      appendLittle(header, data.size(), 4);
      appendLittle(header, data.size(), 4);
      appendLittle(header, entryName.size(), 2);
      appendLittle(header, 0, 2); // extra field length
    };
    appendLittle(out, kLocalHeaderSignature, 4);
    appendCommon(out);
    out += entryName;
    out += data;

    appendLittle(directory, kCentralHeaderSignature, 4);
    appendLittle(directory, 20, 2); // version made by: 2.0, MS-DOS attributes
    appendCommon(directory);
    appendLittle(directory, 0, 2); // comment length
    appendLittle(directory, 0, 2); // disk number
    appendLittle(directory, 0, 2); // internal attributes
    appendLittle(directory, 0, 4); // external attributes
    appendLittle(directory, localOffset, 4);
    directory += entryName;
  }
  if (tensors.size() >= 0xffff || out.size() + directory.size() >= 0xffffffffu)
    userError("cannot save ", tensors.size(), " tensors in one .npz archive: zip64 archives "
              "are not written by sinter; use --output-dir instead");
  uint64_t directoryOffset = out.size();
  out += directory;
  appendLittle(out, kEndSignature, 4);
  appendLittle(out, 0, 2); // this disk
  appendLittle(out, 0, 2); // disk with the directory
  appendLittle(out, tensors.size(), 2);
  appendLittle(out, tensors.size(), 2);
  appendLittle(out, directory.size(), 4);
  appendLittle(out, directoryOffset, 4);
  appendLittle(out, 0, 2); // comment length
  return out;
}

std::vector<NamedTensor> readNpz(const std::string &path) {
  return parseNpz(readFileBytes(path), path);
}

void writeNpz(const std::string &path, const std::vector<NamedTensor> &tensors) {
  writeFileBytes(path, serializeNpz(tensors));
}

} // namespace sinter::io
