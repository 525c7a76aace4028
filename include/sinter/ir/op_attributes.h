// Typed decoders of the attributes that several libraries read (shape inference, the reference,
// passes, lowering): each attribute's ONNX default is written once, here, not at every call site.
#pragma once

namespace sinter {

class Node;

/// `epsilon` of BatchNormalization, InstanceNormalization, LayerNormalization,
/// GroupNormalization and RMSNormalization: added to the variance (ONNX default 1e-5).
float normalizationEpsilon(const Node &node);

/// `reduction` of ScatterElements and ScatterND: how an update combines with the element it
/// lands on (ONNX default "none": it replaces it). UserError naming the node for another name.
enum class ScatterReduction { None, Add, Mul, Max, Min };
ScatterReduction scatterReduction(const Node &node);

} // namespace sinter
