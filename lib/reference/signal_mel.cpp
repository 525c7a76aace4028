// Reference rule for MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters on
// the mel scale (mel = 2595 log10(1 + hz / 700)) between lower_edge_hertz and upper_edge_hertz.
// num_mel_bins + 2 points evenly spaced in mel (step (high - low) / (num_mel_bins + 2), as ONNX
// defines it) are mapped to spectrogram bins floor((dft_length + 1) hz / sample_rate); filter i
// rises from point i to point i + 1 and falls to point i + 2.
#include "registry.h"
#include "tensor_helpers.h"

#include <cmath>
#include <optional>

namespace sinter::reference {
namespace {

Outputs evalMelWeightMatrix(const Node &node, const Inputs &inputs) {
  auto scalar = [&](int i) { return requiredInput(node, inputs, i); };
  int64_t bins = scalar(0).getInt(0), length = scalar(1).getInt(0), rate = scalar(2).getInt(0);
  double lower = scalar(3).getDouble(0), upper = scalar(4).getDouble(0);
  if (bins <= 0 || length <= 0 || rate <= 0)
    userError(node.describe(), ": num_mel_bins, dft_length and sample_rate must be positive");
  std::optional<DType> dtype = dtypeFromOnnx(int(node.attrInt("output_datatype", 1)));
  if (!dtype)
    userError(node.describe(), ": output_datatype is not a type sinter has");
  int64_t spectrogram = length / 2 + 1;
  double lowMel = 2595.0 * std::log1p(lower / 700.0) / std::log(10.0);
  double highMel = 2595.0 * std::log1p(upper / 700.0) / std::log(10.0);
  double step = (highMel - lowMel) / double(bins + 2);
  std::vector<int64_t> points(size_t(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hz = 700.0 * std::expm1((double(i) * step + lowMel) / 2595.0 * std::log(10.0));
    points[size_t(i)] = int64_t(std::floor(double(length + 1) * hz / double(rate)));
  }
  std::vector<double> out(size_t(spectrogram * bins), 0.0);
  auto at = [&](int64_t row, int64_t column) -> double & {
    if (row < 0 || row >= spectrogram)
      userError(node.describe(), ": a filter reaches spectrogram bin ", row, ", outside [0, ", spectrogram, ")");
    return out[size_t(row * bins + column)];
  };
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = points[size_t(i)], center = points[size_t(i + 1)], right = points[size_t(i + 2)];
    if (center == left)
      at(center, i) = 1;
    else
      for (int64_t j = left; j <= center; ++j)
        at(j, i) = double(j - left) / double(center - left);
    for (int64_t j = center; j < right; ++j)
      at(j, i) = double(right - j) / double(right - center);
  }
  return {fromDoubles(*dtype, {spectrogram, bins}, out)};
}

} // namespace

void registerMelRules(RuleTable &table) { table.add(OpKind::MelWeightMatrix, evalMelWeightMatrix); }

} // namespace sinter::reference
