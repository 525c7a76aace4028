// TensorProto <-> Tensor, for every storage form ONNX allows:
//   raw_data (little-endian), float_data, int32_data (also f16/bf16 bit patterns, int8/uint8,
//   int16/uint16, bool and the float8 codes, one per int32, and the 4- and 2-bit types packed, one
//   packed byte per int32), int64_data, double_data, uint64_data (uint32/uint64), and external
//   data (location/offset/length in a file inside the model's folder).
// The 4- and 2-bit types are packed in ONNX (two or four elements per byte) and unpacked here to
// sinter's one byte per element (low_precision.h); writing packs them again.
// The element count is checked against the data before anything is allocated, so a tensor that
// claims a huge shape without the bytes to back it fails cleanly instead of exhausting memory.
#include "onnx_internal.h"

#include "sinter/ir/low_precision.h"
#include "sinter/support/error.h"

#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

namespace sinter::onnx::detail {

namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "TensorProto raw_data is little-endian; big-endian hosts need a byte swap here");

int64_t checkedElementCount(const google::protobuf::RepeatedField<int64_t> &dims,
                            const std::string &what) {
  int64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0)
      userError(what, " has a negative dimension (", dim, ")");
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / 16 / dim)
      userError(what, " has too many elements (the product of its dimensions overflows)");
    count *= dim;
  }
  // A zero dim makes the count zero whatever follows; the loop above only guards the product.
  return count;
}

namespace {

std::vector<int64_t> dimsOf(const ::onnx::TensorProto &proto) {
  return {proto.dims().begin(), proto.dims().end()};
}

std::string typeText(const ::onnx::TensorProto &proto, DType dtype) {
  return std::string(dtypeName(dtype)) + shapeStr(shapeOf(dimsOf(proto)));
}

// Parses a non-negative decimal integer from an external_data entry.
int64_t parseOffset(const std::string &text, const std::string &key, const std::string &what) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    userError(what, ": external data '", key, "' is '", text, "', not a non-negative integer");
  return std::stoll(text);
}

// Resolves an external data location inside `base`, rejecting anything that leaves it: absolute
// paths, '..' escapes, and symbolic links that point outside.
fs::path resolveExternalPath(const std::string &location, const std::string &base,
                             const std::string &what) {
  fs::path relative(location);
  if (location.empty())
    userError(what, ": external data has no 'location'");
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory())
    userError(what, ": external data location '", location,
              "' is an absolute path; it must be relative to the model's folder");
  fs::path folder = fs::path(base).lexically_normal();
  fs::path full = (folder / relative).lexically_normal();
  fs::path inside = full.lexically_relative(folder);
  if (inside.empty() || *inside.begin() == "..")
    userError(what, ": external data location '", location, "' leaves the model's folder");
  std::error_code error;
  if (!fs::exists(full, error))
    userError(what, ": external data file '", location, "' does not exist in '", folder.string(),
              "'");
  fs::path realFolder = fs::canonical(folder, error);
  if (error)
    userError(what, ": cannot resolve the model's folder '", folder.string(), "'");
  fs::path realFile = fs::canonical(full, error);
  if (error)
    userError(what, ": cannot resolve external data file '", location, "'");
  fs::path realInside = realFile.lexically_relative(realFolder);
  if (realInside.empty() || *realInside.begin() == "..")
    userError(what, ": external data location '", location,
              "' leaves the model's folder through a symbolic link");
  if (!fs::is_regular_file(realFile, error))
    userError(what, ": external data location '", location, "' is not a regular file");
  return realFile;
}

Tensor readExternal(const ::onnx::TensorProto &proto, DType dtype, int64_t expected,
                    const TensorSource &source, const std::string &what) {
  if (source.baseDirectory.empty())
    userError(what, " keeps its data in an external file, which is not allowed here (the model "
                    "was not read from a file, so there is no folder to look in)");
  std::string location;
  int64_t offset = 0;
  std::optional<int64_t> length;
  for (const auto &entry : proto.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset")
      offset = parseOffset(entry.value(), "offset", what);
    else if (entry.key() == "length")
      length = parseOffset(entry.value(), "length", what);
  }
  fs::path file = resolveExternalPath(location, source.baseDirectory, what);
  if (length && *length != expected)
    userError(what, ": external data length is ", *length, " bytes, but ", typeText(proto, dtype),
              " needs ", expected);
  std::error_code error;
  auto fileSize = int64_t(fs::file_size(file, error));
  if (error)
    userError(what, ": cannot read the size of external data file '", location, "'");
  if (offset > fileSize || expected > fileSize - offset)
    userError(what, ": external data range [", offset, ", ", offset + expected,
              ") is out of range ", "of '", location, "' (", fileSize, " bytes)");
  // Only now, with the bytes known to exist, is the tensor allocated.
  Tensor tensor(dtype, dimsOf(proto));
  std::string packed;
  bool subByte = dtypeBits(dtype) < 8;
  if (subByte)
    packed.resize(size_t(expected));
  char *target = subByte ? packed.data() : reinterpret_cast<char *>(tensor.data());
  std::ifstream stream(file, std::ios::binary);
  stream.seekg(offset);
  stream.read(target, std::streamsize(expected));
  if (!stream || stream.gcount() != std::streamsize(expected))
    userError(what, ": cannot read external data file '", location, "'");
  if (subByte)
    unpackLowPrecision(dtype, reinterpret_cast<const uint8_t *>(packed.data()),
                       tensor.elementCount(), tensor.data<uint8_t>());
  return tensor;
}

void checkCount(int64_t have, int64_t expected, const char *field, const std::string &what,
                const std::string &type) {
  if (have != expected)
    userError(what, " (", type, ") has ", have, " values in ", field, ", expected ", expected);
}

// Copies a typed repeated field into the tensor, converting each value to the element type.
template <typename Field, typename Store>
void copyField(const Field &field, Tensor &tensor, Store store) {
  int64_t i = 0;
  for (auto value : field)
    store(tensor, i++, value);
}

void readTyped(const ::onnx::TensorProto &proto, const std::string &what, int64_t count,
               DType dtype, std::optional<Tensor> &out) {
  std::string type = typeText(proto, dtype);
  auto make = [&] { out.emplace(dtype, dimsOf(proto)); };
  switch (dtype) {
  case DType::Float32:
    checkCount(proto.float_data_size(), count, "float_data", what, type);
    make();
    copyField(proto.float_data(), *out,
              [](Tensor &t, int64_t i, float v) { t.data<float>()[i] = v; });
    return;
  case DType::Float64:
    checkCount(proto.double_data_size(), count, "double_data", what, type);
    make();
    copyField(proto.double_data(), *out,
              [](Tensor &t, int64_t i, double v) { t.data<double>()[i] = v; });
    return;
  case DType::Int64:
    checkCount(proto.int64_data_size(), count, "int64_data", what, type);
    make();
    copyField(proto.int64_data(), *out,
              [](Tensor &t, int64_t i, int64_t v) { t.data<int64_t>()[i] = v; });
    return;
  case DType::Uint32:
  case DType::Uint64:
    checkCount(proto.uint64_data_size(), count, "uint64_data", what, type);
    make();
    copyField(proto.uint64_data(), *out,
              [](Tensor &t, int64_t i, uint64_t v) { t.setInt(i, int64_t(v)); });
    return;
  case DType::Float16:
  case DType::BFloat16:
    // The 16-bit pattern sits in the low bits of each int32.
    checkCount(proto.int32_data_size(), count, "int32_data", what, type);
    make();
    copyField(proto.int32_data(), *out, [](Tensor &t, int64_t i, int32_t v) {
      t.data<uint16_t>()[i] = uint16_t(uint32_t(v) & 0xffff);
    });
    return;
  case DType::Bool:
    checkCount(proto.int32_data_size(), count, "int32_data", what, type);
    make();
    copyField(proto.int32_data(), *out,
              [](Tensor &t, int64_t i, int32_t v) { t.data<uint8_t>()[i] = v != 0; });
    return;
  case DType::Float8E4M3FN:
  case DType::Float8E4M3FNUZ:
  case DType::Float8E5M2:
  case DType::Float8E5M2FNUZ:
  case DType::Float8E8M0:
    // The 8-bit code in the low bits of each int32.
    checkCount(proto.int32_data_size(), count, "int32_data", what, type);
    make();
    copyField(proto.int32_data(), *out, [](Tensor &t, int64_t i, int32_t v) {
      t.data<uint8_t>()[i] = uint8_t(uint32_t(v) & 0xff);
    });
    return;
  case DType::Float4E2M1:
  case DType::Int4:
  case DType::Uint4:
  case DType::Int2:
  case DType::Uint2: {
    // One packed byte (two or four elements) in the low bits of each int32.
    checkCount(proto.int32_data_size(), packedByteCount(dtype, count), "int32_data", what, type);
    std::vector<uint8_t> packed;
    for (int32_t v : proto.int32_data())
      packed.push_back(uint8_t(uint32_t(v) & 0xff));
    make();
    unpackLowPrecision(dtype, packed.data(), count, out->data<uint8_t>());
    return;
  }
  case DType::Int32:
  case DType::Int16:
  case DType::Int8:
  case DType::Uint16:
  case DType::Uint8:
    checkCount(proto.int32_data_size(), count, "int32_data", what, type);
    make();
    copyField(proto.int32_data(), *out, [](Tensor &t, int64_t i, int32_t v) { t.setInt(i, v); });
    return;
  }
  SINTER_ASSERT(false, "unhandled dtype ", dtypeName(dtype));
}

// The IR's bools are 0 or 1; raw bytes may hold any non-zero value for true.
void normalizeBools(Tensor &tensor) {
  if (tensor.dtype() != DType::Bool)
    return;
  auto *bytes = tensor.data<uint8_t>();
  for (int64_t i = 0; i < tensor.elementCount(); ++i)
    bytes[i] = bytes[i] != 0;
}

} // namespace

Tensor tensorFromProto(const ::onnx::TensorProto &proto, const TensorSource &source,
                       const std::string &what) {
  if (!proto.has_data_type() || proto.data_type() == 0)
    userError(what, " has no data type");
  DType dtype = dtypeFromOnnxOrError(proto.data_type(), what);
  int64_t count = checkedElementCount(proto.dims(), what);
  if (proto.has_segment())
    userError(what, " is stored in segments, which sinter does not support");
  // ONNX's bytes: packed for the 4- and 2-bit types, one per element in sinter.
  bool subByte = dtypeBits(dtype) < 8;
  int64_t bytes = subByte ? packedByteCount(dtype, count) : count * dtypeSize(dtype);

  if (proto.data_location() == ::onnx::TensorProto_DataLocation_EXTERNAL) {
    Tensor tensor = readExternal(proto, dtype, bytes, source, what);
    normalizeBools(tensor);
    return tensor;
  }
  if (proto.has_raw_data()) {
    const std::string &raw = proto.raw_data();
    if (int64_t(raw.size()) != bytes)
      userError(what, " (", typeText(proto, dtype), ") has ", raw.size(), " bytes of raw_data, ",
                "expected ", bytes);
    Tensor tensor;
    if (subByte) {
      tensor = Tensor(dtype, dimsOf(proto));
      unpackLowPrecision(dtype, reinterpret_cast<const uint8_t *>(raw.data()), count, tensor.data<uint8_t>());
    } else {
      tensor = Tensor::fromBytes(dtype, dimsOf(proto), raw.data());
    }
    normalizeBools(tensor);
    return tensor;
  }
  std::optional<Tensor> tensor;
  readTyped(proto, what, count, dtype, tensor);
  return std::move(*tensor);
}

void tensorToProto(const Tensor &tensor, ::onnx::TensorProto &proto) {
  proto.Clear();
  for (int64_t dim : tensor.dims())
    proto.add_dims(dim);
  proto.set_data_type(dtypeToOnnx(tensor.dtype()));
  if (dtypeBits(tensor.dtype()) < 8) {
    std::string packed(size_t(packedByteCount(tensor.dtype(), tensor.elementCount())), '\0');
    packLowPrecision(tensor.dtype(), tensor.data<uint8_t>(), tensor.elementCount(),
                     reinterpret_cast<uint8_t *>(packed.data()));
    proto.set_raw_data(std::move(packed));
    return;
  }
  proto.set_raw_data(reinterpret_cast<const char *>(tensor.data()), tensor.byteSize());
}

} // namespace sinter::onnx::detail

namespace sinter::onnx {

Tensor readTensorProtoFile(const std::string &path) {
  ::onnx::TensorProto proto;
  detail::parseMessageFile(path, proto, "TensorProto");
  std::string folder = std::filesystem::path(path).parent_path().string();
  detail::TensorSource source{path, folder.empty() ? "." : folder};
  std::string what =
      proto.name().empty() ? path + ": the tensor" : path + ": tensor '" + proto.name() + "'";
  return detail::tensorFromProto(proto, source, what);
}

void writeTensorProtoFile(const std::string &path, const Tensor &tensor) {
  ::onnx::TensorProto proto;
  detail::tensorToProto(tensor, proto);
  std::string bytes;
  if (!proto.SerializeToString(&bytes))
    userError(path, ": cannot serialize the tensor");
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream)
    userError(path, ": cannot open the file for writing");
  stream.write(bytes.data(), std::streamsize(bytes.size()));
  if (!stream)
    userError(path, ": cannot write the file");
}

} // namespace sinter::onnx
