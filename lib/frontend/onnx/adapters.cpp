// Opset adapters: each rewrites an older ONNX form of an op into the IR's form, which follows
// ai.onnx opset 28. Most ops map one to one (emitAs); the adapters below cover what changed
// between opsets 7 and 28:
//
//   attributes that became inputs   Squeeze/Unsqueeze axes (<13), ReduceSum axes (<13), other
//                                   Reduce* axes (<18), Split split (<13), Slice starts/ends/axes
//                                   (<10), Pad pads/value (<11), Clip min/max (<11), Dropout
//                                   ratio (<12), TopK k (<10), Upsample scales (7), DFT axis (<20)
//   changed semantics               Softmax/LogSoftmax/Hardmax (<13) coerce to 2-D at `axis`;
//                                   RoiAlign (<16) maps coordinates without the half pixel;
//                                   GroupNormalization (<21) scales per group, not per channel;
//                                   Resize (10) and Upsample use asymmetric coordinates;
//                                   Split (<18) without `split` splits into equal parts
//   renamed or deprecated ops       Upsample -> Resize, Scatter -> ScatterElements
//   ops imported as others          ConvInteger, QLinearConv -> f64 Conv (integer_convolution.cpp)
//   attributes that never change    Gemm broadcast, BatchNormalization spatial=1 / is_test,
//   an inference result             Dropout is_test, consumed_inputs (any op), Range stash_type
//
// What opsets 24 to 28 changed and how the IR has it: new element types (float8e8m0, int2 and
// uint2 are IR types, with Cast's round_mode for float8e8m0; float6 is refused where a value has
// it); Attention's nonpad_kv_seqlen input and window
// attributes (Attention is not an IR op); SpaceToDepth's `mode` (an IR attribute); Range's
// float16 / bfloat16 with `stash_type` (the reference computes in double); Mod with fmod=0 on
// floats and BitShift on signed integers (both IR semantics); bfloat16 for TopK, Einsum, OneHot,
// Compress, ReverseSequence and Unique, and wider float types for Celu.
//
// An attribute moved to an input is moved whatever the opset says, so a model that mixes forms
// still imports; giving both the attribute and the input is an error.
#include "integer_convolution.h"
#include "onnx_internal.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <limits>

namespace sinter::onnx::detail {

namespace {

using AdapterFn = std::vector<Value *> (*)(Builder &, OnnxNode &);
using Attributes = std::map<std::string, Attribute>;

// A name for a value an adapter makes, derived from the node's first output ("y.axes").
std::string helperName(const OnnxNode &n, const std::string &suffix) {
  for (const std::string &name : n.outputNames)
    if (!name.empty())
      return name + "." + suffix;
  return n.proto.name().empty() ? suffix : n.proto.name() + "." + suffix;
}

// A name for a node an adapter adds beside the node it rewrites.
std::string helperNode(const OnnxNode &n, const std::string &suffix) {
  return n.proto.name().empty() ? "" : n.proto.name() + "." + suffix;
}

Value *requiredInput(const OnnxNode &n, int index) {
  Value *value = index < int(n.inputs.size()) ? n.inputs[index] : nullptr;
  if (!value)
    userError(n.where, ": input ", index, " is required but missing");
  return value;
}

void setInput(OnnxNode &n, int index, Value *value) {
  if (int(n.inputs.size()) <= index)
    n.inputs.resize(index + 1, nullptr);
  n.inputs[index] = value;
}

bool hasInput(const OnnxNode &n, int index) {
  return index < int(n.inputs.size()) && n.inputs[index] != nullptr;
}

// Moves an ints attribute (older opsets) to the input that replaced it (newer opsets).
void intsToInput(Builder &b, OnnxNode &n, const std::string &attribute, int index) {
  std::optional<std::vector<int64_t>> values = n.attributes.takeInts(attribute);
  if (!values)
    return;
  if (hasInput(n, index))
    userError(n.where, ": '", attribute, "' is given both as an attribute and as input ", index);
  setInput(n, index, b.constantInts(helperName(n, attribute), *values));
}

// Moves a float attribute to a scalar input of the data input's element type.
void floatToInput(Builder &b, OnnxNode &n, const std::string &attribute, int index, DType dtype) {
  std::optional<float> value = n.attributes.takeFloat(attribute);
  if (!value)
    return;
  if (hasInput(n, index))
    userError(n.where, ": '", attribute, "' is given both as an attribute and as input ", index);
  setInput(n, index, b.constantScalar(helperName(n, attribute), dtype, *value));
}

// Emits the node as IR op `kind`: the unread attributes are converted by the op's schema, and
// arity and required attributes are checked against ops.def.
std::vector<Value *> emitAs(Builder &b, OnnxNode &n, OpKind kind, const Attributes &extra = {}) {
  const OpInfo &info = opInfo(kind);
  Attributes attributes = n.attributes.convertRemaining(kind);
  for (const auto &[name, value] : extra)
    attributes[name] = value;
  for (const AttrSchema &schema : info.attributes)
    if (schema.required && !attributes.count(schema.name))
      userError(n.where, ": attribute '", schema.name, "' is required");

  std::vector<Value *> inputs = n.inputs;
  while (!inputs.empty() && !inputs.back())
    inputs.pop_back();
  int numInputs = int(inputs.size());
  if (numInputs < info.minInputs || (info.maxInputs >= 0 && numInputs > info.maxInputs)) {
    std::string range =
        info.maxInputs < 0 ? "at least " + std::to_string(info.minInputs)
        : info.minInputs == info.maxInputs
            ? std::to_string(info.minInputs)
            : std::to_string(info.minInputs) + " to " + std::to_string(info.maxInputs);
    userError(n.where, ": has ", numInputs, " inputs, but ", info.name, " takes ", range);
  }
  for (int i = 0; i < info.minInputs; ++i)
    if (!inputs[i])
      userError(n.where, ": input ", i, " is required but missing");

  std::vector<std::string> outputs = n.outputNames;
  while (!outputs.empty() && outputs.back().empty())
    outputs.pop_back();
  if (info.maxOutputs >= 0 && int(outputs.size()) > info.maxOutputs)
    userError(n.where, ": has ", outputs.size(), " outputs, but ", info.name, " gives at most ",
              info.maxOutputs);
  while (int(outputs.size()) < std::max(info.minOutputs, 1))
    outputs.push_back("");
  return b.emit(kind, inputs, attributes, outputs, n.proto.name());
}

OpKind kindOf(const OnnxNode &n) {
  std::optional<OpKind> kind = opFromName(n.proto.op_type());
  SINTER_ASSERT(kind, "no IR op for ", n.proto.op_type());
  return *kind;
}

std::vector<Value *> axesAttributeToInput(Builder &b, OnnxNode &n) {
  intsToInput(b, n, "axes", 1);
  return emitAs(b, n, kindOf(n));
}

std::vector<Value *> adaptSplit(Builder &b, OnnxNode &n) {
  intsToInput(b, n, "split", 1);
  Attributes extra;
  // Without `split`, opsets before 18 split into as many equal parts as there are outputs.
  if (!hasInput(n, 1) && !n.attributes.has("num_outputs"))
    extra["num_outputs"] = int64_t(n.outputNames.size());
  return emitAs(b, n, OpKind::Split, extra);
}

std::vector<Value *> adaptSlice(Builder &b, OnnxNode &n) {
  // Slice-1 keeps starts, ends and axes as attributes; there is no steps before opset 10.
  intsToInput(b, n, "starts", 1);
  intsToInput(b, n, "ends", 2);
  intsToInput(b, n, "axes", 3);
  return emitAs(b, n, OpKind::Slice);
}

std::vector<Value *> adaptPad(Builder &b, OnnxNode &n) {
  Value *data = requiredInput(n, 0);
  intsToInput(b, n, "pads", 1);
  floatToInput(b, n, "value", 2, data->dtype());
  return emitAs(b, n, OpKind::Pad);
}

std::vector<Value *> adaptClip(Builder &b, OnnxNode &n) {
  Value *data = requiredInput(n, 0);
  floatToInput(b, n, "min", 1, data->dtype());
  floatToInput(b, n, "max", 2, data->dtype());
  return emitAs(b, n, OpKind::Clip);
}

std::vector<Value *> adaptDropout(Builder &b, OnnxNode &n) {
  n.attributes.drop("is_test");
  floatToInput(b, n, "ratio", 1, DType::Float32);
  return emitAs(b, n, OpKind::Dropout);
}

std::vector<Value *> adaptTopK(Builder &b, OnnxNode &n) {
  if (std::optional<int64_t> k = n.attributes.takeInt("k")) {
    if (hasInput(n, 1))
      userError(n.where, ": 'k' is given both as an attribute and as input 1");
    setInput(n, 1, b.constantInts(helperName(n, "k"), {*k}));
  }
  return emitAs(b, n, OpKind::TopK);
}

std::vector<Value *> adaptGemm(Builder &b, OnnxNode &n) {
  // Gemm before opset 7 flagged C's broadcasting; the IR always broadcasts C, which includes the
  // same-shape case.
  n.attributes.drop("broadcast");
  return emitAs(b, n, OpKind::Gemm);
}

std::vector<Value *> adaptBatchNormalization(Builder &b, OnnxNode &n) {
  if (std::optional<int64_t> spatial = n.attributes.takeInt("spatial"); spatial && *spatial != 1)
    userError(n.where, ": spatial=", *spatial, " (per-activation statistics) is not supported");
  n.attributes.drop("is_test");
  if (n.opset < 14) {
    // Before opset 14 the extra outputs (running and saved statistics) exist only in training.
    for (size_t i = 1; i < n.outputNames.size(); ++i)
      if (!n.outputNames[i].empty() && b.isConsumed(n.outputNames[i]))
        userError(n.where, ": training-mode outputs (output ", i, " '", n.outputNames[i],
                  "' is used) are not supported before opset 14");
    n.outputNames.resize(1);
  }
  return emitAs(b, n, OpKind::BatchNormalization);
}

// Softmax, LogSoftmax and Hardmax before opset 13 treat the input as 2-D: dims before `axis`
// are rows, the rest one long row. When `axis` is the last dim that is the same as opset 13;
// otherwise flatten, normalise rows, and reshape back.
std::vector<Value *> adaptSoftmaxFamily(Builder &b, OnnxNode &n) {
  OpKind kind = kindOf(n);
  if (n.opset >= 13)
    return emitAs(b, n, kind);
  Value *data = requiredInput(n, 0);
  int64_t axis = n.attributes.takeInt("axis").value_or(1);
  int64_t rank = data->rank();
  if (axis < -rank || axis > rank)
    userError(n.where, ": axis ", axis, " is out of range for rank ", rank);
  if (axis < 0)
    axis += rank;
  if (axis == rank - 1)
    return emitAs(b, n, kind, {{"axis", axis}});
  Attributes rest = n.attributes.convertRemaining(kind);
  Value *flat = b.emitOne(OpKind::Flatten, {data}, {{"axis", axis}}, helperName(n, "flat"),
                          helperNode(n, "flatten"));
  rest["axis"] = int64_t(1);
  Value *rows = b.emitOne(kind, {flat}, rest, helperName(n, "rows"), helperNode(n, "rows"));
  Value *shape =
      b.emitOne(OpKind::Shape, {data}, {}, helperName(n, "shape"), helperNode(n, "shape"));
  if (n.outputNames.size() != 1)
    userError(n.where, ": has ", n.outputNames.size(), " outputs, but ", n.proto.op_type(),
              " gives 1");
  return b.emit(OpKind::Reshape, {rows, shape}, {}, n.outputNames, n.proto.name());
}

// Resize and Upsample before opset 11 map output to input coordinates as x_out / scale
// ("asymmetric") and pick the nearest pixel by truncation, or, as onnxruntime does, by rounding
// up when every scale shrinks.
Attributes legacyResizeAttributes(const std::string &mode, Value *scales) {
  Attributes attributes{{"mode", mode},
                        {"coordinate_transformation_mode", std::string("asymmetric")}};
  if (mode == "nearest") {
    bool shrinks = false;
    if (scales && scales->isConstant()) {
      const Tensor &values = scales->constant();
      bool anyBelow = false, allAtMostOne = values.elementCount() > 0;
      for (int64_t i = 0; i < values.elementCount(); ++i) {
        anyBelow |= values.getDouble(i) < 1.0;
        allAtMostOne &= values.getDouble(i) <= 1.0;
      }
      shrinks = anyBelow && allAtMostOne;
    }
    attributes["nearest_mode"] = std::string(shrinks ? "ceil" : "floor");
  }
  return attributes;
}

std::string legacyResizeMode(OnnxNode &n) {
  std::string mode = n.attributes.takeString("mode").value_or("nearest");
  if (mode == "bilinear" || mode == "trilinear")
    mode = "linear";
  if (mode != "nearest" && mode != "linear")
    userError(n.where, ": mode '", mode, "' is not one of nearest, linear");
  return mode;
}

std::vector<Value *> adaptUpsample(Builder &b, OnnxNode &n) {
  Value *data = requiredInput(n, 0);
  std::string mode = legacyResizeMode(n);
  Value *scales = hasInput(n, 1) ? n.inputs[1] : nullptr;
  if (std::optional<std::vector<float>> values = n.attributes.takeFloats("scales")) {
    if (scales)
      userError(n.where, ": 'scales' is given both as an attribute and as input 1");
    Tensor tensor(DType::Float32, {int64_t(values->size())});
    std::copy(values->begin(), values->end(), tensor.data<float>());
    scales = b.constant(helperName(n, "scales"), std::move(tensor));
  }
  if (!scales)
    userError(n.where, ": has no scales");
  n.inputs = {data, nullptr, scales};
  return emitAs(b, n, OpKind::Resize, legacyResizeAttributes(mode, scales));
}

std::vector<Value *> adaptResize(Builder &b, OnnxNode &n) {
  if (n.opset < 11) {
    Value *data = requiredInput(n, 0);
    Value *scales = requiredInput(n, 1);
    std::string mode = legacyResizeMode(n);
    n.inputs = {data, nullptr, scales};
    return emitAs(b, n, OpKind::Resize, legacyResizeAttributes(mode, scales));
  }
  // Opsets 11 and 12 require roi and scales even when unused; they pass empty tensors, which
  // the IR spells as absent inputs.
  for (int index : {1, 2})
    if (hasInput(n, index) && n.inputs[index]->isConstant() &&
        n.inputs[index]->constant().elementCount() == 0)
      n.inputs[index] = nullptr;
  return emitAs(b, n, OpKind::Resize);
}

std::vector<Value *> adaptScatter(Builder &b, OnnxNode &n) {
  // Scatter (opsets 9 and 10) is ScatterElements under its old name.
  return emitAs(b, n, OpKind::ScatterElements);
}

// Cast's and CastLike's round_mode (opset 24) applies only to casts into float8e8m0; it stays on
// the IR node (up, the default, when absent). Its value is checked here.
Attributes castRoundMode(OnnxNode &n) {
  std::optional<std::string> mode = n.attributes.takeString("round_mode");
  if (!mode)
    return {};
  if (*mode != "up" && *mode != "down" && *mode != "nearest")
    userError(n.where, ": round_mode '", *mode, "' is not one of up, down, nearest");
  return {{"round_mode", *mode}};
}

std::vector<Value *> adaptCast(Builder &b, OnnxNode &n) {
  std::optional<int64_t> to = n.attributes.takeInt("to");
  if (!to)
    userError(n.where, ": attribute 'to' is required");
  if (!dtypeFromOnnx(int(*to)))
    userError(n.where, ": casting to ", onnxTypeName(int(*to)), " is not supported");
  Attributes extra = castRoundMode(n);
  extra["to"] = *to;
  return emitAs(b, n, OpKind::Cast, extra);
}

std::vector<Value *> adaptCastLike(Builder &b, OnnxNode &n) {
  return emitAs(b, n, OpKind::CastLike, castRoundMode(n));
}

// Range (opset 27) takes float16 and bfloat16 with `stash_type`, the type the elements are
// computed in: float (1, the default) or double (11). The IR computes every float Range in
// double and rounds each element once, so both give the same elements to the output's precision.
std::vector<Value *> adaptRange(Builder &b, OnnxNode &n) {
  if (std::optional<int64_t> stash = n.attributes.takeInt("stash_type"); stash && *stash != 1 && *stash != 11)
    userError(n.where, ": stash_type ", *stash, " is not float (1) or double (11)");
  return emitAs(b, n, OpKind::Range);
}

// GroupNormalization before opset 21 has one scale and bias per group; opset 21 has one per
// channel. Repeat each group's value over its C / num_groups channels:
//   scale[G] -> Unsqueeze [G,1] -> Expand [G, C/G] -> Reshape [C]
std::vector<Value *> adaptGroupNormalization(Builder &b, OnnxNode &n) {
  if (n.opset >= 21)
    return emitAs(b, n, OpKind::GroupNormalization);
  Value *data = requiredInput(n, 0);
  std::optional<int64_t> groups = n.attributes.takeInt("num_groups");
  if (!groups)
    userError(n.where, ": attribute 'num_groups' is required");
  if (*groups <= 0)
    userError(n.where, ": num_groups is ", *groups, ", expected a positive count");
  Value *groupCount = b.constantInts(helperName(n, "groups"), {*groups});
  Value *channels = b.emitOne(OpKind::Shape, {data}, {{"start", int64_t(1)}, {"end", int64_t(2)}},
                              helperName(n, "channels"), helperNode(n, "channels"));
  Value *perGroup = b.emitOne(OpKind::Div, {channels, groupCount}, {}, helperName(n, "per_group"),
                              helperNode(n, "per_group"));
  Value *grid = b.emitOne(OpKind::Concat, {groupCount, perGroup}, {{"axis", int64_t(0)}},
                          helperName(n, "grid"), helperNode(n, "grid"));
  Value *one = b.constantInts(helperName(n, "axis1"), {1});
  Value *flatShape = b.constantInts(helperName(n, "flat_shape"), {-1});
  for (int index : {1, 2}) {
    std::string part = index == 1 ? "scale" : "bias";
    Value *perGroupValues = requiredInput(n, index);
    Value *column = b.emitOne(OpKind::Unsqueeze, {perGroupValues, one}, {},
                              helperName(n, part + "_column"), helperNode(n, part + "_column"));
    Value *repeated =
        b.emitOne(OpKind::Expand, {column, grid}, {}, helperName(n, part + "_repeated"),
                  helperNode(n, part + "_repeated"));
    n.inputs[index] =
        b.emitOne(OpKind::Reshape, {repeated, flatShape}, {}, helperName(n, part + "_per_channel"),
                  helperNode(n, part + "_per_channel"));
  }
  return emitAs(b, n, OpKind::GroupNormalization, {{"num_groups", *groups}});
}

// DFT before opset 20 takes its axis as an attribute (default 1); opset 20 takes it as input 2
// (default -2), which is the IR's form.
std::vector<Value *> adaptDFT(Builder &b, OnnxNode &n) {
  if (n.opset < 20 || n.attributes.has("axis")) {
    int64_t axis = n.attributes.takeInt("axis").value_or(1);
    if (hasInput(n, 2))
      userError(n.where, ": 'axis' is given both as an attribute and as input 2");
    setInput(n, 2, b.constantInts(helperName(n, "axis"), {axis}));
  }
  return emitAs(b, n, OpKind::DFT);
}

// RoiAlign before opset 16 has no coordinate_transformation_mode; it behaves as
// "output_half_pixel" (opset 16's default is "half_pixel").
std::vector<Value *> adaptRoiAlign(Builder &b, OnnxNode &n) {
  Attributes extra;
  if (n.opset < 16 && !n.attributes.has("coordinate_transformation_mode"))
    extra["coordinate_transformation_mode"] = std::string("output_half_pixel");
  return emitAs(b, n, OpKind::RoiAlign, extra);
}

const std::map<std::string_view, AdapterFn> &adapters() {
  static const std::map<std::string_view, AdapterFn> kAdapters = {
      {"BatchNormalization", adaptBatchNormalization},
      {"Cast", adaptCast},
      {"CastLike", adaptCastLike},
      {"Clip", adaptClip},
      {"ConvInteger", importConvInteger},
      {"DFT", adaptDFT},
      {"Dropout", adaptDropout},
      {"Gemm", adaptGemm},
      {"GroupNormalization", adaptGroupNormalization},
      {"Hardmax", adaptSoftmaxFamily},
      {"LogSoftmax", adaptSoftmaxFamily},
      {"Pad", adaptPad},
      {"QLinearConv", importQLinearConv},
      {"Range", adaptRange},
      {"ReduceL1", axesAttributeToInput},
      {"ReduceL2", axesAttributeToInput},
      {"ReduceLogSum", axesAttributeToInput},
      {"ReduceLogSumExp", axesAttributeToInput},
      {"ReduceMax", axesAttributeToInput},
      {"ReduceMean", axesAttributeToInput},
      {"ReduceMin", axesAttributeToInput},
      {"ReduceProd", axesAttributeToInput},
      {"ReduceSum", axesAttributeToInput},
      {"ReduceSumSquare", axesAttributeToInput},
      {"Resize", adaptResize},
      {"RoiAlign", adaptRoiAlign},
      {"Scatter", adaptScatter},
      {"Slice", adaptSlice},
      {"Softmax", adaptSoftmaxFamily},
      {"Split", adaptSplit},
      {"Squeeze", axesAttributeToInput},
      {"TopK", adaptTopK},
      {"Unsqueeze", axesAttributeToInput},
      {"Upsample", adaptUpsample},
  };
  return kAdapters;
}

} // namespace

bool isSupportedOp(std::string_view opType) {
  return opType == "Constant" || opFromName(opType) || adapters().count(opType);
}

std::vector<Value *> importNode(Builder &builder, OnnxNode &node) {
  auto it = adapters().find(node.proto.op_type());
  if (it != adapters().end())
    return it->second(builder, node);
  return emitAs(builder, node, kindOf(node));
}

} // namespace sinter::onnx::detail
