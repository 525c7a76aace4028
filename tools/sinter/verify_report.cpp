#include "verify_report.h"

#include "sinter/io/json.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <sstream>

#include <unistd.h>

namespace sinter::cli {
namespace {

std::string coordinates(const Comparison &comparison) {
  if (comparison.worstIndex < 0)
    return "-";
  std::string text = "[";
  for (size_t i = 0; i < comparison.worstCoordinates.size(); ++i)
    text += (i ? "," : "") + std::to_string(comparison.worstCoordinates[i]);
  return text + "]";
}

/// "1.2e-07 (rtol 1e-04, atol 1e-05)" pieces for messages.
std::string describeError(const Comparison &comparison) {
  if (!comparison.problem.empty())
    return comparison.problem;
  std::ostringstream text;
  text << comparison.mismatched << " of " << comparison.elements << " elements out of tolerance (rtol "
       << formatNumber(comparison.tolerance.rtol) << ", atol " << formatNumber(comparison.tolerance.atol)
       << "); max abs " << formatNumber(comparison.maxAbs) << ", max rel " << formatNumber(comparison.maxRel)
       << ", relative L2 " << formatNumber(comparison.relativeL2) << "; worst at " << coordinates(comparison)
       << ": " << formatNumber(comparison.worstActual) << " (artifact) vs " << formatNumber(comparison.worstExpected)
       << " (truth)";
  return text.str();
}

std::string padded(const std::string &text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size() + 1, ' ');
}

std::string xmlEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&apos;"; break;
    default:
      // XML 1.0 allows no control characters but tab and newlines.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
        out += "?";
      else
        out += c;
    }
  }
  return out;
}

void jsonComparison(io::JsonWriter &json, const Comparison &comparison) {
  json.beginObject();
  json.key("output").value(comparison.output);
  json.key("type").value(comparison.type);
  json.key("passed").value(comparison.passed());
  json.key("elements").value(comparison.elements);
  json.key("mismatched").value(comparison.mismatched);
  json.key("max_abs").value(comparison.maxAbs);
  json.key("max_rel").value(comparison.maxRel);
  json.key("relative_l2").value(comparison.relativeL2);
  json.key("worst_index").beginArray();
  for (int64_t coordinate : comparison.worstCoordinates)
    json.value(coordinate);
  json.endArray();
  json.key("worst_actual").value(comparison.worstActual);
  json.key("worst_expected").value(comparison.worstExpected);
  json.key("rtol").value(comparison.tolerance.rtol);
  json.key("atol").value(comparison.tolerance.atol);
  if (comparison.problem.empty())
    json.key("problem").null();
  else
    json.key("problem").value(comparison.problem);
  json.endObject();
}

} // namespace

bool VerifyReport::passed() const { return divergingCount() == 0; }

int VerifyReport::outputCount() const {
  int count = 0;
  for (const CaseResult &result : cases)
    count += int(result.comparisons.size());
  return count;
}

int VerifyReport::divergingCount() const {
  int count = 0;
  for (const CaseResult &result : cases)
    for (const Comparison &comparison : result.comparisons)
      count += !comparison.passed();
  return count;
}

std::string formatTable(const VerifyReport &report) {
  std::ostringstream out;
  out << "model: " << report.model << "\n";
  out << "artifact: " << report.artifact << " (" << report.target
      << (report.cpuLevel.empty() ? "" : " " + report.cpuLevel) << ", storage " << report.storagePrecision << ")\n";
  out << "truth: " << report.truth << "\n";
  out << "inputs: " << report.inputs << "\n\n";
  std::vector<std::vector<std::string>> rows = {
      {"case", "output", "type", "max abs", "max rel", "rel L2", "mismatched", "worst index", "rtol", "atol", "result"}};
  for (const CaseResult &result : report.cases)
    for (const Comparison &comparison : result.comparisons)
      rows.push_back({result.name, comparison.output, comparison.type, formatNumber(comparison.maxAbs),
                      formatNumber(comparison.maxRel), formatNumber(comparison.relativeL2),
                      std::to_string(comparison.mismatched) + "/" + std::to_string(comparison.elements),
                      coordinates(comparison), formatNumber(comparison.tolerance.rtol),
                      formatNumber(comparison.tolerance.atol),
                      comparison.passed() ? "ok" : (comparison.problem.empty() ? "DIVERGES" : "MISMATCH")});
  std::vector<size_t> widths(rows[0].size(), 0);
  for (const auto &row : rows)
    for (size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  for (const auto &row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i)
      line += i + 1 == row.size() ? row[i] : padded(row[i], widths[i]);
    out << line << "\n";
  }
  for (const CaseResult &result : report.cases)
    for (const Comparison &comparison : result.comparisons)
      if (!comparison.problem.empty())
        out << "  " << result.name << "/" << comparison.output << ": " << comparison.problem << "\n";
  out << "\n";
  if (report.bisect)
    out << "bisect: " << report.bisect->summary << "\n" << (report.bisect->suggestions.empty() ? "" : "try:\n");
  if (report.bisect)
    for (const std::string &suggestion : report.bisect->suggestions)
      out << "  " << suggestion << "\n";
  int outputs = report.outputCount(), diverging = report.divergingCount();
  if (diverging == 0)
    out << "verify: ok: " << outputs << " output" << (outputs == 1 ? "" : "s") << " within tolerance in "
        << report.cases.size() << " input set" << (report.cases.size() == 1 ? "" : "s") << "\n";
  else
    out << "verify: FAILED: " << diverging << " of " << outputs << " output" << (outputs == 1 ? "" : "s")
        << " diverge" << (diverging == 1 ? "s" : "") << "\n";
  if (!report.goldenWritten.empty())
    out << "golden: wrote " << report.goldenWritten << "\n";
  return out.str();
}

std::string formatJson(const VerifyReport &report) {
  io::JsonWriter json;
  json.beginObject();
  json.key("model").value(report.model);
  json.key("artifact").value(report.artifact);
  json.key("target").value(report.target);
  json.key("cpu_level").value(report.cpuLevel);
  json.key("storage_precision").value(report.storagePrecision);
  json.key("truth").value(report.truth);
  json.key("inputs").value(report.inputs);
  json.key("passed").value(report.passed());
  json.key("outputs_compared").value(report.outputCount());
  json.key("outputs_diverging").value(report.divergingCount());
  json.key("cases").beginArray();
  for (const CaseResult &result : report.cases) {
    json.beginObject();
    json.key("name").value(result.name);
    json.key("outputs").beginArray();
    for (const Comparison &comparison : result.comparisons)
      jsonComparison(json, comparison);
    json.endArray();
    json.endObject();
  }
  json.endArray();
  if (!report.bisect) {
    json.key("bisect").null();
  } else {
    const BisectResult &bisect = *report.bisect;
    json.key("bisect").beginObject();
    json.key("found").value(bisect.found);
    json.key("case").value(bisect.caseName);
    json.key("node").value(bisect.node);
    json.key("op_type").value(bisect.opType);
    json.key("opset").value(bisect.opset);
    json.key("value").value(bisect.value);
    json.key("kernel").value(bisect.kernel);
    json.key("kernel_ops").beginArray();
    for (const std::string &op : bisect.kernelOps)
      json.value(op);
    json.endArray();
    json.key("position").value(bisect.position);
    json.key("node_count").value(bisect.nodeCount);
    json.key("compiles").value(bisect.compiles);
    json.key("error");
    if (bisect.found)
      jsonComparison(json, bisect.error);
    else
      json.null();
    json.key("summary").value(bisect.summary);
    json.key("suggestions").beginArray();
    for (const std::string &suggestion : bisect.suggestions)
      json.value(suggestion);
    json.endArray();
    json.endObject();
  }
  if (report.goldenWritten.empty())
    json.key("golden_written").null();
  else
    json.key("golden_written").value(report.goldenWritten);
  json.key("seconds").value(report.seconds);
  json.endObject();
  return json.str() + "\n";
}

std::string formatJunit(const VerifyReport &report) {
  char hostname[256] = "localhost";
  if (::gethostname(hostname, sizeof hostname - 1) != 0 || hostname[0] == '\0')
    std::snprintf(hostname, sizeof hostname, "localhost");
  char timestamp[32];
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(timestamp, sizeof timestamp, "%Y-%m-%dT%H:%M:%S", &utc);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", report.seconds);
  std::string stem = report.model;
  if (size_t slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0)
    stem = stem.substr(0, dot);

  std::ostringstream out;
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"sinter verify\" tests=\"" << report.outputCount() << "\" failures=\""
      << report.divergingCount() << "\" errors=\"0\" time=\"" << seconds << "\">\n";
  int id = 0;
  for (const CaseResult &result : report.cases) {
    int failures = 0;
    for (const Comparison &comparison : result.comparisons)
      failures += !comparison.passed();
    out << "  <testsuite name=\"" << xmlEscape(stem + "/" + result.name) << "\" package=\"sinter.verify\" id=\""
        << id++ << "\" timestamp=\"" << timestamp << "\" hostname=\"" << xmlEscape(hostname) << "\" tests=\""
        << result.comparisons.size() << "\" failures=\"" << failures << "\" errors=\"0\" skipped=\"0\" time=\""
        << seconds << "\">\n";
    out << "    <properties>\n";
    auto property = [&](const char *name, const std::string &value) {
      out << "      <property name=\"" << name << "\" value=\"" << xmlEscape(value) << "\"/>\n";
    };
    property("model", report.model);
    property("artifact", report.artifact);
    property("target", report.target + (report.cpuLevel.empty() ? "" : " " + report.cpuLevel));
    property("storage_precision", report.storagePrecision);
    property("truth", report.truth);
    property("inputs", report.inputs);
    out << "    </properties>\n";
    for (const Comparison &comparison : result.comparisons) {
      out << "    <testcase name=\"" << xmlEscape(comparison.output) << "\" classname=\""
          << xmlEscape("sinter.verify." + stem + "." + result.name) << "\" time=\"0\"";
      if (comparison.passed()) {
        out << "/>\n";
        continue;
      }
      std::string message = comparison.output + " diverges: " + describeError(comparison);
      std::string details = message;
      if (report.bisect && report.bisect->caseName == result.name)
        details += "\nbisect: " + report.bisect->summary;
      out << ">\n      <failure message=\"" << xmlEscape(message) << "\" type=\""
          << (comparison.problem.empty() ? "divergence" : "mismatch") << "\">" << xmlEscape(details)
          << "</failure>\n    </testcase>\n";
    }
    out << "    <system-out></system-out>\n    <system-err></system-err>\n  </testsuite>\n";
  }
  out << "</testsuites>\n";
  return out.str();
}

} // namespace sinter::cli
