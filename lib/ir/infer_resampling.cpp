// Inference for resampling: Resize (scales or sizes, with axes and keep_aspect_ratio_policy),
// GridSample and AffineGrid.
#include "infer_rules.h"

#include <algorithm>
#include <cmath>

namespace sinter::infer {
namespace {

/// An input that is absent, or present but empty (exporters pass "" or an empty tensor).
bool isEmptyInput(const InferContext &ctx, int i) {
  if (!ctx.hasInput(i))
    return true;
  auto count = elementCount(ctx.shape(i));
  return count && *count == 0;
}

Types resize(const InferContext &ctx) {
  const Shape &in = ctx.shape(0);
  int rank = int(in.size());
  const Node &node = ctx.node();
  std::string policy = node.attrString("keep_aspect_ratio_policy", "stretch");
  if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
    ctx.fail("attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or not_smaller, ",
             "not \"", policy, "\"");
  std::vector<int> axes;
  if (node.hasAttr("axes")) {
    axes = ctx.normalizeAxes(node.attrInts("axes"), rank);
  } else {
    for (int i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  bool hasScales = !isEmptyInput(ctx, 2), hasSizes = !isEmptyInput(ctx, 3);
  if (hasScales == hasSizes)
    ctx.fail("needs exactly one of the 'scales' (input 2) and 'sizes' (input 3) inputs");
  Shape out = in;
  if (hasScales) {
    if (ctx.dtype(2) != DType::Float32 || ctx.rank(2) != 1)
      ctx.failInput(2, "(scales) must be a 1-D f32 tensor");
    if (policy != "stretch")
      ctx.fail("'scales' needs keep_aspect_ratio_policy \"stretch\"");
    const Tensor *scales = ctx.constant(2);
    if (ctx.shape(2)[0].isStatic() && size_t(ctx.shape(2)[0].value()) != axes.size())
      ctx.failInput(2, "(scales) has ", ctx.shape(2)[0].value(), " entries; expected ",
                    axes.size());
    for (size_t k = 0; k < axes.size(); ++k) {
      int axis = axes[k];
      if (!scales) {
        out[axis] = Dim::unknown();
        continue;
      }
      double scale = scales->getDouble(int64_t(k));
      if (!(scale > 0) || !std::isfinite(scale))
        ctx.failInput(2, "(scales) has a non-positive or non-finite scale ", scale);
      if (!in[axis].isStatic()) {
        out[axis] = scale == 1.0 ? in[axis] : Dim::unknown();
        continue;
      }
      double size = std::floor(double(in[axis].value()) * scale);
      if (size >= 9.2e18)
        ctx.fail("resizing dim ", axis, " by ", scale, " overflows");
      out[axis] = Dim(int64_t(size));
    }
    return {{ctx.dtype(0), out}};
  }

  if (ctx.dtype(3) != DType::Int64 || ctx.rank(3) != 1)
    ctx.failInput(3, "(sizes) must be a 1-D i64 tensor");
  auto sizes = ctx.integerValues(3);
  if (sizes && sizes->size() != axes.size())
    ctx.failInput(3, "(sizes) has ", sizes->size(), " entries; expected ", axes.size());
  if (!sizes) {
    for (int axis : axes)
      out[axis] = Dim::unknown();
    return {{ctx.dtype(0), out}};
  }
  for (const SymInt &size : *sizes)
    if (size.isConstant() && *size.value < 0)
      ctx.failInput(3, "(sizes) has a negative size ", *size.value);
  if (policy == "stretch") {
    for (size_t k = 0; k < axes.size(); ++k)
      out[axes[k]] = (*sizes)[k].toDim();
    return {{ctx.dtype(0), out}};
  }
  // not_larger / not_smaller: one scale for every axis, the min (or max) of sizes / input.
  bool known = true;
  double scale = 0;
  for (size_t k = 0; k < axes.size(); ++k) {
    const Dim &dim = in[axes[k]];
    if (!dim.isStatic() || !(*sizes)[k].isConstant() || dim.value() == 0) {
      known = false;
      break;
    }
    double ratio = double(*(*sizes)[k].value) / double(dim.value());
    scale = k == 0 ? ratio : policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
  }
  for (size_t k = 0; k < axes.size(); ++k) {
    double size = std::round(scale * double(in[axes[k]].value()));
    if (known && size >= 9.2e18)
      ctx.fail("resizing dim ", axes[k], " by ", scale, " overflows");
    out[axes[k]] = known ? Dim(int64_t(size)) : Dim::unknown();
  }
  return {{ctx.dtype(0), out}};
}

/// GridSample: X [N, C, D1..Dr] and grid [N, G1..Gr, r] give [N, C, G1..Gr].
Types gridSample(const InferContext &ctx) {
  ctx.requireDType(1, isFloatType, "a float type");
  int rank = ctx.rank(0);
  if (rank < 3)
    ctx.failInput(0, "must be [N, C, D1, ...]");
  ctx.requireRank(1, rank);
  const Shape &x = ctx.shape(0), &grid = ctx.shape(1);
  if (grid.back().isStatic() && grid.back().value() != rank - 2)
    ctx.failInput(1, "(grid) must end in a dim of ", rank - 2, " coordinates");
  std::string mode = ctx.node().attrString("mode", "linear");
  if (mode != "nearest" && mode != "linear" && mode != "cubic" && mode != "bilinear" && mode != "bicubic")
    ctx.fail("attribute 'mode' must be nearest, linear or cubic, not \"", mode, "\"");
  Shape out{mergeDims(ctx, x[0], grid[0], "the batch dims of X and grid"), x[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return {{ctx.dtype(0), out}};
}

/// AffineGrid: theta [N, r, r + 1] and size [N, C, D1..Dr] give [N, D1..Dr, r].
Types affineGrid(const InferContext &ctx) {
  ctx.requireDType(0, isFloatType, "a float type");
  ctx.requireRank(0, 3);
  ctx.requireDType(1, isIndexType, "i32 or i64");
  const Shape &theta = ctx.shape(0);
  int spatial = theta[1].isStatic() ? int(theta[1].value()) : -1;
  if (spatial != 2 && spatial != 3)
    ctx.failInput(0, "(theta) must be [N, 2, 3] or [N, 3, 4]");
  Shape out{theta[0]};
  if (auto size = ctx.constantInts(1); size && int(size->size()) == spatial + 2) {
    for (int i = 0; i < spatial; ++i)
      out.push_back(nonNegativeDim(ctx, (*size)[size_t(2 + i)], "size"));
  } else {
    for (int i = 0; i < spatial; ++i)
      out.push_back(Dim::unknown());
  }
  out.push_back(Dim(spatial));
  return {{ctx.dtype(0), out}};
}

} // namespace

void registerResamplingInference(InferTable &table) {
  table.add(OpKind::Resize, resize);
  table.add(OpKind::GridSample, gridSample);
  table.add(OpKind::AffineGrid, affineGrid);
}

} // namespace sinter::infer
