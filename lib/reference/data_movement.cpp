// Reference rules for ops that move elements without computing on them: Identity, Reshape,
// Flatten, Squeeze, Unsqueeze, Transpose, DepthToSpace, SpaceToDepth, Concat, Split, Slice,
// Expand, Tile, Pad, Trilu, ReverseSequence and CenterCropPad.
//
// Every rule copies bytes, so it is exact for every dtype. Shapes come from the input tensors.
//   ReverseSequence  for each batch b (along batch_axis), the first sequence_lens[b] elements
//                    along time_axis in reverse order; the rest unchanged.
//   CenterCropPad    each listed axis cropped or zero-padded to `shape`, centred (an odd
//                    difference leaves the extra element at the end).
#include "tensor_index.h"
#include "registry.h"
#include "sinter/ir/op_attributes.h"
#include "tensor_helpers.h"

#include <algorithm>
#include <limits>

namespace sinter::reference {
namespace {

/// `x`'s elements, in order, with new dims of the same element count.
Tensor withDims(const Tensor &x, const std::vector<int64_t> &dims) {
  Tensor out(x.dtype(), dims);
  SINTER_ASSERT(out.elementCount() == x.elementCount(), "reshape changes the element count");
  copyElements(x, 0, out, 0, x.elementCount());
  return out;
}

/// The integer values of a required int32/int64 input.
std::vector<int64_t> intsInput(const Node &node, const Inputs &inputs, int index) {
  return *optionalIntsInput(node, &requiredInput(node, inputs, index), index);
}

/// Normalised axes; UserError for one out of range or repeated.
std::vector<int64_t> uniqueAxes(const Node &node, const std::vector<int64_t> &axes, int64_t rank) {
  std::vector<int64_t> normalized;
  for (int64_t axis : axes) {
    int64_t a = normalizeAxis(node, axis, rank);
    if (std::count(normalized.begin(), normalized.end(), a))
      userError(node.describe(), ": axis ", axis, " is repeated");
    normalized.push_back(a);
  }
  return normalized;
}

/// out[i0, .., in] = x[...] with out dim i being x dim perm[i].
Tensor transposeTensor(const Tensor &x, const std::vector<int64_t> &dims,
                       const std::vector<int64_t> &perm) {
  std::vector<int64_t> inStrides = stridesOf(dims), outDims(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    outDims[i] = dims[perm[i]];
  Tensor out(x.dtype(), outDims);
  std::vector<int64_t> at(outDims.size(), 0);
  for (int64_t o = 0; o < out.elementCount(); ++o, nextIndex(at, outDims)) {
    int64_t from = 0;
    for (size_t i = 0; i < perm.size(); ++i)
      from += at[i] * inStrides[perm[i]];
    copyElements(x, from, out, o);
  }
  return out;
}

// ---- Views: Identity-like reshapes ------------------------------------------------------------

// Reshape: 0 copies the input's dim at that position (unless allowzero = 1, where 0 is 0), and one
// -1 takes whatever extent keeps the element count.
Outputs evalReshape(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> shape = intsInput(node, inputs, 1);
  bool allowZero = node.attrInt("allowzero", 0) != 0;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0)
        userError(node.describe(), ": shape ", shapeStr(shapeOf(shape)), " has more than one -1");
      inferred = int(i);
      continue;
    }
    if (shape[i] == 0 && !allowZero) {
      if (i >= size_t(x.rank()))
        userError(node.describe(), ": shape ", shapeStr(shapeOf(shape)), " copies dim ", i,
                  " (0) but the input has rank ", x.rank());
      shape[i] = x.dims()[i];
    }
    if (shape[i] < 0)
      userError(node.describe(), ": shape ", shapeStr(shapeOf(shape)), " has a negative dim");
    known *= shape[i];
  }
  if (inferred >= 0) {
    if (known == 0 || x.elementCount() % known != 0)
      userError(node.describe(), ": cannot infer the -1 in shape ", shapeStr(shapeOf(shape)),
                " for ", x.elementCount(), " elements");
    shape[inferred] = x.elementCount() / known;
  } else if (known != x.elementCount()) {
    userError(node.describe(), ": cannot reshape ", shapeStr(x.type().shape), " to ",
              shapeStr(shapeOf(shape)));
  }
  return {withDims(x, shape)};
}

// Flatten: [d0 .. d(axis-1)] and [d(axis) ..] become the two dims; axis may equal the rank.
Outputs evalFlatten(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  int64_t axis = node.attrInt("axis", 1);
  if (axis < 0)
    axis += x.rank();
  if (axis < 0 || axis > x.rank())
    userError(node.describe(), ": axis ", node.attrInt("axis", 1), " is out of range for rank ",
              x.rank());
  std::vector<int64_t> outer(x.dims().begin(), x.dims().begin() + axis);
  std::vector<int64_t> inner(x.dims().begin() + axis, x.dims().end());
  return {withDims(x, {productOf(outer), productOf(inner)})};
}

Outputs evalSqueeze(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::optional<std::vector<int64_t>> axesInput =
      optionalIntsInput(node, optionalInput(inputs, 1), 1);
  std::vector<int64_t> axes;
  if (axesInput) {
    axes = uniqueAxes(node, *axesInput, x.rank());
    for (int64_t axis : axes)
      if (x.dims()[axis] != 1)
        userError(node.describe(), ": cannot squeeze axis ", axis, " of extent ", x.dims()[axis]);
  } else {
    for (int i = 0; i < x.rank(); ++i)
      if (x.dims()[i] == 1)
        axes.push_back(i);
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < x.rank(); ++i)
    if (!std::count(axes.begin(), axes.end(), i))
      dims.push_back(x.dims()[i]);
  return {withDims(x, dims)};
}

// Unsqueeze: axes index the output, whose rank is the input's plus the number of axes.
Outputs evalUnsqueeze(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> axesInput = intsInput(node, inputs, 1);
  int64_t rank = x.rank() + int64_t(axesInput.size());
  std::vector<int64_t> axes = uniqueAxes(node, axesInput, rank);
  std::vector<int64_t> dims;
  for (int64_t i = 0, next = 0; i < rank; ++i)
    dims.push_back(std::count(axes.begin(), axes.end(), i) ? 1 : x.dims()[next++]);
  return {withDims(x, dims)};
}

// ---- Permutations ---------------------------------------------------------------------------

Outputs evalTranspose(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> perm;
  for (int i = x.rank() - 1; i >= 0; --i)
    perm.push_back(i);
  perm = node.attrInts("perm", perm);
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != int64_t(i))
      sorted.clear();
  if (sorted.size() != size_t(x.rank()))
    userError(node.describe(), ": perm ", shapeStr(shapeOf(perm)), " is not a permutation of ",
              x.rank(), " axes");
  return {transposeTensor(x, x.dims(), perm)};
}

/// The checked [N, C, H, W] input of DepthToSpace / SpaceToDepth and its blocksize.
/// DepthToSpace's and SpaceToDepth's block size and order, for an [N, C, H, W] input.
BlockRearrangement rearrangementOf(const Node &node, const Tensor &x) {
  if (x.rank() != 4)
    userError(node.describe(), ": input must be [N, C, H, W], got ", shapeStr(x.type().shape));
  return blockRearrangement(node);
}

// DepthToSpace as the spec writes it: a reshape to 6-D, a transpose, a reshape back.
//   DCR: [N, b, b, C/b^2, H, W], perm [0, 3, 4, 1, 5, 2]
//   CRD: [N, C/b^2, b, b, H, W], perm [0, 1, 4, 2, 5, 3]
Outputs evalDepthToSpace(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const BlockRearrangement rearrangement = rearrangementOf(node, x);
  const int64_t b = rearrangement.blockSize;
  int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
  if (c % (b * b) != 0)
    userError(node.describe(), ": channels ", c, " are not a multiple of blocksize^2 = ", b * b);
  Tensor moved = rearrangement.channelsOutermost
                     ? transposeTensor(x, {n, c / (b * b), b, b, h, w}, {0, 1, 4, 2, 5, 3})
                     : transposeTensor(x, {n, b, b, c / (b * b), h, w}, {0, 3, 4, 1, 5, 2});
  return {withDims(moved, {n, c / (b * b), h * b, w * b})};
}

// SpaceToDepth: [N, C, H/b, b, W/b, b], transposed, to [N, C*b^2, H/b, W/b].
//   DCR: perm [0, 3, 5, 1, 2, 4]   CRD (opset 28): perm [0, 1, 3, 5, 2, 4]
Outputs evalSpaceToDepth(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  const BlockRearrangement rearrangement = rearrangementOf(node, x);
  const int64_t b = rearrangement.blockSize;
  int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
  if (h % b != 0 || w % b != 0)
    userError(node.describe(), ": spatial dims ", h, "x", w, " are not multiples of blocksize ", b);
  std::vector<int64_t> perm = rearrangement.channelsOutermost ? std::vector<int64_t>{0, 1, 3, 5, 2, 4}
                                                              : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
  Tensor moved = transposeTensor(x, {n, c, h / b, b, w / b, b}, perm);
  return {withDims(moved, {n, c * b * b, h / b, w / b})};
}

// ---- Joining and splitting ------------------------------------------------------------------

Outputs evalConcat(const Node &node, const Inputs &inputs) {
  std::vector<int> indices;
  for (size_t i = 0; i < inputs.size(); ++i)
    indices.push_back(int(i));
  requireSameDTypes(node, inputs, indices);
  const Tensor &first = requiredInput(node, inputs, 0);
  if (first.rank() == 0)
    userError(node.describe(), ": cannot concatenate scalars");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), first.rank());
  std::vector<int64_t> outDims = first.dims();
  outDims[axis] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor &input = requiredInput(node, inputs, int(i));
    bool matches = input.rank() == first.rank();
    for (int d = 0; matches && d < first.rank(); ++d)
      matches = d == axis || input.dims()[d] == first.dims()[d];
    if (!matches)
      userError(node.describe(), ": input ", i, " of shape ", shapeStr(input.type().shape),
                " does not match input 0 of shape ", shapeStr(first.type().shape), " outside axis ",
                axis);
    outDims[axis] += input.dims()[axis];
  }
  Tensor out(first.dtype(), outDims);
  AxisSplit split = splitAtAxis(outDims, axis);
  int64_t written = 0;
  for (int64_t o = 0; o < split.outer; ++o)
    for (const Tensor *input : inputs) {
      int64_t block = input->dims()[axis] * split.inner;
      copyElements(*input, o * block, out, written, block);
      written += block;
    }
  return {out};
}

// Split: extents from the 'split' input, or num_outputs chunks of ceil(extent / num_outputs) (the
// last smaller), or equal parts, one per node output.
Outputs evalSplit(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  if (x.rank() == 0)
    userError(node.describe(), ": cannot split a scalar");
  int64_t axis = normalizeAxis(node, node.attrInt("axis", 0), x.rank());
  int64_t extent = x.dims()[axis];
  int64_t parts = node.numOutputs();
  std::vector<int64_t> sizes;
  if (std::optional<std::vector<int64_t>> split =
          optionalIntsInput(node, optionalInput(inputs, 1), 1)) {
    sizes = *split;
    int64_t total = 0;
    for (int64_t size : sizes) {
      if (size < 0)
        userError(node.describe(), ": split has a negative extent ", size);
      total += size;
    }
    if (int64_t(sizes.size()) != parts || total != extent)
      userError(node.describe(), ": split ", shapeStr(shapeOf(sizes)), " does not cut extent ",
                extent, " into ", parts, " outputs");
  } else if (node.hasAttr("num_outputs")) {
    if (node.attrInt("num_outputs", 0) != parts)
      userError(node.describe(), ": num_outputs is ", node.attrInt("num_outputs", 0),
                " but the node has ", parts, " outputs");
    int64_t chunk = ceilDiv(extent, parts);
    for (int64_t i = 0, left = extent; i < parts; ++i, left -= sizes.back())
      sizes.push_back(std::min(chunk, left));
  } else {
    if (extent % parts != 0)
      userError(node.describe(), ": extent ", extent, " does not split evenly into ", parts,
                " outputs");
    sizes.assign(size_t(parts), extent / parts);
  }

  AxisSplit from = splitAtAxis(x.dims(), axis);
  Outputs outputs;
  for (int64_t i = 0, start = 0; i < parts; start += sizes[i], ++i) {
    std::vector<int64_t> dims = x.dims();
    dims[axis] = sizes[i];
    Tensor out(x.dtype(), dims);
    AxisSplit to = splitAtAxis(dims, axis);
    for (int64_t o = 0; o < from.outer; ++o)
      copyElements(x, from.at(o, start, 0), out, to.at(o, 0, 0), sizes[i] * from.inner);
    outputs.push_back(std::move(out));
  }
  return outputs;
}

// Slice: per axis, negative starts/ends count from the end; then for a positive step they clamp to
// [0, extent], for a negative step start clamps to [0, extent - 1] and end to [-1, extent - 1].
Outputs evalSlice(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> starts = intsInput(node, inputs, 1);
  std::vector<int64_t> ends = intsInput(node, inputs, 2);
  std::vector<int64_t> axes, steps(starts.size(), 1);
  for (size_t i = 0; i < starts.size(); ++i)
    axes.push_back(int64_t(i));
  if (auto given = optionalIntsInput(node, optionalInput(inputs, 3), 3))
    axes = *given;
  if (auto given = optionalIntsInput(node, optionalInput(inputs, 4), 4))
    steps = *given;
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    userError(node.describe(), ": starts, ends, axes and steps differ in length");
  axes = uniqueAxes(node, axes, x.rank());

  std::vector<int64_t> first(x.rank(), 0), step(x.rank(), 1), outDims = x.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i], extent = x.dims()[axis];
    if (steps[i] == 0)
      userError(node.describe(), ": step 0 on axis ", axis);
    int64_t start = starts[i] < 0 ? starts[i] + extent : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + extent : ends[i];
    int64_t count;
    if (extent == 0) {
      start = 0;
      count = 0;
    } else if (steps[i] > 0) {
      start = std::clamp<int64_t>(start, 0, extent);
      end = std::clamp<int64_t>(end, 0, extent);
      count = end > start ? ceilDiv(end - start, steps[i]) : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, extent - 1);
      end = std::clamp<int64_t>(end, -1, extent - 1);
      // -steps[i] overflows for INT64_MIN; such a step takes at most one element anyway.
      int64_t stride = steps[i] == std::numeric_limits<int64_t>::min()
                           ? std::numeric_limits<int64_t>::max()
                           : -steps[i];
      count = start > end ? ceilDiv(start - end, stride) : 0;
    }
    first[axis] = start;
    step[axis] = steps[i];
    outDims[axis] = count;
  }

  Tensor out(x.dtype(), outDims);
  std::vector<int64_t> inStrides = stridesOf(x.dims()), at(outDims.size(), 0);
  for (int64_t o = 0; o < out.elementCount(); ++o, nextIndex(at, outDims)) {
    int64_t from = 0;
    for (int i = 0; i < x.rank(); ++i)
      from += (first[i] + at[i] * step[i]) * inStrides[i];
    copyElements(x, from, out, o);
  }
  return {out};
}

// ---- Repetition -----------------------------------------------------------------------------

// Expand: numpy broadcast of the input against `shape` (either may hold the 1s).
Outputs evalExpand(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> shape = intsInput(node, inputs, 1);
  for (int64_t dim : shape)
    if (dim < 0)
      userError(node.describe(), ": shape ", shapeStr(shapeOf(shape)), " has a negative dim");
  std::vector<int64_t> outDims = broadcastDims(node, {x.dims(), shape});
  Tensor out(x.dtype(), outDims);
  BroadcastIndexer index(x.dims(), outDims);
  for (int64_t o = 0; o < out.elementCount(); ++o)
    copyElements(x, index(o), out, o);
  return {out};
}

Outputs evalTile(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> repeats = intsInput(node, inputs, 1);
  if (int64_t(repeats.size()) != x.rank())
    userError(node.describe(), ": repeats has ", repeats.size(), " values for rank ", x.rank());
  std::vector<int64_t> outDims = x.dims();
  for (int i = 0; i < x.rank(); ++i) {
    if (repeats[i] < 0)
      userError(node.describe(), ": repeat ", repeats[i], " is negative");
    outDims[i] *= repeats[i];
  }
  Tensor out(x.dtype(), outDims);
  std::vector<int64_t> inStrides = stridesOf(x.dims()), at(outDims.size(), 0);
  for (int64_t o = 0; o < out.elementCount(); ++o, nextIndex(at, outDims)) {
    int64_t from = 0;
    for (int i = 0; i < x.rank(); ++i)
      from += (at[i] % x.dims()[i]) * inStrides[i];
    copyElements(x, from, out, o);
  }
  return {out};
}

// ---- Pad ------------------------------------------------------------------------------------

enum class PadMode { Constant, Reflect, Edge, Wrap };

/// Where output position `o` of one padded axis reads from: an input index, or -1 for the constant.
/// Negative pads crop first; positive pads then extend what is left, so reflect, edge and wrap see
/// the cropped extent [cropBegin, cropBegin + kept).
int64_t padSource(int64_t o, int64_t padBefore, int64_t cropBegin, int64_t kept, PadMode mode) {
  int64_t r = o - padBefore;
  if (r < 0 || r >= kept) {
    switch (mode) {
    case PadMode::Constant:
      return -1;
    case PadMode::Edge:
      r = std::clamp<int64_t>(r, 0, kept - 1);
      break;
    case PadMode::Wrap:
      r = ((r % kept) + kept) % kept;
      break;
    case PadMode::Reflect: {
      // Mirror without repeating the edge: the pattern has period 2 * (kept - 1).
      int64_t period = 2 * (kept - 1);
      if (period == 0) {
        r = 0;
        break;
      }
      r = ((r % period) + period) % period;
      if (r >= kept)
        r = period - r;
      break;
    }
    }
  }
  return cropBegin + r;
}

// Pad: pads = [begin of each axis..., end of each axis...] over `axes` (all axes by default).
Outputs evalPad(const Node &node, const Inputs &inputs) {
  const Tensor &x = requiredInput(node, inputs, 0);
  std::vector<int64_t> pads = intsInput(node, inputs, 1);
  const Tensor *constant = optionalInput(inputs, 2);
  std::vector<int64_t> axes;
  for (int i = 0; i < x.rank(); ++i)
    axes.push_back(i);
  if (auto given = optionalIntsInput(node, optionalInput(inputs, 3), 3))
    axes = uniqueAxes(node, *given, x.rank());
  if (pads.size() != 2 * axes.size())
    userError(node.describe(), ": pads has ", pads.size(), " values for ", axes.size(), " axes");

  std::string modeName = node.attrString("mode", "constant");
  PadMode mode;
  if (modeName == "constant")
    mode = PadMode::Constant;
  else if (modeName == "reflect")
    mode = PadMode::Reflect;
  else if (modeName == "edge")
    mode = PadMode::Edge;
  else if (modeName == "wrap")
    mode = PadMode::Wrap;
  else
    userError(node.describe(), ": unknown mode '", modeName, "'");

  Tensor fill(x.dtype(), {}); // zero unless constant_value says otherwise
  if (constant && constant->elementCount() > 0) {
    if (constant->dtype() != x.dtype() || constant->elementCount() != 1)
      userError(node.describe(), ": constant_value must be one ", dtypeName(x.dtype()),
                " element, got ", constant->type().str());
    copyElements(*constant, 0, fill, 0);
  }

  size_t rank = x.dims().size();
  std::vector<int64_t> padBefore(rank, 0), cropBegin(rank, 0), kept = x.dims(), outDims = x.dims();
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = axes[i], begin = pads[i], end = pads[axes.size() + i];
    int64_t extent = x.dims()[axis];
    outDims[axis] = extent + begin + end;
    if (outDims[axis] < 0)
      userError(node.describe(), ": pads ", begin, " and ", end, " remove more than axis ", axis,
                " has (", extent, ")");
    padBefore[axis] = std::max<int64_t>(begin, 0);
    cropBegin[axis] = std::max<int64_t>(-begin, 0);
    kept[axis] = extent - cropBegin[axis] - std::max<int64_t>(-end, 0);
    if (kept[axis] <= 0 && mode != PadMode::Constant && outDims[axis] > 0)
      userError(node.describe(), ": cannot ", modeName, "-pad axis ", axis,
                ", which has no elements left to copy");
  }

  Tensor out(x.dtype(), outDims);
  std::vector<int64_t> inStrides = stridesOf(x.dims()), at(rank, 0);
  for (int64_t o = 0; o < out.elementCount(); ++o, nextIndex(at, outDims)) {
    int64_t from = 0;
    for (size_t i = 0; i < rank && from >= 0; ++i) {
      int64_t source = padSource(at[i], padBefore[i], cropBegin[i], kept[i], mode);
      from = source < 0 ? -1 : from + source * inStrides[i];
    }
    if (from >= 0)
      copyElements(x, from, out, o);
    else
      copyElements(fill, 0, out, o);
  }
  return {out};
}

/// Trilu: keeps the upper (column - row >= k) or lower (column - row <= k) triangle of each
/// matrix in the last two dims and zeroes the rest; copies element bytes, so any dtype works.
Tensor triluOf(const Node &node, const Inputs &inputs) {
  const Tensor &x = *inputs[0];
  if (x.rank() < 2)
    userError(node.describe(), ": the input must have rank 2 or more, not ", x.rank());
  int64_t k = scalarIntInput(node, inputs.size() > 1 ? inputs[1] : nullptr, 1, 0);
  bool upper = node.attrInt("upper", 1) != 0;
  int64_t rows = x.dims()[x.rank() - 2];
  int64_t columns = x.dims()[x.rank() - 1];
  Tensor out(x.dtype(), x.dims()); // zero-filled
  size_t size = dtypeSize(x.dtype());
  for (int64_t i = 0; i < x.elementCount(); ++i) {
    int64_t column = i % columns;
    int64_t row = (i / columns) % rows;
    bool keep = upper ? column - row >= k : column - row <= k;
    if (keep)
      std::memcpy(out.data() + i * size, x.data() + i * size, size);
  }
  return out;
}

Outputs evalIdentity(const Node &node, const Inputs &inputs) {
  return {copyOf(requiredInput(node, inputs, 0))};
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
    int64_t axis = normalizeAxis(node, axes[k], rank);
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

} // namespace

void registerDataMovementRules(RuleTable &table) {
  table.add(OpKind::Reshape, evalReshape);
  table.add(OpKind::Flatten, evalFlatten);
  table.add(OpKind::Squeeze, evalSqueeze);
  table.add(OpKind::Unsqueeze, evalUnsqueeze);
  table.add(OpKind::Transpose, evalTranspose);
  table.add(OpKind::DepthToSpace, evalDepthToSpace);
  table.add(OpKind::SpaceToDepth, evalSpaceToDepth);
  table.add(OpKind::Concat, evalConcat);
  table.add(OpKind::Split, evalSplit);
  table.add(OpKind::Slice, evalSlice);
  table.add(OpKind::Expand, evalExpand);
  table.add(OpKind::Tile, evalTile);
  table.add(OpKind::Pad, evalPad);
  table.add(OpKind::Trilu, [](const Node &node, const Inputs &inputs) -> Outputs {
    return {triluOf(node, inputs)};
  });
  table.add(OpKind::Identity, evalIdentity);
  table.add(OpKind::ReverseSequence, evalReverseSequence);
  table.add(OpKind::CenterCropPad, evalCenterCropPad);
}

} // namespace sinter::reference
