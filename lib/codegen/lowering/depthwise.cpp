#include "sinter/codegen/lowering/depthwise.h"

#include "lowering_rules.h"

#include "sinter/codegen/kernel/index_program.h"
#include "sinter/ir/conv_layout.h"
#include "sinter/support/error.h"

#include <functional>
#include <span>

namespace sinter::codegen {
namespace {

/// X's element as `rhs` reads it, when it reads X directly: a load of f32, f16 or bf16 through
/// casts between those types, or that under `select(inside, ..., 0)`.
ExprRef directRead(const ExprRef &rhs) {
  ExprRef value = rhs;
  if (value->kind == ExprKind::Select) {
    const ExprRef &otherwise = value->operands[2];
    if (otherwise->kind != ExprKind::Constant || otherwise->floatValue != 0.0)
      return nullptr;
    value = value->operands[1];
  }
  return floatLoadBeneathCasts(value) ? value : nullptr;
}

/// Whether `expr`, evaluated over `variable` in [0, count), gives expected(x) at every x.
/// nullopt when the expression is not plain index arithmetic.
std::optional<bool> evaluatesTo(const ExprRef &expr, int variable, int64_t count,
                                const std::function<int64_t(int64_t)> &expected) {
  std::optional<IndexProgram> program = IndexProgram::compile(expr);
  if (!program)
    return std::nullopt;
  std::span<const int64_t> values = program->evaluate(variable, 0, count);
  for (int64_t x = 0; x < count; ++x)
    if (values[size_t(x)] != expected(x))
      return false;
  return true;
}

/// Element d of the row-major multi-index of `flat` over `extents`.
int64_t unravel(int64_t flat, const std::vector<int64_t> &extents, size_t d) {
  for (size_t e = extents.size(); e-- > d + 1;)
    flat /= extents[e];
  return flat % extents[d];
}

} // namespace

PlaneGeometry planeGeometry(const WindowGeometry &geometry) {
  SINTER_ASSERT(geometry.rank() == 1 || geometry.rank() == 2, "a plane window has 1 or 2 spatial dims, not ",
                geometry.rank());
  const size_t columns = geometry.rank() - 1;
  PlaneGeometry plane;
  plane.inColumns = geometry.input[columns];
  plane.outColumns = geometry.output[columns];
  plane.kernelColumns = geometry.kernel[columns];
  plane.strideColumns = geometry.strides[columns];
  plane.dilationColumns = geometry.dilations[columns];
  plane.padLeft = geometry.padBegin[columns];
  if (geometry.rank() == 2) {
    plane.inRows = geometry.input[0];
    plane.outRows = geometry.output[0];
    plane.kernelRows = geometry.kernel[0];
    plane.strideRows = geometry.strides[0];
    plane.dilationRows = geometry.dilations[0];
    plane.padTop = geometry.padBegin[0];
  }
  return plane;
}

int64_t DepthwiseWindow::positions() const { return productOf(geometry.output); }

int64_t DepthwiseWindow::taps() const { return productOf(geometry.kernel); }

std::optional<DepthwiseWindow> groupedWindow(const Contraction &contraction) {
  const ContractionSpec &spec = contraction.spec;
  if (spec.type != DType::Float32 || !spec.window)
    return std::nullopt;
  const ConvolutionWindow &window = *spec.window;
  const WindowGeometry &geometry = window.geometry;
  const size_t dims = geometry.rank();
  if (dims < 1 || dims > 2 || geometry.kernel.size() != dims || window.positions <= 0 ||
      spec.n % window.positions != 0)
    return std::nullopt; // a window of another rank
  const int64_t taps = productOf(geometry.kernel);
  const int64_t plane = productOf(geometry.input);
  if (taps <= 0 || spec.k % taps != 0 || window.groupStride != spec.k / taps * plane)
    return std::nullopt;
  ExprRef read = directRead(spec.rhs);
  if (!read || read->type != DType::Float32)
    return std::nullopt;

  DepthwiseWindow depthwise;
  depthwise.channelsPerGroup = spec.k / taps;
  depthwise.outputsPerGroup = spec.m;
  depthwise.channelStride = plane;
  depthwise.channelsInnermost = depthwise.channelsPerGroup > 1 && convReducesChannelsInnermost(depthwise.channelsPerGroup);
  depthwise.geometry = geometry;
  // The geometry restates the window's expressions (contraction.h): check it does, position by
  // position and reduction step by reduction step (each step's input plane and tap).
  const std::vector<int64_t> &output = geometry.output, &kernel = geometry.kernel;
  const int64_t channels = depthwise.channelsPerGroup;
  auto channelOf = [&](int64_t r) { return depthwise.channelsInnermost ? r % channels : r / taps; };
  auto tapOf = [&](int64_t r) { return depthwise.channelsInnermost ? r / channels : r % taps; };
  std::vector<std::optional<bool>> checks = {
      evaluatesTo(window.channelOffset, spec.r, spec.k, [&](int64_t r) { return channelOf(r) * plane; })};
  for (size_t d = 0; d < dims; ++d) {
    checks.push_back(evaluatesTo(window.base[d], spec.j, window.positions, [&](int64_t p) {
      return unravel(p, output, d) * geometry.strides[d] - geometry.padBegin[d];
    }));
    checks.push_back(evaluatesTo(window.displacement[d], spec.r, spec.k,
                                 [&](int64_t r) { return unravel(tapOf(r), kernel, d) * geometry.dilations[d]; }));
  }
  for (const std::optional<bool> &check : checks) {
    if (!check)
      return std::nullopt;
    SINTER_ASSERT(*check, "the window geometry of ", contraction.kernel.name, " disagrees with its expressions");
  }
  SINTER_ASSERT(productOf(output) == window.positions && window.extent == geometry.input &&
                    window.stride.back() == 1 && (dims == 1 || window.stride[0] == geometry.input[1]),
                "the window geometry of ", contraction.kernel.name, " disagrees with its extents");
  depthwise.read = read;
  depthwise.load = floatLoadBeneathCasts(read);
  depthwise.source = depthwise.load->id;
  depthwise.stored = depthwise.load->type;
  depthwise.channels = spec.batch;
  depthwise.images = spec.n / window.positions;
  depthwise.imageStride = window.imageStride;
  depthwise.planeStride = window.groupStride;
  return depthwise;
}

std::optional<DepthwiseWindow> depthwiseWindow(const Contraction &contraction) {
  std::optional<DepthwiseWindow> window = groupedWindow(contraction);
  if (window && (window->channelsPerGroup != 1 || window->outputsPerGroup != 1))
    return std::nullopt; // more than one input or output channel a group
  return window;
}

} // namespace sinter::codegen
