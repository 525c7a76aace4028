#include "session.h"

#include "status.h"

#include <tuple>

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

/// `dims`: what the caller's tensor must have (the plan's, less padding).
void validateTensor(const package::TensorSignature &expected, const std::vector<int64_t> &dims,
                    const sinter_tensor &tensor, const char *kind, int index, bool needData = true) {
  std::string where = detail::concat(kind, " ", index, " ('", expected.name, "')");
  int expectedDtype = dtypeToOnnx(expected.dtype);
  if (static_cast<int>(tensor.dtype) != expectedDtype)
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": dtype is ", dtypeText(tensor.dtype),
         " but the model expects ", dtypeText(expectedDtype));
  if (tensor.rank < 0 || tensor.rank > SINTER_MAX_RANK ||
      static_cast<size_t>(tensor.rank) != expected.dims.size())
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": rank is ", tensor.rank,
         " but the model expects ", expected.dims.size());
  for (size_t axis = 0; axis < dims.size(); ++axis)
    if (tensor.dims[axis] != dims[axis])
      fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": dims are ", dimsText(tensor.dims, dims.size()),
           " but the model expects ", dimsText(dims.data(), dims.size()));
  size_t bytes = static_cast<size_t>(package::tensorByteSize(expected.dtype, dims));
  if (tensor.byte_size != bytes)
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": byte_size is ", tensor.byte_size, " but ",
         dimsText(dims.data(), dims.size()), " ", dtypeName(expected.dtype), " needs ", bytes);
  if (needData && !tensor.data && bytes != 0)
    fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": data is null");
}

void validateCount(size_t expected, const sinter_tensor *tensors, int32_t count, const char *kind) {
  if (count < 0 || static_cast<size_t>(count) != expected)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the model has ", expected, " ", kind, "s but ", count,
         " were given");
  if (count > 0 && !tensors)
    fail(SINTER_ERROR_INVALID_ARGUMENT, "the ", kind, " array is null");
}

/// A signature's dims with each bucketed symbol's axes set to the run's size of it.
std::vector<int64_t> dimsAt(const package::Manifest &manifest, const package::TensorSignature &tensor,
                            const std::vector<int64_t> &sizes) {
  std::vector<int64_t> dims = tensor.dims;
  for (size_t axis = 0; axis < tensor.dimSymbols.size(); ++axis)
    for (size_t s = 0; s < manifest.symbols.size(); ++s)
      if (tensor.dimSymbols[axis] == manifest.symbols[s].name)
        dims[axis] = sizes[s];
  return dims;
}

std::string bucketsText(const package::ShapeSymbol &symbol) {
  std::string text;
  for (int64_t bucket : symbol.buckets)
    text += (text.empty() ? "" : ", ") + std::to_string(bucket);
  return text;
}

/// The plan for these inputs and each bucketed symbol's size in the run (the inputs' count and
/// array are checked). Reads each symbol's size at the first input axis that carries it; every
/// other axis that carries it must agree (checked with the dims, by validateTensor).
std::pair<size_t, std::vector<int64_t>> pickPlan(const LoadedArtifact &artifact,
                                                 const sinter_tensor *inputs, int32_t inputCount) {
  const package::Manifest &manifest = artifact.manifest();
  validateCount(manifest.inputs.size(), inputs, inputCount, "input");
  std::vector<int64_t> sizes(manifest.symbols.size(), -1);
  size_t plan = 0;
  for (size_t s = 0; s < manifest.symbols.size(); ++s) {
    const package::ShapeSymbol &symbol = manifest.symbols[s];
    std::string where;
    for (size_t i = 0; i < manifest.inputs.size() && sizes[s] < 0; ++i) {
      const package::TensorSignature &tensor = manifest.inputs[i];
      for (size_t axis = 0; axis < tensor.dimSymbols.size() && sizes[s] < 0; ++axis)
        if (tensor.dimSymbols[axis] == symbol.name && inputs[i].rank == int32_t(tensor.dims.size())) {
          sizes[s] = inputs[i].dims[axis];
          where = detail::concat("input ", i, " ('", tensor.name, "')");
        }
    }
    size_t bucket = symbol.buckets.size();
    if (sizes[s] < 0) // no input of the right rank carries it: validateTensor reports the rank
      bucket = 0;
    for (size_t b = 0; b < symbol.buckets.size() && bucket == symbol.buckets.size(); ++b)
      if (symbol.buckets[b] == sizes[s] || (symbol.paddable && symbol.buckets[b] > sizes[s] && sizes[s] >= 1))
        bucket = b;
    if (bucket == symbol.buckets.size()) {
      std::string why;
      if (!symbol.paddable)
        why = symbol.paddingRefusal.empty()
                  ? detail::concat("and '", symbol.name, "' is compiled for those sizes only")
                  : detail::concat("and padding it to a bucket is refused: the compiler could not ",
                                   "prove '", symbol.name, "' independent (",
                                   symbol.paddingRefusal, ")");
      else
        why = sizes[s] < 1 ? "and a size below 1 cannot be padded"
                           : "and it is above the largest bucket";
      fail(SINTER_ERROR_INVALID_ARGUMENT, where, ": '", symbol.name, "' is ", sizes[s],
           ", which is not a bucket of the model (", bucketsText(symbol), "), ", why);
    }
    if (sizes[s] < 0)
      sizes[s] = symbol.buckets[0];
    plan = plan * symbol.buckets.size() + bucket;
  }
  return {plan, sizes};
}

RunShape resolveInputs(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                       int32_t inputCount, std::vector<int64_t> &sizes, bool needData = true) {
  const package::Manifest &manifest = artifact.manifest();
  RunShape shape;
  std::tie(shape.plan, sizes) = pickPlan(artifact, inputs, inputCount);
  const package::Plan &plan = artifact.plans[shape.plan];
  for (int32_t i = 0; i < inputCount; ++i) {
    std::vector<int64_t> dims = dimsAt(manifest, plan.inputs[i], sizes);
    validateTensor(plan.inputs[i], dims, inputs[i], "input", i, needData);
    shape.padded = shape.padded || dims != plan.inputs[i].dims;
    shape.inputDims.push_back(std::move(dims));
  }
  if (!shape.padded)
    shape.inputDims.clear();
  return shape;
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

RunShape validateRunArguments(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                              int32_t inputCount, const sinter_tensor *outputs,
                              int32_t outputCount) {
  std::vector<int64_t> sizes;
  RunShape shape = resolveInputs(artifact, inputs, inputCount, sizes);
  const package::Plan &plan = artifact.plans[shape.plan];
  validateCount(plan.outputs.size(), outputs, outputCount, "output");
  for (int32_t i = 0; i < outputCount; ++i) {
    std::vector<int64_t> dims = dimsAt(artifact.manifest(), plan.outputs[i], sizes);
    validateTensor(plan.outputs[i], dims, outputs[i], "output", i);
    if (shape.padded)
      shape.outputDims.push_back(std::move(dims));
  }
  return shape;
}

RunShape validateInputArguments(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                                int32_t inputCount) {
  std::vector<int64_t> sizes;
  return resolveInputs(artifact, inputs, inputCount, sizes);
}

std::vector<int64_t> outputDimsFor(const LoadedArtifact &artifact, const sinter_tensor *inputs,
                                   int32_t inputCount, int32_t index) {
  std::vector<int64_t> sizes;
  RunShape shape = resolveInputs(artifact, inputs, inputCount, sizes, /*needData=*/false);
  const package::Plan &plan = artifact.plans[shape.plan];
  if (index < 0 || size_t(index) >= plan.outputs.size())
    fail(SINTER_ERROR_INVALID_ARGUMENT, "output index ", index, " is out of range (the model has ",
         plan.outputs.size(), ")");
  return dimsAt(artifact.manifest(), plan.outputs[index], sizes);
}

} // namespace sinter::rt
