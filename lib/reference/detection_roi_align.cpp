// Reference rule for RoiAlign: each region of interest (x1, y1, x2, y2, scaled by spatial_scale
// and shifted by half a pixel with half_pixel) is cut into output_height x output_width bins;
// each bin samples a grid (sampling_ratio per side, or ceil(bin size) when 0) bilinearly and
// averages the samples (avg) or takes the largest weighted corner (max), as onnxruntime does.
// Samples more than one pixel outside the image count as zero; others clamp to the border.
#include "registry.h"
#include "tensor_helpers.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace sinter::reference {
namespace {

struct Corner {
  int64_t position;
  double weight;
};

Outputs evalRoiAlign(const Node &node, const Inputs &inputs) {
  const Tensor &xTensor = requiredInput(node, inputs, 0), &rois = requiredInput(node, inputs, 1);
  const Tensor &batchIndices = requiredInput(node, inputs, 2);
  int64_t batch = xTensor.dims()[0], channels = xTensor.dims()[1], height = xTensor.dims()[2], width = xTensor.dims()[3];
  int64_t count = rois.dims()[0];
  if (rois.dims()[1] != 4 || batchIndices.elementCount() != count)
    userError(node.describe(), ": rois must be [R, 4] with R batch indices");
  int64_t outH = node.attrInt("output_height", 1), outW = node.attrInt("output_width", 1);
  int64_t ratio = node.attrInt("sampling_ratio", 0);
  double scale = node.attrFloat("spatial_scale", 1.0f);
  bool halfPixel = node.attrString("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  bool maxMode = node.attrString("mode", "avg") == "max";
  std::vector<double> x = toDoubles(xTensor), r = toDoubles(rois);
  std::vector<double> out(size_t(count * channels * outH * outW));
  for (int64_t n = 0; n < count; ++n) {
    int64_t image = batchIndices.getInt(n);
    if (image < 0 || image >= batch)
      userError(node.describe(), ": batch index ", image, " of roi ", n, " is outside [0, ", batch, ")");
    double offset = halfPixel ? 0.5 : 0.0;
    double startW = r[size_t(n * 4)] * scale - offset, startH = r[size_t(n * 4 + 1)] * scale - offset;
    double roiW = r[size_t(n * 4 + 2)] * scale - offset - startW, roiH = r[size_t(n * 4 + 3)] * scale - offset - startH;
    if (!halfPixel) {
      roiW = std::max(roiW, 1.0);
      roiH = std::max(roiH, 1.0);
    }
    double binH = roiH / double(outH), binW = roiW / double(outW);
    int64_t gridH = ratio > 0 ? ratio : int64_t(std::ceil(roiH / double(outH)));
    int64_t gridW = ratio > 0 ? ratio : int64_t(std::ceil(roiW / double(outW)));
    gridH = std::clamp<int64_t>(gridH, 0, 1 << 16);
    gridW = std::clamp<int64_t>(gridW, 0, 1 << 16);
    double samples = double(std::max<int64_t>(gridH * gridW, 1));
    for (int64_t ph = 0; ph < outH; ++ph)
      for (int64_t pw = 0; pw < outW; ++pw) {
        // The bin's samples as four weighted corners each, shared by every channel.
        std::vector<std::array<Corner, 4>> corners;
        for (int64_t iy = 0; iy < gridH; ++iy)
          for (int64_t ix = 0; ix < gridW; ++ix) {
            double y = startH + double(ph) * binH + (double(iy) + 0.5) * binH / double(gridH);
            double xx = startW + double(pw) * binW + (double(ix) + 0.5) * binW / double(gridW);
            if (!(y >= -1.0 && y <= double(height) && xx >= -1.0 && xx <= double(width))) {
              corners.push_back({Corner{0, 0}, Corner{0, 0}, Corner{0, 0}, Corner{0, 0}});
              continue;
            }
            y = std::max(y, 0.0);
            xx = std::max(xx, 0.0);
            int64_t yLow = int64_t(y), xLow = int64_t(xx), yHigh, xHigh;
            if (yLow >= height - 1) {
              yHigh = yLow = height - 1;
              y = double(yLow);
            } else {
              yHigh = yLow + 1;
            }
            if (xLow >= width - 1) {
              xHigh = xLow = width - 1;
              xx = double(xLow);
            } else {
              xHigh = xLow + 1;
            }
            double ly = y - double(yLow), lx = xx - double(xLow), hy = 1 - ly, hx = 1 - lx;
            corners.push_back({Corner{yLow * width + xLow, hy * hx}, Corner{yLow * width + xHigh, hy * lx},
                               Corner{yHigh * width + xLow, ly * hx}, Corner{yHigh * width + xHigh, ly * lx}});
          }
        for (int64_t c = 0; c < channels; ++c) {
          const double *plane = x.data() + (image * channels + c) * height * width;
          double value = 0;
          bool first = true;
          for (const auto &sample : corners) {
            if (maxMode) {
              double best = sample[0].weight * plane[sample[0].position];
              for (int k = 1; k < 4; ++k)
                best = std::max(best, sample[k].weight * plane[sample[k].position]);
              value = first ? best : std::max(value, best);
              first = false;
            } else {
              for (const Corner &corner : sample)
                value += corner.weight * plane[corner.position];
            }
          }
          if (!maxMode)
            value /= samples;
          out[size_t(((n * channels + c) * outH + ph) * outW + pw)] = value;
        }
      }
  }
  return {fromDoubles(xTensor.dtype(), {count, channels, outH, outW}, out)};
}

} // namespace

void registerRoiAlignRules(RuleTable &table) { table.add(OpKind::RoiAlign, evalRoiAlign); }

} // namespace sinter::reference
