#include "session.h"

#include "status.h"

namespace sinter::rt {
namespace {

std::string dtypeText(int value) {
  if (std::optional<DType> dtype = dtypeFromOnnx(value))
    return std::string(dtypeName(*dtype));
  return detail::concat("unknown dtype ", value);
}

std::string dimsText(const int64_t *dims, size_t rank) {
  std::string text = "[";
  for (size_t i = 0; i < rank; ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

void validateTensor(const package::TensorSignature &expected, const sinter_tensor &tensor,
                    const char *kind, int index) {
  std::string where = detail::concat(kind, " ", index, " ('", expected.name, "')");
  int expectedDtype = dtypeToOnnx(expected.dtype);
  if (static_cast<int>(tensor.dtype) != expectedDtype)
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": dtype is ", dtypeText(tensor.dtype),
         " but the model expects ", dtypeText(expectedDtype));
  if (tensor.rank < 0 || tensor.rank > SINTER_MAX_RANK ||
      static_cast<size_t>(tensor.rank) != expected.dims.size())
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": rank is ", tensor.rank,
         " but the model expects ", expected.dims.size());
  for (size_t axis = 0; axis < expected.dims.size(); ++axis)
    if (tensor.dims[axis] != expected.dims[axis])
      fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": dims are ",
           dimsText(tensor.dims, expected.dims.size()), " but the model expects ",
           dimsText(expected.dims.data(), expected.dims.size()));
  size_t bytes = signatureBytes(expected);
  if (tensor.byte_size != bytes)
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": byte_size is ", tensor.byte_size, " but ",
         dimsText(expected.dims.data(), expected.dims.size()), " ", dtypeName(expected.dtype),
         " needs ", bytes);
  if (!tensor.data && bytes != 0)
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": data is null");
}

void validateList(const std::vector<package::TensorSignature> &signature,
                  const sinter_tensor *tensors, int32_t count, const char *kind) {
  if (count < 0 || static_cast<size_t>(count) != signature.size())
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the model has ", signature.size(), " ", kind,
         "s but ", count, " were given");
  if (count > 0 && !tensors)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the ", kind, " array is null");
  for (int32_t i = 0; i < count; ++i)
    validateTensor(signature[i], tensors[i], kind, i);
}

} // namespace

std::unique_ptr<sinter_session> createSession(std::shared_ptr<const LoadedArtifact> artifact,
                                              const sinter_session_options &options) {
  if (artifact->manifest().target == package::Target::Cuda)
    return createCudaSession(std::move(artifact), options);
  return createCpuSession(std::move(artifact), options);
}

size_t signatureBytes(const package::TensorSignature &tensor) {
  return static_cast<size_t>(package::tensorByteSize(tensor.dtype, tensor.dims));
}

void validateRunArguments(const package::Manifest &manifest, const sinter_tensor *inputs,
                          int32_t inputCount, const sinter_tensor *outputs, int32_t outputCount) {
  validateList(manifest.inputs, inputs, inputCount, "input");
  validateList(manifest.outputs, outputs, outputCount, "output");
}

void validateInputArguments(const package::Manifest &manifest, const sinter_tensor *inputs,
                            int32_t inputCount) {
  validateList(manifest.inputs, inputs, inputCount, "input");
}

} // namespace sinter::rt
