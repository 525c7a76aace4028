#include "verify_compare.h"

#include "sinter/support/error.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <algorithm>
#include <limits>

namespace sinter::cli {
namespace {

double parseTolerance(const std::string &text, const std::string &entry, const char *flag) {
  double value = 0;
  const char *end = text.data() + text.size();
  auto result = std::from_chars(text.data(), end, value);
  if (text.empty() || result.ec != std::errc() || result.ptr != end || !std::isfinite(value) || value < 0)
    userError(flag, " ", entry, ": '", text, "' is not a non-negative number (write e.g. ", flag,
              " 1e-3 or ", flag, " OUTPUT=1e-3)");
  return value;
}

void parseInto(const std::vector<std::string> &entries, const char *flag, std::optional<double> &global,
               std::map<std::string, double> &byOutput) {
  for (const std::string &entry : entries) {
    size_t equals = entry.rfind('=');
    if (equals == std::string::npos) {
      global = parseTolerance(entry, entry, flag);
      continue;
    }
    if (equals == 0)
      userError(flag, " ", entry, ": the output name before '=' is empty");
    byOutput[entry.substr(0, equals)] = parseTolerance(entry.substr(equals + 1), entry, flag);
  }
}

bool isExactType(DType dtype) { return !isFloat(dtype) && !isLowPrecisionFloat(dtype); }

} // namespace

Tolerance defaultTolerance(DType storagePrecision, const Tensor &truth) {
  DType dtype = truth.dtype();
  if (isExactType(dtype))
    return {0, 0};
  double rtol = 1e-4, atolFloor = 1e-5, atolShare = 1e-5;
  if (storagePrecision == DType::Float16 || dtype == DType::Float16)
    rtol = 1e-2, atolFloor = 1e-3, atolShare = 2e-3;
  else if (storagePrecision == DType::BFloat16 || dtype == DType::BFloat16)
    rtol = 5e-2, atolFloor = 1e-2, atolShare = 2e-2;
  else if (isLowPrecisionFloat(dtype))
    rtol = 1.25e-1, atolFloor = 1e-2, atolShare = 1.25e-1; // float8: 3 or 2 mantissa bits
  double largest = 0;
  for (int64_t i = 0; i < truth.elementCount(); ++i) {
    double value = std::fabs(truth.getDouble(i));
    if (std::isfinite(value))
      largest = std::max(largest, value);
  }
  return {rtol, std::max(atolFloor, atolShare * largest)};
}

ToleranceSettings ToleranceSettings::parse(const std::vector<std::string> &rtol,
                                           const std::vector<std::string> &atol) {
  ToleranceSettings settings;
  parseInto(rtol, "--rtol", settings.globalRtol, settings.rtolByOutput);
  parseInto(atol, "--atol", settings.globalAtol, settings.atolByOutput);
  return settings;
}

Tolerance ToleranceSettings::global(Tolerance fallback) const {
  return {globalRtol.value_or(fallback.rtol), globalAtol.value_or(fallback.atol)};
}

Tolerance ToleranceSettings::forOutput(const std::string &name, Tolerance fallback) const {
  Tolerance tolerance = global(fallback);
  if (auto it = rtolByOutput.find(name); it != rtolByOutput.end())
    tolerance.rtol = it->second;
  if (auto it = atolByOutput.find(name); it != atolByOutput.end())
    tolerance.atol = it->second;
  return tolerance;
}

std::vector<std::string> ToleranceSettings::outputNames() const {
  std::vector<std::string> names;
  for (const auto &[name, value] : rtolByOutput)
    names.push_back(name);
  for (const auto &[name, value] : atolByOutput)
    if (!rtolByOutput.count(name))
      names.push_back(name);
  return names;
}

Comparison compareTensors(const std::string &name, const Tensor &actual, const Tensor &expected,
                          Tolerance tolerance) {
  Comparison result;
  result.output = name;
  result.type = expected.type().str();
  result.tolerance = tolerance;
  result.elements = expected.elementCount();
  if (actual.dtype() != expected.dtype() || actual.dims() != expected.dims()) {
    result.problem = "the artifact gives " + actual.type().str() + " but the truth is " + result.type;
    result.mismatched = result.elements;
    return result;
  }
  const bool exact = isExactType(expected.dtype());
  const double infinity = std::numeric_limits<double>::infinity();
  double sumSquaredDifference = 0, sumSquaredExpected = 0;
  double worstExcess = -infinity;
  for (int64_t i = 0; i < result.elements; ++i) {
    double a = 0, e = 0, difference = 0;
    bool same = false;
    if (exact) {
      int64_t ai = actual.getInt(i), ei = expected.getInt(i);
      same = ai == ei;
      a = double(ai), e = double(ei);
      difference = same ? 0 : std::fabs(a - e);
    } else {
      a = actual.getDouble(i), e = expected.getDouble(i);
      bool bothNan = std::isnan(a) && std::isnan(e);
      same = bothNan || a == e; // equal infinities too
      difference = same ? 0 : std::fabs(a - e);
      if (std::isnan(difference))
        difference = infinity; // one NaN, or infinities of opposite signs
    }
    double relative = difference == 0 ? 0 : (e == 0 ? infinity : difference / std::fabs(e));
    double allowed = tolerance.atol + tolerance.rtol * (std::isfinite(e) ? std::fabs(e) : 0);
    bool within = same || difference <= allowed;
    if (!within)
      ++result.mismatched;
    result.maxAbs = std::max(result.maxAbs, difference);
    result.maxRel = std::max(result.maxRel, relative);
    if (std::isfinite(e))
      sumSquaredExpected += e * e;
    sumSquaredDifference += difference * difference;
    double excess = difference - allowed;
    if (excess > worstExcess) {
      worstExcess = excess;
      result.worstIndex = i;
      result.worstActual = a;
      result.worstExpected = e;
    }
  }
  if (sumSquaredDifference == 0)
    result.relativeL2 = 0;
  else
    result.relativeL2 = sumSquaredExpected == 0 ? infinity : std::sqrt(sumSquaredDifference / sumSquaredExpected);
  if (result.worstIndex >= 0) {
    int64_t rest = result.worstIndex;
    result.worstCoordinates.assign(expected.dims().size(), 0);
    for (int axis = int(expected.dims().size()) - 1; axis >= 0; --axis) {
      int64_t size = expected.dims()[axis];
      result.worstCoordinates[axis] = size ? rest % size : 0;
      rest = size ? rest / size : 0;
    }
  }
  return result;
}

std::string formatNumber(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.3g", value);
  return buffer;
}

} // namespace sinter::cli
