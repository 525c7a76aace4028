// Reference rules for ops that select or rearrange elements by data: Compress, ReverseSequence,
// CenterCropPad and NonMaxSuppression (described at its rule). Elements are copied byte for byte, so every dtype is exact.
//
//   Compress         the slices along `axis` (or the elements of the flattened input, without
//                    `axis`) whose entry in the bool `condition` is true; a condition shorter
//                    than the axis leaves the rest out.
//   ReverseSequence  for each batch b (along batch_axis), the first sequence_lens[b] elements
//                    along time_axis in reverse order; the rest unchanged.
//   CenterCropPad    each listed axis cropped or zero-padded to `shape`, centred (an odd
//                    difference leaves the extra element at the end).
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/support/error.h"

#include <algorithm>

namespace sinter::reference {
namespace {

int64_t axisIn(const Node &node, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    userError(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

Outputs evalCompress(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &condition = requiredInput(node, inputs, 1);
  if (condition.rank() != 1)
    userError(node.describe(), ": condition must be 1-D");
  auto keep = [&](int64_t i) { return i < condition.elementCount() && condition.getInt(i) != 0; };
  if (!node.hasAttr("axis")) {
    std::vector<int64_t> kept;
    for (int64_t i = 0; i < x.elementCount(); ++i)
      if (keep(i))
        kept.push_back(i);
    Tensor out(x.dtype(), {int64_t(kept.size())});
    for (size_t i = 0; i < kept.size(); ++i)
      copyElements(x, kept[i], out, int64_t(i));
    return {out};
  }
  int64_t axis = axisIn(node, node.attrInt("axis", 0), x.rank());
  int64_t outer = 1, inner = 1, length = x.dims()[axis];
  for (int64_t d = 0; d < axis; ++d)
    outer *= x.dims()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d)
    inner *= x.dims()[d];
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < length; ++i)
    if (keep(i))
      kept.push_back(i);
  std::vector<int64_t> dims = x.dims();
  dims[axis] = int64_t(kept.size());
  Tensor out(x.dtype(), dims);
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < kept.size(); ++k)
      copyElements(x, (o * length + kept[k]) * inner, out, (o * int64_t(kept.size()) + int64_t(k)) * inner, inner);
  return {out};
}

/// Row-major strides of dims.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int i = int(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return strides;
}

Outputs evalReverseSequence(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const Tensor &lengths = requiredInput(node, inputs, 1);
  if (x.rank() < 2)
    userError(node.describe(), ": the input must have rank 2 or more");
  int64_t batchAxis = node.attrInt("batch_axis", 1), timeAxis = node.attrInt("time_axis", 0);
  if ((batchAxis != 0 && batchAxis != 1) || (timeAxis != 0 && timeAxis != 1) || batchAxis == timeAxis)
    userError(node.describe(), ": batch_axis and time_axis must be 0 and 1 in some order");
  int64_t batch = x.dims()[batchAxis], time = x.dims()[timeAxis];
  if (lengths.elementCount() != batch)
    userError(node.describe(), ": sequence_lens has ", lengths.elementCount(), " entries for a batch of ", batch);
  std::vector<int64_t> strides = stridesOf(x.dims());
  int64_t inner = strides[1];
  Tensor out = x;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t length = lengths.getInt(b);
    if (length < 0 || length > time)
      userError(node.describe(), ": sequence length ", length, " is outside [0, ", time, "]");
    for (int64_t t = 0; t < length; ++t) {
      int64_t from = b * strides[batchAxis] + t * strides[timeAxis];
      int64_t to = b * strides[batchAxis] + (length - 1 - t) * strides[timeAxis];
      copyElements(x, from, out, to, inner);
    }
  }
  return {out};
}

Outputs evalCenterCropPad(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> shape = requiredInput(node, inputs, 1).toInts();
  int rank = x.rank();
  std::vector<int64_t> axes = node.attrInts("axes");
  if (axes.empty())
    for (int d = 0; d < rank; ++d)
      axes.push_back(d);
  if (shape.size() != axes.size())
    userError(node.describe(), ": shape has ", shape.size(), " entries for ", axes.size(), " axes");
  std::vector<int64_t> outDims = x.dims(), sourceStart(size_t(rank), 0), targetStart(size_t(rank), 0);
  std::vector<int64_t> copyCount = x.dims();
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = axisIn(node, axes[k], rank);
    int64_t have = x.dims()[axis], want = shape[k];
    if (want < 0)
      userError(node.describe(), ": shape has a negative entry");
    outDims[axis] = want;
    copyCount[axis] = std::min(have, want);
    if (want < have)
      sourceStart[axis] = (have - want) / 2;
    else
      targetStart[axis] = (want - have) / 2;
  }
  Tensor out(x.dtype(), outDims);
  std::memset(out.data(), 0, out.byteSize());
  std::vector<int64_t> inStrides = stridesOf(x.dims()), outStrides = stridesOf(outDims);
  int64_t total = 1;
  for (int64_t c : copyCount)
    total *= c;
  for (int64_t i = 0; i < total; ++i) {
    int64_t rest = i, from = 0, to = 0;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t position = rest % copyCount[d];
      rest /= copyCount[d];
      from += (position + sourceStart[d]) * inStrides[d];
      to += (position + targetStart[d]) * outStrides[d];
    }
    copyElements(x, from, out, to);
  }
  return {out};
}

// NonMaxSuppression (opset 11): per batch and class, boxes whose score exceeds score_threshold
// (every box without one) are taken greedily by descending score (ties: lower index first),
// skipping a box whose IoU with an already selected one exceeds iou_threshold, up to
// max_output_boxes_per_class (0 when absent). Boxes are [y1, x1, y2, x2] corners in any order,
// or [x_center, y_center, width, height] with center_point_box. Output: [selected, 3] int64
// rows (batch, class, box).
struct Extent {
  double xMin, xMax, yMin, yMax;
};

Extent boxExtent(const std::vector<double> &boxes, int64_t index, bool centered) {
  const double *b = &boxes[size_t(index * 4)];
  if (centered)
    return {b[0] - b[2] / 2, b[0] + b[2] / 2, b[1] - b[3] / 2, b[1] + b[3] / 2};
  return {std::min(b[1], b[3]), std::max(b[1], b[3]), std::min(b[0], b[2]), std::max(b[0], b[2])};
}

bool suppresses(const Extent &a, const Extent &b, double threshold) {
  double xMin = std::max(a.xMin, b.xMin), xMax = std::min(a.xMax, b.xMax);
  double yMin = std::max(a.yMin, b.yMin), yMax = std::min(a.yMax, b.yMax);
  if (xMax <= xMin || yMax <= yMin)
    return false;
  double intersection = (xMax - xMin) * (yMax - yMin);
  double areaA = (a.xMax - a.xMin) * (a.yMax - a.yMin), areaB = (b.xMax - b.xMin) * (b.yMax - b.yMin);
  double unionArea = areaA + areaB - intersection;
  if (intersection <= 0 || areaA <= 0 || areaB <= 0 || unionArea <= 0)
    return false;
  return intersection / unionArea > threshold;
}

Outputs evalNonMaxSuppression(const Node &node, const Inputs &inputs) {
  const Tensor &boxesTensor = requiredInput(node, inputs, 0);
  const Tensor &scoresTensor = requiredInput(node, inputs, 1);
  const Tensor *maxInput = optionalInput(inputs, 2);
  const Tensor *iouInput = optionalInput(inputs, 3);
  const Tensor *scoreInput = optionalInput(inputs, 4);
  if (boxesTensor.rank() != 3 || boxesTensor.dims()[2] != 4 || scoresTensor.rank() != 3 ||
      scoresTensor.dims()[0] != boxesTensor.dims()[0] || scoresTensor.dims()[2] != boxesTensor.dims()[1])
    userError(node.describe(), ": boxes must be [batch, boxes, 4] and scores [batch, classes, boxes]");
  int64_t batches = boxesTensor.dims()[0], count = boxesTensor.dims()[1], classes = scoresTensor.dims()[1];
  int64_t maxPerClass = maxInput && maxInput->elementCount() > 0 ? std::max<int64_t>(maxInput->getInt(0), 0) : 0;
  double iouThreshold = iouInput && iouInput->elementCount() > 0 ? loadAsDouble(*iouInput, 0) : 0.0;
  bool hasScoreThreshold = scoreInput && scoreInput->elementCount() > 0;
  double scoreThreshold = hasScoreThreshold ? loadAsDouble(*scoreInput, 0) : 0.0;
  bool centered = node.attrInt("center_point_box", 0) != 0;
  std::vector<double> boxes = toDoubles(boxesTensor), scores = toDoubles(scoresTensor);
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<double> batchBoxes(boxes.begin() + b * count * 4, boxes.begin() + (b + 1) * count * 4);
    for (int64_t c = 0; c < classes; ++c) {
      const double *classScores = &scores[size_t((b * classes + c) * count)];
      std::vector<int64_t> candidates;
      for (int64_t i = 0; i < count; ++i)
        if (!hasScoreThreshold || classScores[i] > scoreThreshold)
          candidates.push_back(i);
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t x, int64_t y) { return classScores[x] > classScores[y]; });
      std::vector<Extent> kept;
      for (int64_t i : candidates) {
        if (int64_t(kept.size()) >= maxPerClass)
          break;
        Extent extent = boxExtent(batchBoxes, i, centered);
        bool keep = std::none_of(kept.begin(), kept.end(),
                                 [&](const Extent &other) { return suppresses(extent, other, iouThreshold); });
        if (!keep)
          continue;
        kept.push_back(extent);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  Tensor out(DType::Int64, {int64_t(selected.size() / 3), 3});
  for (size_t i = 0; i < selected.size(); ++i)
    out.setInt(int64_t(i), selected[i]);
  return {out};
}

} // namespace

void registerSelectionRules(RuleTable &table) {
  table.add(OpKind::NonMaxSuppression, evalNonMaxSuppression);
  table.add(OpKind::Compress, evalCompress);
  table.add(OpKind::ReverseSequence, evalReverseSequence);
  table.add(OpKind::CenterCropPad, evalCenterCropPad);
}

} // namespace sinter::reference
