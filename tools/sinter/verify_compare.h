// `sinter verify`: comparing an output with its truth, and the tolerances that decide it.
//
// An element passes when |actual - expected| <= atol + rtol * |expected| (numpy.isclose's rule),
// NaN matches NaN and an infinity matches the same infinity. Integer and bool outputs compare
// exactly by default (rtol = atol = 0). The metrics reported for every output: the largest
// absolute and relative difference (relative to |expected|; infinite where expected is 0 and
// actual is not), the relative L2 error ||a - e|| / ||e||, the number of elements out of
// tolerance, and the worst element (the one furthest out of tolerance, or the largest difference
// when all pass).
#pragma once

#include "sinter/ir/dtype.h"
#include "sinter/ir/tensor.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sinter::cli {

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};

/// Default tolerances by where the artifact stores float32 values (its storage precision) and the
/// truth's dtype and size: rtol 1e-4 with fp32 storage, 1e-2 with fp16, 5e-2 with bf16; atol the
/// larger of a floor (1e-5, 1e-3, 1e-2) and a share of the truth's largest magnitude (1e-5, 2e-3,
/// 2e-2 of max|truth|), so elements near zero in an output of large values are held to the
/// output's scale, as rounding errors of sums are. Integer and bool outputs compare exactly.
Tolerance defaultTolerance(DType storagePrecision, const Tensor &truth);

/// --rtol/--atol as given: "1e-3" (every output) or "NAME=1e-3" (one output; the split is at the
/// last '=', so names may hold '='). Later entries for the same scope win.
class ToleranceSettings {
public:
  /// Parses the flags; a malformed value is a UserError naming the flag.
  static ToleranceSettings parse(const std::vector<std::string> &rtol, const std::vector<std::string> &atol);
  /// The tolerance for one output: its own setting, else the global one, else `fallback`.
  Tolerance forOutput(const std::string &name, Tolerance fallback) const;
  /// The global tolerance over `fallback` (for intermediate values, which have no own setting).
  Tolerance global(Tolerance fallback) const;
  /// Names given per output, to check them against the model's outputs.
  std::vector<std::string> outputNames() const;

  std::optional<double> globalRtol, globalAtol;
  std::map<std::string, double> rtolByOutput, atolByOutput;
};

struct Comparison {
  std::string output;   ///< the output's name
  std::string type;     ///< the truth's type, "f32[1,10]"
  Tolerance tolerance;
  int64_t elements = 0;
  double maxAbs = 0, maxRel = 0, relativeL2 = 0;
  int64_t mismatched = 0;
  int64_t worstIndex = -1;              ///< flat index of the worst element, -1 when empty
  std::vector<int64_t> worstCoordinates; ///< its multi-index
  double worstActual = 0, worstExpected = 0;
  /// Set when the two cannot be compared element by element (dtype or shape differ).
  std::string problem;
  bool passed() const { return problem.empty() && mismatched == 0; }
};

/// Compares `actual` with `expected`.
Comparison compareTensors(const std::string &name, const Tensor &actual, const Tensor &expected,
                          Tolerance tolerance);

/// "%.3g" of a number, "inf" and "nan" spelled out.
std::string formatNumber(double value);

} // namespace sinter::cli
