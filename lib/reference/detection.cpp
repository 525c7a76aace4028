// Reference rules for object detection: NonMaxSuppression (described at its rule);
// RoiAlign is in detection_roi_align.cpp.
#include "registry.h"
#include "tensor_helpers.h"

#include "sinter/support/error.h"

#include <algorithm>

namespace sinter::reference {
namespace {

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

void registerDetectionRules(RuleTable &table) {
  table.add(OpKind::NonMaxSuppression, evalNonMaxSuppression);
}

} // namespace sinter::reference
