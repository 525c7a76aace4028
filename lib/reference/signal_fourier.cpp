// Reference rules for the Fourier transforms DFT and STFT (shapes in lib/ir/infer_signal.cpp),
// computed directly (O(n^2) per transformed line) in double:
//   forward  X[k] = sum_{m<n} x[m] e^{-2 pi i k m / n}, k < n (or n / 2 + 1 when onesided)
//   inverse  x[m] = 1/n sum_{k<n} X[k] e^{+2 pi i k m / n}
//   inverse one-sided (a real result): the spectrum's first n / 2 + 1 points stand for the
//   Hermitian whole, X[n - k] = conj(X[k]); the output is the real part.
// A line shorter than n is padded with zeros; a longer one is cut to n (numpy's fft(n=...)).
#include "tensor_index.h"
#include "registry.h"
#include "tensor_helpers.h"

#include <cmath>
#include <complex>
#include <numbers>

namespace sinter::reference {
namespace {

using Complex = std::complex<double>;

/// One transformed line: `input` holds the line's first `available` points.
std::vector<Complex> transform(const std::vector<Complex> &input, int64_t n, bool inverse, bool hermitian,
                               int64_t outputs) {
  std::vector<Complex> full(size_t(n), Complex(0, 0));
  if (hermitian) {
    int64_t half = n / 2 + 1;
    for (int64_t k = 0; k < half && k < int64_t(input.size()); ++k)
      full[size_t(k)] = input[size_t(k)];
    for (int64_t k = half; k < n; ++k)
      full[size_t(k)] = std::conj(full[size_t(n - k)]);
  } else {
    for (int64_t k = 0; k < n && k < int64_t(input.size()); ++k)
      full[size_t(k)] = input[size_t(k)];
  }
  double sign = inverse ? 1.0 : -1.0;
  std::vector<Complex> result(static_cast<size_t>(outputs));
  for (int64_t k = 0; k < outputs; ++k) {
    Complex sum(0, 0);
    for (int64_t m = 0; m < n; ++m) {
      // The angle reduced modulo n in integers first keeps it accurate for long lines.
      double angle = sign * 2.0 * std::numbers::pi * double((k * m) % n) / double(n);
      sum += full[size_t(m)] * Complex(std::cos(angle), std::sin(angle));
    }
    result[size_t(k)] = inverse ? sum / double(n) : sum;
  }
  return result;
}

int64_t scalarValue(const Node &node, const Tensor &tensor, const char *what) {
  if (tensor.elementCount() != 1)
    userError(node.describe(), ": ", what, " must be a scalar");
  return tensor.getInt(0);
}

Outputs evalDFT(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  int64_t rank = x.rank();
  if (rank < 2 || (x.dims().back() != 1 && x.dims().back() != 2))
    userError(node.describe(), ": input must end in a dim of 1 (real) or 2 (complex), got ", shapeStr(x.type().shape));
  bool inverse = node.attrInt("inverse", 0) != 0, onesided = node.attrInt("onesided", 0) != 0;
  int64_t axis = inputs.size() > 2 && inputs[2] ? scalarValue(node, *inputs[2], "axis") : -2;
  axis = normalizeAxis(node, axis, rank);
  if (axis == rank - 1)
    userError(node.describe(), ": axis is the last dim, which holds the complex parts");
  int64_t size = x.dims()[size_t(axis)];
  int64_t n = inputs.size() > 1 && inputs[1] ? scalarValue(node, *inputs[1], "dft_length")
                                             : (inverse && onesided ? 2 * (size - 1) : size);
  if (n <= 0)
    userError(node.describe(), ": the transform length is ", n, "; it must be positive");
  bool realOutput = inverse && onesided;
  int64_t outputs = onesided && !inverse ? n / 2 + 1 : n;
  std::vector<int64_t> outDims = x.dims();
  outDims[size_t(axis)] = outputs;
  outDims.back() = realOutput ? 1 : 2;

  bool complexInput = x.dims().back() == 2;
  std::vector<double> in = toDoubles(x), out(size_t(productOf(outDims)));
  AxisSplit inSplit = splitAtAxis(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 1), axis);
  AxisSplit outSplit = splitAtAxis(std::vector<int64_t>(outDims.begin(), outDims.end() - 1), axis);
  int64_t inParts = complexInput ? 2 : 1, outParts = realOutput ? 1 : 2;
  for (int64_t o = 0; o < inSplit.outer; ++o)
    for (int64_t i = 0; i < inSplit.inner; ++i) {
      std::vector<Complex> line(static_cast<size_t>(size));
      for (int64_t m = 0; m < size; ++m) {
        int64_t at = inSplit.at(o, m, i) * inParts;
        line[size_t(m)] = Complex(in[size_t(at)], complexInput ? in[size_t(at + 1)] : 0.0);
      }
      std::vector<Complex> result = transform(line, n, inverse, realOutput, outputs);
      for (int64_t k = 0; k < outputs; ++k) {
        int64_t at = outSplit.at(o, k, i) * outParts;
        out[size_t(at)] = result[size_t(k)].real();
        if (!realOutput)
          out[size_t(at + 1)] = result[size_t(k)].imag();
      }
    }
  return {fromDoubles(x.dtype(), outDims, out)};
}

Outputs evalSTFT(const Node &node, const Inputs &inputs) {
  const Tensor &signal = requiredInput(node, inputs, 0);
  if (signal.rank() != 3 || (signal.dims()[2] != 1 && signal.dims()[2] != 2))
    userError(node.describe(), ": signal must be [batch, length, 1 or 2], got ", shapeStr(signal.type().shape));
  int64_t step = scalarValue(node, requiredInput(node, inputs, 1), "frame_step");
  const Tensor *window = optionalInput(inputs, 2);
  const Tensor *frameInput = optionalInput(inputs, 3);
  int64_t frame = frameInput ? scalarValue(node, *frameInput, "frame_length") : window ? window->elementCount() : 0;
  if (window && window->elementCount() != frame)
    userError(node.describe(), ": the window has ", window->elementCount(), " elements but frame_length is ", frame);
  bool onesided = node.attrInt("onesided", 1) != 0;
  int64_t batch = signal.dims()[0], length = signal.dims()[1];
  bool complexInput = signal.dims()[2] == 2;
  if (onesided && complexInput)
    userError(node.describe(), ": onesided output needs a real signal");
  if (step <= 0 || frame <= 0 || frame > length)
    userError(node.describe(), ": frame_step ", step, " and frame_length ", frame, " do not fit a signal of ", length);
  int64_t frames = (length - frame) / step + 1, bins = onesided ? frame / 2 + 1 : frame;
  std::vector<double> in = toDoubles(signal), weights = window ? toDoubles(*window) : std::vector<double>(size_t(frame), 1.0);
  std::vector<double> out(size_t(batch * frames * bins * 2));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      std::vector<Complex> line(static_cast<size_t>(frame));
      for (int64_t m = 0; m < frame; ++m) {
        int64_t at = (b * length + f * step + m) * (complexInput ? 2 : 1);
        line[size_t(m)] = Complex(in[size_t(at)], complexInput ? in[size_t(at + 1)] : 0.0) * weights[size_t(m)];
      }
      std::vector<Complex> result = transform(line, frame, false, false, bins);
      for (int64_t k = 0; k < bins; ++k) {
        int64_t at = ((b * frames + f) * bins + k) * 2;
        out[size_t(at)] = result[size_t(k)].real();
        out[size_t(at + 1)] = result[size_t(k)].imag();
      }
    }
  return {fromDoubles(signal.dtype(), {batch, frames, bins, 2}, out)};
}

} // namespace

void registerFourierRules(RuleTable &table) {
  table.add(OpKind::DFT, evalDFT);
  table.add(OpKind::STFT, evalSTFT);
}

} // namespace sinter::reference
