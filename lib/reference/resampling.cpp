// Reference rule for Resize (ai.onnx opset 19+ semantics, as ONNX's own reference computes it).
//
// Resize is separable: each resized axis is done in turn (in the order of `axes`). Along one axis,
// output position y maps to a source coordinate x by the coordinate_transformation_mode, with
// scale = output / input extent (from `sizes`) or the given scale (from `scales`):
//   half_pixel            (y + 0.5) / scale - 0.5
//   half_pixel_symmetric  the same, shifted so the centres of input and output line up when the
//                         output extent was rounded: + input/2 * (1 - output / (scale * input))
//   pytorch_half_pixel    half_pixel, but -0.5 when the output width (scale * input) is 1
//   align_corners         y * (input - 1) / (scale * input - 1), 0 when the output width is 1
//   asymmetric            y / scale
//   tf_crop_and_resize    through roi = [start, end] in normalised input coordinates; x outside
//                         [0, input - 1] gives extrapolation_value
// The value at x weighs a few neighbours ("taps") around floor(x) with coefficients from the mode
// and ratio = x - floor(x) (1 when x is whole): nearest picks one (by nearest_mode), linear two,
// cubic four (Keys kernel with cubic_coeff_a); antialias widens linear and cubic kernels by
// 1 / scale when downsampling. Taps outside the input clamp to the edge, or with exclude_outside
// drop out and the rest are renormalised.
//
// Nearest copies bytes (exact for every dtype); linear and cubic compute in double and round once
// (to nearest even, saturating, for integer dtypes).
#include "tensor_index.h"
#include "registry.h"
#include "sinter/ir/op_attributes.h"
#include "tensor_helpers.h"

#include <algorithm>
#include <cmath>

namespace sinter::reference {
namespace {

using ResizeOptions = ResizeAttributes; // sinter/ir/op_attributes.h

/// How one axis is resized: for each output position, its taps start at `first` (before clamping
/// to the input) with `weights`; or it takes the extrapolation value.
struct AxisPlan {
  int64_t outExtent = 0;
  int taps = 0;
  std::vector<int64_t> first;
  std::vector<double> weights; ///< outExtent x taps
  std::vector<bool> extrapolate;
};

bool isClose(double a, double b) {
  return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

/// The source coordinate of output position y (see the table at the top of the file). Sets
/// `outside` when tf_crop_and_resize maps it out of the input.
double sourceCoordinate(const Node &node, const ResizeOptions &options, double y, double scale,
                        int64_t input, int64_t output, double roiStart, double roiEnd,
                        bool &outside) {
  const std::string &mode = options.coordinateMode;
  // The fractional output width, as ONNX's reference implementation (which made the node tests'
  // data) computes it; onnxruntime uses the rounded length, which differs only when the scale
  // does not give a whole number of elements.
  double outputWidth = scale * double(input);
  outside = false;
  if (mode == "half_pixel")
    return (y + 0.5) / scale - 0.5;
  if (mode == "half_pixel_symmetric") {
    double adjustment = double(output) / outputWidth;
    double offset = double(input) / 2 * (1 - adjustment);
    return offset + (y + 0.5) / scale - 0.5;
  }
  if (mode == "pytorch_half_pixel")
    return outputWidth == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (mode == "align_corners")
    return outputWidth == 1 ? 0.0 : y * double(input - 1) / (outputWidth - 1);
  if (mode == "asymmetric")
    return y / scale;
  if (mode == "tf_crop_and_resize") {
    double x = outputWidth == 1 ? (roiEnd - roiStart) * double(input - 1) / 2
                                : y * (roiEnd - roiStart) * double(input - 1) / (outputWidth - 1);
    x += roiStart * double(input - 1);
    outside = x < 0 || x > double(input - 1);
    return x;
  }
  userError(node.describe(), ": unknown coordinate_transformation_mode '", mode, "'");
}

/// Tap coefficients for a source coordinate whose distance past floor(x) is `ratio` (in (0, 1]).
std::vector<double> coefficients(const Node &node, const ResizeOptions &options, double ratio,
                                 double scale) {
  switch (options.mode) {
  case ResizeMode::Nearest: {
    if (ratio == 1.0)
      return {0, 1};
    const std::string &rounding = options.nearestMode;
    bool up;
    if (rounding == "round_prefer_floor")
      up = ratio > 0.5;
    else if (rounding == "round_prefer_ceil")
      up = ratio >= 0.5;
    else if (rounding == "floor")
      up = false;
    else if (rounding == "ceil")
      up = true;
    else
      userError(node.describe(), ": unknown nearest_mode '", rounding, "'");
    return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
  }
  case ResizeMode::Linear: {
    if (!options.antialias)
      return {1 - ratio, ratio};
    // A triangle of half-width 1 / scale when downsampling, normalised.
    double s = std::min(scale, 1.0);
    int64_t start = int64_t(std::floor(-1 / s)) + 1;
    std::vector<double> weights;
    double total = 0;
    for (int64_t i = start; i < start + 2 - 2 * start; ++i) {
      weights.push_back(std::clamp(1 - std::fabs((double(i) - ratio) * s), 0.0, 1.0));
      total += weights.back();
    }
    for (double &weight : weights)
      weight /= total;
    return weights;
  }
  case ResizeMode::Cubic: {
    double a = options.cubicA;
    if (!options.antialias) {
      double r = ratio, q = 1 - ratio;
      return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
              ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
              ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a};
    }
    auto keys = [a](double x) {
      x = std::fabs(x);
      if (x <= 1)
        return ((a + 2) * x - (a + 3)) * x * x + 1;
      if (x < 2)
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
      return 0.0;
    };
    double s = std::min(scale, 1.0);
    int64_t start = int64_t(std::floor(-2 / s)) + 1;
    std::vector<double> weights;
    double total = 0;
    for (int64_t i = start; i < 2 - start; ++i) {
      weights.push_back(keys(s * (double(i) - ratio)));
      total += weights.back();
    }
    for (double &weight : weights)
      weight /= total;
    return weights;
  }
  }
  SINTER_ASSERT(false, "unhandled resize mode");
}

AxisPlan planAxis(const Node &node, const ResizeOptions &options, int64_t input, int64_t output,
                  double scale, double roiStart, double roiEnd) {
  AxisPlan plan;
  plan.outExtent = output;
  for (int64_t y = 0; y < output; ++y) {
    bool outside;
    double x =
        sourceCoordinate(node, options, double(y), scale, input, output, roiStart, roiEnd, outside);
    double whole = std::floor(x);
    double ratio = x == whole ? 1.0 : x - whole;
    std::vector<double> weights = coefficients(node, options, ratio, scale);
    int taps = int(weights.size());
    // The `taps` inputs nearest x, ties to the lower ones; computed, like ONNX's reference, on x
    // shifted by the edge padding so rounding matches it.
    int64_t padding = (taps + 1) / 2;
    double shifted = x + double(padding);
    double base = std::floor(shifted), fraction = shifted - base;
    int64_t offset = taps % 2 == 0 ? (fraction == 0 ? -(taps / 2) : -(taps / 2) + 1)
                                   : (fraction <= 0.5 ? -((taps - 1) / 2) : -((taps - 1) / 2) + 1);
    int64_t first = int64_t(base) + offset - padding;
    if (options.excludeOutside) {
      double total = 0;
      for (int j = 0; j < taps; ++j) {
        if (first + j < 0 || first + j >= input)
          weights[j] = 0;
        total += weights[j];
      }
      for (double &weight : weights)
        weight /= total == 0 ? 1.0 : total;
    }
    plan.taps = taps;
    plan.first.push_back(first);
    plan.weights.insert(plan.weights.end(), weights.begin(), weights.end());
    plan.extrapolate.push_back(outside);
  }
  return plan;
}

/// The tap of a nearest plan with weight 1: an input index, or -1 when no tap has weight (only with
/// exclude_outside), which gives zero.
int64_t nearestSource(const AxisPlan &plan, int64_t y, int64_t input) {
  for (int j = 0; j < plan.taps; ++j)
    if (plan.weights[y * plan.taps + j] != 0)
      return std::clamp<int64_t>(plan.first[y] + j, 0, input - 1);
  return -1;
}

/// Resizes `axis` of `x` (dims `dims`) by byte copies: the nearest mode.
Tensor resizeAxisNearest(const Tensor &x, int64_t axis, const AxisPlan &plan,
                         const Tensor &extrapolation) {
  std::vector<int64_t> dims = x.dims();
  AxisSplit from = splitAtAxis(dims, axis);
  dims[axis] = plan.outExtent;
  AxisSplit to = splitAtAxis(dims, axis);
  Tensor out(x.dtype(), dims); // zero-filled
  for (int64_t o = 0; o < to.outer; ++o)
    for (int64_t y = 0; y < to.size; ++y)
      for (int64_t i = 0; i < to.inner; ++i) {
        if (plan.extrapolate[y]) {
          copyElements(extrapolation, 0, out, to.at(o, y, i));
        } else if (int64_t source = nearestSource(plan, y, from.size); source >= 0) {
          copyElements(x, from.at(o, source, i), out, to.at(o, y, i));
        }
      }
  return out;
}

/// Resizes `axis` of the double buffer `values` (dims `dims`, updated): linear and cubic.
std::vector<double> resizeAxisWeighted(const std::vector<double> &values,
                                       std::vector<int64_t> &dims, int64_t axis,
                                       const AxisPlan &plan, double extrapolation) {
  AxisSplit from = splitAtAxis(dims, axis);
  dims[axis] = plan.outExtent;
  AxisSplit to = splitAtAxis(dims, axis);
  std::vector<double> out(static_cast<size_t>(productOf(dims)), 0.0);
  for (int64_t o = 0; o < to.outer; ++o)
    for (int64_t y = 0; y < to.size; ++y)
      for (int64_t i = 0; i < to.inner; ++i) {
        double sum = 0;
        if (plan.extrapolate[y]) {
          sum = extrapolation;
        } else {
          for (int j = 0; j < plan.taps; ++j) {
            int64_t source = std::clamp<int64_t>(plan.first[y] + j, 0, from.size - 1);
            sum += plan.weights[y * plan.taps + j] * values[from.at(o, source, i)];
          }
        }
        out[to.at(o, y, i)] = sum;
      }
  return out;
}

/// A tensor input that counts as absent when it is missing or empty (models pass empty
/// placeholders for roi and scales).
const Tensor *presentInput(const Inputs &inputs, int index) {
  const Tensor *input = optionalInput(inputs, index);
  return input && input->elementCount() > 0 ? input : nullptr;
}

Outputs evalResize(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor *roi = presentInput(inputs, 1);
  const Tensor *scales = presentInput(inputs, 2);
  const Tensor *sizes = presentInput(inputs, 3);
  int64_t rank = x.rank();

  const ResizeOptions options = resizeAttributes(node);
  if (options.antialias && options.mode == ResizeMode::Nearest)
    userError(node.describe(), ": antialias applies to linear and cubic modes, not nearest");
  if (options.mode != ResizeMode::Nearest && !isFloat(x.dtype()) && !isInteger(x.dtype()))
    unsupportedDType(node, x.dtype());

  std::vector<int64_t> axes;
  if (node.hasAttr("axes")) {
    for (int64_t axis : node.attrInts("axes")) {
      int64_t a = normalizeAxis(node, axis, rank);
      if (std::count(axes.begin(), axes.end(), a))
        userError(node.describe(), ": axis ", axis, " is repeated");
      axes.push_back(a);
    }
  } else {
    for (int64_t a = 0; a < rank; ++a)
      axes.push_back(a);
  }
  size_t count = axes.size();
  if ((scales != nullptr) == (sizes != nullptr))
    userError(node.describe(), ": exactly one of scales and sizes must be given");

  // Per dim of x: scale, output extent, roi.
  std::vector<double> scale(rank, 1.0), roiStart(rank, 0.0), roiEnd(rank, 1.0);
  std::vector<int64_t> outDims = x.dims();
  if (roi) {
    if (size_t(roi->elementCount()) != 2 * count)
      userError(node.describe(), ": roi has ", roi->elementCount(), " values for ", count, " axes");
    for (size_t i = 0; i < count; ++i) {
      roiStart[axes[i]] = loadAsDouble(*roi, int64_t(i));
      roiEnd[axes[i]] = loadAsDouble(*roi, int64_t(count + i));
    }
  }
  if (scales) {
    if (size_t(scales->elementCount()) != count)
      userError(node.describe(), ": scales has ", scales->elementCount(), " values for ", count,
                " axes");
    for (size_t i = 0; i < count; ++i) {
      double s = loadAsDouble(*scales, int64_t(i));
      if (!(s > 0))
        userError(node.describe(), ": scale ", s, " must be positive");
      scale[axes[i]] = s;
      outDims[axes[i]] = int64_t(s * double(x.dims()[axes[i]]));
    }
  } else {
    std::vector<int64_t> wanted = *optionalIntsInput(node, sizes, 3);
    if (wanted.size() != count)
      userError(node.describe(), ": sizes has ", wanted.size(), " values for ", count, " axes");
    for (size_t i = 0; i < count; ++i) {
      if (wanted[i] < 0)
        userError(node.describe(), ": size ", wanted[i], " is negative");
      scale[axes[i]] = double(wanted[i]) / double(x.dims()[axes[i]]);
      outDims[axes[i]] = wanted[i];
    }
    std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch") {
      if (policy != "not_larger" && policy != "not_smaller")
        userError(node.describe(), ": unknown keep_aspect_ratio_policy '", policy, "'");
      double common = scale[axes[0]];
      for (int64_t axis : axes)
        common =
            policy == "not_larger" ? std::min(common, scale[axis]) : std::max(common, scale[axis]);
      for (int64_t axis : axes) {
        scale[axis] = common;
        outDims[axis] = int64_t(common * double(x.dims()[axis]) + 0.5);
      }
    }
  }

  Tensor extrapolation(x.dtype(), {});
  storeFromDouble(extrapolation, 0,
                  isInteger(x.dtype()) ? std::nearbyint(options.extrapolationValue)
                                       : options.extrapolationValue);
  Tensor current = x;
  std::vector<double> values;
  std::vector<int64_t> dims = x.dims();
  bool weighted = options.mode != ResizeMode::Nearest;
  if (weighted)
    values = toDoubles(x);
  for (int64_t axis : axes) {
    bool identity = isClose(scale[axis], 1.0) && outDims[axis] == x.dims()[axis] &&
                    roiStart[axis] == 0.0 && isClose(roiEnd[axis], 1.0);
    if (identity)
      continue;
    if (x.dims()[axis] == 0 && outDims[axis] > 0)
      userError(node.describe(), ": cannot resize empty axis ", axis, " to ", outDims[axis]);
    AxisPlan plan = planAxis(node, options, x.dims()[axis], outDims[axis], scale[axis],
                             roiStart[axis], roiEnd[axis]);
    if (weighted)
      values = resizeAxisWeighted(values, dims, axis, plan, options.extrapolationValue);
    else
      current = resizeAxisNearest(current, axis, plan, extrapolation);
  }
  if (!weighted)
    return {current};
  if (isInteger(x.dtype()))
    for (double &value : values)
      value = std::nearbyint(value); // ties to even; the store then saturates
  return {fromDoubles(x.dtype(), outDims, values)};
}

} // namespace

namespace {

// ---- GridSample -------------------------------------------------------------------------------
//
// GridSample (opset 22): X [N, C, D1..Dr] sampled at the normalised coordinates of grid
// [N, G1..Gr, r] (the last dim lists x first, so it is reversed to match D1..Dr). A coordinate
// in [-1, 1] maps to the input as (g + 1) / 2 * (d - 1) with align_corners, else
// ((g + 1) * d - 1) / 2. Coordinates outside [lo, hi] (0 .. d-1 with align_corners, else
// -0.5 .. d-0.5) are clamped (padding "border") or reflected (padding "reflection") first; then
// "nearest" rounds half to even, "linear" and "cubic" (Keys, a = -0.75) interpolate separably
// over 2 or 4 neighbours per dim. A neighbour outside the input is 0 ("zeros"), the clamped
// index ("border"), or the reflected one ("reflection").

struct GridSampleOptions {
  std::string mode, padding;
  bool alignCorners = false;
};

double reflectInto(double x, double low, double high) {
  double range = high - low;
  if (range <= 0)
    return low;
  if (x < low) {
    double distance = low - x;
    auto folds = int64_t(distance / range);
    double rest = distance - double(folds) * range;
    return folds % 2 == 0 ? low + rest : high - rest;
  }
  if (x > high) {
    double distance = x - high;
    auto folds = int64_t(distance / range);
    double rest = distance - double(folds) * range;
    return folds % 2 == 0 ? high - rest : low + rest;
  }
  return x;
}

void cubicCoefficients(double t, double coefficients[4]) {
  const double a = -0.75;
  t = std::abs(t);
  coefficients[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  coefficients[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  coefficients[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
  coefficients[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

Outputs evalGridSample(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &grid = requiredInput(node, inputs, 1);
  GridSampleOptions options{node.attrString("mode", "linear"), node.attrString("padding_mode", "zeros"),
                            node.attrInt("align_corners", 0) != 0};
  if (options.mode == "bilinear")
    options.mode = "linear";
  if (options.mode == "bicubic")
    options.mode = "cubic";
  if (options.mode != "nearest" && options.mode != "linear" && options.mode != "cubic")
    userError(node.describe(), ": mode '", options.mode, "' is not nearest, linear or cubic");
  if (options.padding != "zeros" && options.padding != "border" && options.padding != "reflection")
    userError(node.describe(), ": padding_mode '", options.padding, "' is not zeros, border or reflection");
  int spatial = x.rank() - 2;
  if (spatial < 1 || grid.rank() != x.rank() || grid.dims().back() != spatial || grid.dims()[0] != x.dims()[0])
    userError(node.describe(), ": grid must be [N, G1..G", spatial, ", ", spatial, "] for input ",
              shapeStr(shapeOf(x.dims())));
  int64_t n = x.dims()[0], channels = x.dims()[1];
  std::vector<int64_t> inDims(x.dims().begin() + 2, x.dims().end());
  std::vector<int64_t> outSpatial(grid.dims().begin() + 1, grid.dims().end() - 1);
  int64_t points = 1, pixels = 1;
  for (int64_t d : outSpatial)
    points *= d;
  for (int64_t d : inDims)
    pixels *= d;
  std::vector<double> low(static_cast<size_t>(spatial)), high(static_cast<size_t>(spatial));
  for (int i = 0; i < spatial; ++i) {
    low[i] = options.alignCorners ? 0.0 : -0.5;
    high[i] = options.alignCorners ? double(inDims[i] - 1) : double(inDims[i]) - 0.5;
  }
  std::vector<double> in = toDoubles(x), g = toDoubles(grid);
  std::vector<int64_t> outDims{n, channels};
  outDims.insert(outDims.end(), outSpatial.begin(), outSpatial.end());
  std::vector<double> out(size_t(n * channels * points));
  // The pixel index along dim i for an integer coordinate, or -1 for a zero (padding "zeros").
  auto neighbour = [&](int i, int64_t c) -> int64_t {
    if (c >= 0 && c < inDims[i])
      return c;
    if (options.padding == "zeros")
      return -1;
    if (options.padding == "border")
      return std::clamp<int64_t>(c, 0, inDims[i] - 1);
    return std::clamp<int64_t>(int64_t(reflectInto(double(c), low[i], high[i])), 0, inDims[i] - 1);
  };
  int taps = options.mode == "cubic" ? 4 : options.mode == "linear" ? 2 : 1;
  std::vector<std::vector<int64_t>> index(static_cast<size_t>(spatial), std::vector<int64_t>(4));
  std::vector<std::vector<double>> weight(static_cast<size_t>(spatial), std::vector<double>(4));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < points; ++p) {
      for (int i = 0; i < spatial; ++i) {
        double normalised = g[size_t((b * points + p) * spatial + (spatial - 1 - i))];
        double c = options.alignCorners ? (normalised + 1) / 2 * double(inDims[i] - 1)
                                        : ((normalised + 1) * double(inDims[i]) - 1) / 2;
        if (options.mode == "nearest")
          c = std::nearbyint(c);
        if (c < low[i] || c > high[i]) {
          if (options.padding == "border")
            c = std::clamp(c, 0.0, double(inDims[i] - 1));
          else if (options.padding == "reflection")
            c = reflectInto(c, low[i], high[i]);
        }
        if (options.mode == "nearest") {
          index[i][0] = neighbour(i, int64_t(c));
          weight[i][0] = 1;
          continue;
        }
        double base = std::floor(c);
        double t = c - base;
        if (options.mode == "linear") {
          weight[i][0] = 1 - t;
          weight[i][1] = t;
          for (int k = 0; k < 2; ++k)
            index[i][k] = neighbour(i, int64_t(base) + k);
        } else {
          double coefficients[4];
          cubicCoefficients(t, coefficients);
          for (int k = 0; k < 4; ++k) {
            weight[i][k] = coefficients[k];
            index[i][k] = neighbour(i, int64_t(base) - 1 + k);
          }
        }
      }
      int64_t combinations = 1;
      for (int i = 0; i < spatial; ++i)
        combinations *= taps;
      for (int64_t c = 0; c < channels; ++c) {
        const double *plane = &in[size_t((b * channels + c) * pixels)];
        double sum = 0;
        for (int64_t combination = 0; combination < combinations; ++combination) {
          int64_t rest = combination, flat = 0;
          double w = 1;
          bool zero = false;
          for (int i = spatial - 1; i >= 0; --i) {
            int k = int(rest % taps);
            rest /= taps;
            w *= weight[i][k];
            zero |= index[i][k] < 0;
          }
          if (zero || w == 0)
            continue;
          rest = combination;
          int64_t stride = 1;
          for (int i = spatial - 1; i >= 0; --i) {
            int k = int(rest % taps);
            rest /= taps;
            flat += index[i][k] * stride;
            stride *= inDims[i];
          }
          sum += w * plane[flat];
        }
        out[size_t((b * channels + c) * points + p)] = sum;
      }
    }
  return {fromDoubles(x.dtype(), outDims, out)};
}

// AffineGrid (opset 20): theta [N, 2, 3] (or [N, 3, 4]) and size (N, C, H, W) (or (N, C, D, H,
// W)) give the grid [N, H, W, 2] (or [N, D, H, W, 3]) of theta applied to the normalised
// coordinates (x, y[, z], 1) of each output position; x runs along W. Position i of a dim of
// size s sits at -1 + 2i / (s - 1) with align_corners, else -1 + (2i + 1) / s.
Outputs evalAffineGrid(const Node &node, const Inputs &inputs) {
  const Tensor &theta = requiredInput(node, inputs, 0);
  std::vector<int64_t> size = requiredInput(node, inputs, 1).toInts();
  bool alignCorners = node.attrInt("align_corners", 0) != 0;
  if (size.size() != 4 && size.size() != 5)
    userError(node.describe(), ": size must list N, C and 2 or 3 spatial dims");
  int spatial = int(size.size()) - 2;
  int64_t n = size[0];
  if (theta.dims() != std::vector<int64_t>{n, spatial, spatial + 1})
    userError(node.describe(), ": theta must be [", n, ", ", spatial, ", ", spatial + 1, "], got ",
              shapeStr(shapeOf(theta.dims())));
  std::vector<int64_t> dims(size.begin() + 2, size.end());
  int64_t points = 1;
  for (int64_t d : dims) {
    if (d < 0)
      userError(node.describe(), ": size has a negative dim");
    points *= d;
  }
  std::vector<double> t = toDoubles(theta);
  std::vector<double> out(static_cast<size_t>(n * points * spatial));
  std::vector<double> homogeneous(static_cast<size_t>(spatial + 1), 1.0);
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (int i = spatial - 1; i >= 0; --i) { // dims[i] is coordinate spatial - 1 - i (x is W)
      int64_t position = rest % dims[i];
      rest /= dims[i];
      double s = double(dims[i]);
      homogeneous[size_t(spatial - 1 - i)] =
          alignCorners ? (dims[i] > 1 ? -1 + 2.0 * double(position) / (s - 1) : -1.0)
                       : -1 + (2.0 * double(position) + 1) / s;
    }
    for (int64_t b = 0; b < n; ++b)
      for (int k = 0; k < spatial; ++k) {
        double sum = 0;
        for (int j = 0; j <= spatial; ++j)
          sum += t[size_t((b * spatial + k) * (spatial + 1) + j)] * homogeneous[size_t(j)];
        out[size_t((b * points + p) * spatial + k)] = sum;
      }
  }
  std::vector<int64_t> outDims{n};
  outDims.insert(outDims.end(), dims.begin(), dims.end());
  outDims.push_back(spatial);
  return {fromDoubles(theta.dtype(), outDims, out)};
}

} // namespace

void registerResamplingRules(RuleTable &table) {
  table.add(OpKind::Resize, evalResize);
  table.add(OpKind::AffineGrid, evalAffineGrid);
  table.add(OpKind::GridSample, evalGridSample);
}

} // namespace sinter::reference
