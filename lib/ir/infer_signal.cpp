// Inference for signal processing: the Fourier transforms DFT and STFT, the window functions
// (HannWindow, HammingWindow, BlackmanWindow) and MelWeightMatrix.
//
// DFT (opset-20 form; the importer turns opset 17's axis attribute into input 2): input
// [..., 1 or 2] (real, or complex as [re, im]); the transform runs along `axis` (input 2,
// default -2, never the last dim) over dft_length points (input 1; default the axis's size, or
// 2 (size - 1) for an inverse one-sided transform). Output: the input's shape with the axis
// dim n (n / 2 + 1 when onesided and forward) and a last dim of 2 (1 when inverse and onesided).
//
// STFT: signal [batch, length, 1 or 2], frame_step (scalar), window [frame_length] (optional),
// frame_length (scalar, optional when the window gives it). Output [batch, frames, bins, 2],
// frames = (length - frame_length) / frame_step + 1, bins = frame_length (/ 2 + 1 when
// onesided, the default, which needs a real signal).
#include "infer_rules.h"

namespace sinter::infer {
namespace {

/// A scalar integer input's value when it is known, else nullopt; checks its dtype and size.
std::optional<int64_t> scalarInput(const InferContext &ctx, int i, const char *what) {
  if (!ctx.hasInput(i))
    return std::nullopt;
  ctx.requireDType(i, isIndexType, "i32 or i64");
  if (ctx.rank(i) > 1 || (ctx.rank(i) == 1 && ctx.shape(i)[0].isStatic() && ctx.shape(i)[0].value() != 1))
    ctx.failInput(i, "(", what, ") must be a scalar");
  std::optional<std::vector<int64_t>> values = ctx.constantInts(i);
  if (!values || values->size() != 1)
    return std::nullopt;
  return (*values)[0];
}

Types dft(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRankAtLeast(0, 2);
  const Shape &x = ctx.shape(0);
  int rank = ctx.rank(0);
  if (x.back().isStatic() && x.back().value() != 1 && x.back().value() != 2)
    ctx.failInput(0, "must end in a dim of 1 (real) or 2 (complex)");
  bool inverse = ctx.node().attrInt("inverse", 0) != 0;
  bool onesided = ctx.node().attrInt("onesided", 0) != 0;
  std::optional<int64_t> length = scalarInput(ctx, 1, "dft_length");
  if (length && *length <= 0)
    ctx.fail("dft_length must be positive, not ", *length);
  std::optional<int64_t> axis = ctx.hasInput(2) ? scalarInput(ctx, 2, "axis") : std::optional<int64_t>(-2);
  Shape out = x;
  out.back() = Dim(inverse && onesided ? 1 : 2);
  if (!axis) {
    for (int d = 0; d + 1 < rank; ++d)
      out[d] = Dim::unknown();
    return {{ctx.dtype(0), out}};
  }
  int a = ctx.normalizeAxis(*axis, rank);
  if (a == rank - 1)
    ctx.fail("axis ", *axis, " is the last dim, which holds the complex parts");
  Dim n = Dim::unknown();
  if (length)
    n = Dim(*length);
  else if (x[a].isStatic())
    n = Dim(inverse && onesided ? 2 * (x[a].value() - 1) : x[a].value());
  if (n.isStatic() && n.value() <= 0)
    ctx.fail("the transform length would be ", n.value());
  out[a] = n.isStatic() && onesided && !inverse ? Dim(n.value() / 2 + 1) : n;
  return {{ctx.dtype(0), out}};
}

Types stft(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRank(0, 3);
  const Shape &signal = ctx.shape(0);
  if (signal[2].isStatic() && signal[2].value() != 1 && signal[2].value() != 2)
    ctx.failInput(0, "must end in a dim of 1 (real) or 2 (complex)");
  bool onesided = ctx.node().attrInt("onesided", 1) != 0;
  if (onesided && signal[2].isStatic() && signal[2].value() == 2)
    ctx.fail("onesided output needs a real signal");
  std::optional<int64_t> step = scalarInput(ctx, 1, "frame_step");
  if (step && *step <= 0)
    ctx.fail("frame_step must be positive, not ", *step);
  std::optional<int64_t> frame = scalarInput(ctx, 3, "frame_length");
  if (ctx.hasInput(2)) {
    ctx.requireSameDType(0, 2);
    ctx.requireRank(2, 1);
    const Dim &window = ctx.shape(2)[0];
    if (frame && window.isStatic() && window.value() != *frame)
      ctx.fail("the window has ", window.value(), " elements but frame_length is ", *frame);
    if (!frame && window.isStatic())
      frame = window.value();
  } else if (!ctx.hasInput(3)) {
    ctx.fail("needs a window or a frame_length");
  }
  if (frame && *frame <= 0)
    ctx.fail("frame_length must be positive, not ", *frame);
  Dim frames = Dim::unknown(), bins = Dim::unknown();
  if (frame && step && signal[1].isStatic()) {
    if (signal[1].value() < *frame)
      ctx.fail("the signal (", signal[1].value(), " samples) is shorter than a frame (", *frame, ")");
    frames = Dim((signal[1].value() - *frame) / *step + 1);
  }
  if (frame)
    bins = Dim(onesided ? *frame / 2 + 1 : *frame);
  return {{ctx.dtype(0), {signal[0], frames, bins, Dim(2)}}};
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] of output_datatype (default f32).
Types melWeightMatrix(const InferContext &ctx) {
  for (int i : {0, 1, 2})
    scalarInput(ctx, i, i == 0 ? "num_mel_bins" : i == 1 ? "dft_length" : "sample_rate");
  for (int i : {3, 4})
    ctx.requireDType(i, isFloatType, "a float type");
  DType dtype = dtypeFromOnnxAttr(ctx, ctx.node().attrInt("output_datatype", 1), "output_datatype");
  std::optional<int64_t> bins = scalarInput(ctx, 0, "num_mel_bins"), length = scalarInput(ctx, 1, "dft_length");
  if ((bins && *bins <= 0) || (length && *length <= 0))
    ctx.fail("num_mel_bins and dft_length must be positive");
  return {{dtype, {length ? Dim(*length / 2 + 1) : Dim::unknown(), bins ? Dim(*bins) : Dim::unknown()}}};
}

/// The window functions: [size] in output_datatype (default f32).
Types window(const InferContext &ctx) {
  requireScalar(ctx, 0, "size");
  ctx.requireDType(0, isIndexType, "i32 or i64");
  DType dtype = dtypeFromOnnxAttr(ctx, ctx.node().attrInt("output_datatype", 1), "output_datatype");
  int64_t periodic = ctx.node().attrInt("periodic", 1);
  if (periodic != 0 && periodic != 1)
    ctx.fail("attribute 'periodic' must be 0 or 1, not ", periodic);
  Dim length;
  if (auto size = ctx.constantInts(0); size && size->size() == 1)
    length = nonNegativeDim(ctx, size->front(), "size");
  return {{dtype, {length}}};
}

} // namespace

void registerSignalInference(InferTable &table) {
  table.add(OpKind::DFT, dft);
  table.add(OpKind::STFT, stft);
  table.add(OpKind::MelWeightMatrix, melWeightMatrix);
  for (OpKind kind : {OpKind::HannWindow, OpKind::HammingWindow, OpKind::BlackmanWindow})
    table.add(kind, window);
}

} // namespace sinter::infer
