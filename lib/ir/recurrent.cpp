#include "sinter/ir/recurrent.h"

#include "sinter/support/error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

namespace sinter {

namespace {

struct ActivationInfo {
  const char *name;
  RecurrentActivationKind kind;
  int parameters; ///< how many of alpha, beta it takes
  float alpha, beta;
};

// ONNX's defaults are those of the ops of the same names.
constexpr ActivationInfo kActivations[] = {
    {"relu", RecurrentActivationKind::Relu, 0, 0, 0},
    {"tanh", RecurrentActivationKind::Tanh, 0, 0, 0},
    {"sigmoid", RecurrentActivationKind::Sigmoid, 0, 0, 0},
    {"affine", RecurrentActivationKind::Affine, 2, 1.0f, 0.0f},
    {"leakyrelu", RecurrentActivationKind::LeakyRelu, 1, 0.01f, 0},
    {"thresholdedrelu", RecurrentActivationKind::ThresholdedRelu, 1, 1.0f, 0},
    {"scaledtanh", RecurrentActivationKind::ScaledTanh, 2, 1.0f, 1.0f},
    {"hardsigmoid", RecurrentActivationKind::HardSigmoid, 2, 0.2f, 0.5f},
    {"elu", RecurrentActivationKind::Elu, 1, 1.0f, 0},
    {"softsign", RecurrentActivationKind::Softsign, 0, 0, 0},
    {"softplus", RecurrentActivationKind::Softplus, 0, 0, 0},
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

} // namespace

RecurrentSpec recurrentSpec(const Node &node) {
  RecurrentSpec spec;
  std::vector<std::string> defaults;
  switch (node.kind()) {
  case OpKind::RNN: spec.gates = 1; defaults = {"Tanh"}; break;
  case OpKind::GRU: spec.gates = 3; defaults = {"Sigmoid", "Tanh"}; break;
  case OpKind::LSTM: spec.gates = 4; defaults = {"Sigmoid", "Tanh", "Tanh"}; break;
  default: SINTER_ASSERT(false, node.describe(), " is not a recurrent op");
  }
  std::string direction = node.attrString("direction", "forward");
  if (direction == "bidirectional")
    spec.directions = 2;
  else if (direction == "reverse")
    spec.reverse = true;
  else if (direction != "forward")
    userError(node.describe(), ": direction '", direction,
              "' is not one of forward, reverse, bidirectional");
  int64_t layout = node.attrInt("layout", 0);
  if (layout != 0 && layout != 1)
    userError(node.describe(), ": layout ", layout, " is not 0 or 1");
  spec.batchMajor = layout == 1;
  if (node.hasAttr("clip")) {
    spec.hasClip = true;
    spec.clip = node.attrFloat("clip", 0);
    if (!(spec.clip > 0))
      userError(node.describe(), ": clip ", spec.clip, " must be positive");
  }
  spec.linearBeforeReset = node.attrInt("linear_before_reset", 0) != 0;
  spec.inputForget = node.attrInt("input_forget", 0) != 0;

  size_t perDirection = defaults.size();
  std::vector<std::string> names = node.attrStrings("activations");
  if (names.empty()) {
    for (int d = 0; d < spec.directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  } else if (names.size() == perDirection && spec.directions == 2) {
    // One direction's list for a bidirectional node: both directions use it.
    std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  } else if (names.size() != perDirection * size_t(spec.directions)) {
    userError(node.describe(), ": has ", names.size(), " activations; ", node.opName(), " with ",
              spec.directions, " direction(s) takes ", perDirection * size_t(spec.directions));
  }
  // alpha and beta are consumed in order by the activations that take them.
  std::vector<float> alphas = node.attrFloats("activation_alpha");
  std::vector<float> betas = node.attrFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  spec.activations.assign(size_t(spec.directions), {});
  for (size_t i = 0; i < names.size(); ++i) {
    std::string name = lower(names[i]);
    const ActivationInfo *info = nullptr;
    for (const ActivationInfo &candidate : kActivations)
      if (name == candidate.name)
        info = &candidate;
    if (!info)
      userError(node.describe(), ": activation '", names[i], "' is not one of Relu, Tanh, Sigmoid, "
                "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus");
    RecurrentActivation activation{info->kind, info->alpha, info->beta};
    if (info->parameters >= 1 && nextAlpha < alphas.size())
      activation.alpha = alphas[nextAlpha++];
    if (info->parameters >= 2 && nextBeta < betas.size())
      activation.beta = betas[nextBeta++];
    spec.activations[i / perDirection].push_back(activation);
  }
  return spec;
}

double applyRecurrentActivation(const RecurrentActivation &activation, double x) {
  double alpha = activation.alpha, beta = activation.beta;
  switch (activation.kind) {
  case RecurrentActivationKind::Relu: return std::max(x, 0.0);
  case RecurrentActivationKind::Tanh: return std::tanh(x);
  case RecurrentActivationKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
  case RecurrentActivationKind::Affine: return alpha * x + beta;
  case RecurrentActivationKind::LeakyRelu: return x >= 0 ? x : alpha * x;
  case RecurrentActivationKind::ThresholdedRelu: return x > alpha ? x : 0.0;
  case RecurrentActivationKind::ScaledTanh: return alpha * std::tanh(beta * x);
  case RecurrentActivationKind::HardSigmoid: return std::clamp(alpha * x + beta, 0.0, 1.0);
  case RecurrentActivationKind::Elu: return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
  case RecurrentActivationKind::Softsign: return x / (1.0 + std::abs(x));
  case RecurrentActivationKind::Softplus: return std::log1p(std::exp(x));
  }
  return x;
}

} // namespace sinter
