// The .npy format (numpy's NEP 1): a magic string, a version, a header length, then a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces to a
// multiple of 64 bytes and ended by '\n', then the raw array bytes.
#include "sinter/io/npy.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

static_assert(std::endian::native == std::endian::little,
              "npy I/O assumes a little-endian host");

namespace sinter::io {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

/// The numpy descr sinter writes for each dtype (nullopt: no numpy equivalent).
std::optional<std::string> descrOf(DType dtype) {
  switch (dtype) {
  case DType::Float32: return "<f4";
  case DType::Float64: return "<f8";
  case DType::Float16: return "<f2";
  case DType::Int8: return "|i1";
  case DType::Uint8: return "|u1";
  case DType::Int16: return "<i2";
  case DType::Uint16: return "<u2";
  case DType::Int32: return "<i4";
  case DType::Uint32: return "<u4";
  case DType::Int64: return "<i8";
  case DType::Uint64: return "<u8";
  case DType::Bool: return "|b1";
  case DType::BFloat16: return std::nullopt;
  }
  return std::nullopt;
}

DType dtypeOfDescr(const std::string &descr, const std::string &file) {
  if (descr.find('O') != std::string::npos)
    userError(file, ": object arrays are not supported (dtype '", descr,
              "'); save a numeric array");
  if (descr.size() < 3 || std::string_view("<>|=").find(descr[0]) == std::string_view::npos)
    userError(file, ": unsupported .npy dtype '", descr, "'");
  char order = descr[0], kind = descr[1];
  std::string sizeText = descr.substr(2);
  int size = 0;
  if (sizeText == "1" || sizeText == "2" || sizeText == "4" || sizeText == "8")
    size = sizeText[0] - '0';
  std::optional<DType> dtype;
  switch (kind) {
  case 'f':
    dtype = size == 2 ? DType::Float16 : size == 4 ? DType::Float32 : size == 8 ? DType::Float64
                                                                                 : dtype;
    break;
  case 'i':
    dtype = size == 1   ? DType::Int8
            : size == 2 ? DType::Int16
            : size == 4 ? DType::Int32
            : size == 8 ? DType::Int64
                        : dtype;
    break;
  case 'u':
    dtype = size == 1   ? DType::Uint8
            : size == 2 ? DType::Uint16
            : size == 4 ? DType::Uint32
            : size == 8 ? DType::Uint64
                        : dtype;
    break;
  case 'b':
    if (size == 1)
      dtype = DType::Bool;
    break;
  default:
    break;
  }
  if (!dtype)
    userError(file, ": unsupported .npy dtype '", descr,
              "' (sinter reads f2, f4, f8, i1-i8, u1-u8 and b1)");
  if (order == '>' && size > 1)
    userError(file, ": big-endian data (dtype '", descr,
              "') is not supported; save it little-endian, e.g. array.astype('<", kind, size,
              "')");
  return *dtype;
}

/// A tiny reader for the Python literal in the .npy header: a dict of string keys whose values
/// are strings, booleans or tuples of integers.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &file) : text_(text), file_(file) {}

  struct Fields {
    std::optional<std::string> descr;
    std::optional<bool> fortranOrder;
    std::optional<std::vector<int64_t>> shape;
  };

  Fields parse() {
    Fields fields;
    expect('{');
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos_;
        break;
      }
      std::string key = parseString();
      expect(':');
      skipSpace();
      if (key == "descr") {
        if (peek() == '[')
          fail("structured dtypes are not supported");
        fields.descr = parseString();
      } else if (key == "fortran_order") {
        fields.fortranOrder = parseBool();
      } else if (key == "shape") {
        fields.shape = parseTuple();
      } else {
        fail("unexpected key '" + key + "'");
      }
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}');
      break;
    }
    skipSpace();
    if (pos_ != text_.size())
      fail("unexpected text after the header dict");
    return fields;
  }

private:
  [[noreturn]] void fail(const std::string &what) {
    userError(file_, ": malformed .npy header (", what, " at byte ", pos_, " of the header)");
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r'))
      ++pos_;
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c)
      fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parseString() {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"')
      fail("expected a string");
    size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos)
      fail("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool parseBool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  std::vector<int64_t> parseTuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos_;
        return dims;
      }
      if (peek() < '0' || peek() > '9')
        fail("expected a non-negative integer dimension");
      int64_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        int digit = peek() - '0';
        if (value > (INT64_MAX - digit) / 10)
          fail("dimension too large");
        value = value * 10 + digit;
        ++pos_;
      }
      if (peek() == 'L') // Python 2 long literal
        ++pos_;
      dims.push_back(value);
      skipSpace();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        fail("expected ',' or ')'");
    }
  }

  std::string_view text_;
  const std::string &file_;
  size_t pos_ = 0;
};

uint32_t readLittle(std::string_view bytes, size_t offset, int width) {
  uint32_t value = 0;
  for (int i = width - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return value;
}

} // namespace

Tensor parseNpy(std::string_view bytes, const std::string &file) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != kMagic)
    userError(file, ": not an .npy file (bad magic; expected \\x93NUMPY)");
  int major = static_cast<unsigned char>(bytes[6]);
  int minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    userError(file, ": unsupported .npy format version ", major, ".", minor,
              " (sinter reads 1.0, 2.0 and 3.0)");
  size_t lengthWidth = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lengthWidth;
  if (bytes.size() < headerStart)
    userError(file, ": truncated .npy file (no header length)");
  size_t headerLength = readLittle(bytes, 8, static_cast<int>(lengthWidth));
  if (headerLength > bytes.size() - headerStart)
    userError(file, ": truncated .npy file (header of ", headerLength, " bytes, but only ",
              bytes.size() - headerStart, " follow)");
  std::string_view header = bytes.substr(headerStart, headerLength);
  if (major < 3 && std::any_of(header.begin(), header.end(),
                               [](char c) { return static_cast<unsigned char>(c) >= 0x80; }))
    userError(file, ": malformed .npy header (non-ASCII text in a version ", major, " header)");

  HeaderParser::Fields fields = HeaderParser(header, file).parse();
  if (!fields.descr || !fields.fortranOrder || !fields.shape)
    userError(file, ": malformed .npy header (it needs 'descr', 'fortran_order' and 'shape')");
  DType dtype = dtypeOfDescr(*fields.descr, file);
  const std::vector<int64_t> &dims = *fields.shape;
  if (*fields.fortranOrder && dims.size() > 1)
    userError(file, ": Fortran-order arrays are not supported; save a C-order array "
                    "(numpy.ascontiguousarray)");

  // Check the size before allocating, so a lying header cannot ask for huge memory.
  uint64_t count = 1;
  for (int64_t dim : dims)
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count))
      userError(file, ": .npy shape ", shapeStr(shapeOf(dims)), " is too large");
  uint64_t dataBytes;
  if (__builtin_mul_overflow(count, static_cast<uint64_t>(dtypeSize(dtype)), &dataBytes))
    userError(file, ": .npy shape ", shapeStr(shapeOf(dims)), " is too large");
  size_t dataStart = headerStart + headerLength;
  size_t available = bytes.size() - dataStart;
  if (dataBytes > available)
    userError(file, ": truncated .npy file: the header promises ", dataBytes,
              " bytes of data for ", dtypeName(dtype), shapeStr(shapeOf(dims)), " but only ",
              available, " follow");
  if (dataBytes < available)
    userError(file, ": malformed .npy file: ", available - dataBytes,
              " unexpected bytes after the data of ", dtypeName(dtype), shapeStr(shapeOf(dims)));

  Tensor tensor(dtype, dims);
  if (dataBytes)
    std::memcpy(tensor.data(), bytes.data() + dataStart, dataBytes);
  if (dtype == DType::Bool) { // the IR's bools are 0 or 1
    auto *values = tensor.data<uint8_t>();
    for (uint64_t i = 0; i < count; ++i)
      values[i] = values[i] != 0;
  }
  return tensor;
}

std::string serializeNpy(const Tensor &tensor) {
  std::optional<std::string> descr = descrOf(tensor.dtype());
  if (!descr)
    userError("cannot save a ", dtypeName(tensor.dtype()),
              " tensor as .npy: numpy has no such dtype (use the .pb tensor format instead)");
  std::string dict = "{'descr': '" + *descr + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.dims().size(); ++i)
    dict += (i ? ", " : "") + std::to_string(tensor.dims()[i]);
  if (tensor.dims().size() == 1)
    dict += ",";
  dict += "), }";

  // Version 1.0 has a 16-bit header length; larger headers (rank in the thousands) need 2.0.
  size_t prefix = dict.size() + 1 + 10 <= 65535 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic);
  out += prefix == 10 ? '\x01' : '\x02';
  out += '\x00';
  size_t length = dict.size();
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((length >> (8 * i)) & 0xff);
  out += dict;
  out.append(reinterpret_cast<const char *>(tensor.data()), tensor.byteSize());
  return out;
}

Tensor readNpy(const std::string &path) { return parseNpy(readFileBytes(path), path); }

void writeNpy(const std::string &path, const Tensor &tensor) {
  writeFileBytes(path, serializeNpy(tensor));
}

std::string readFileBytes(const std::string &path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    userError("cannot read '", path, "': it is a directory");
  std::ifstream stream(path, std::ios::binary);
  if (!stream)
    userError("cannot read '", path, "': ", std::strerror(errno));
  std::ostringstream contents;
  contents << stream.rdbuf();
  if (stream.bad())
    userError("cannot read '", path, "': read failed");
  return std::move(contents).str();
}

void writeFileBytes(const std::string &path, std::string_view bytes) {
  // Write beside the target and rename, so a failed write never leaves half a file.
  std::string temporary = path + ".sinter-partial";
  {
    std::ofstream stream(temporary, std::ios::binary | std::ios::trunc);
    if (!stream)
      userError("cannot write '", path, "': ", std::strerror(errno));
    stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    stream.close();
    if (!stream) {
      std::error_code ignored;
      std::filesystem::remove(temporary, ignored);
      userError("cannot write '", path, "': write failed (disk full?)");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    userError("cannot write '", path, "': ", error.message());
  }
}

} // namespace sinter::io
