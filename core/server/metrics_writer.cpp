// The Prometheus text exposition format, version 0.0.4.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "shoal/server/metrics.h"

namespace shoal {
namespace {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof(buf), "%lld", static_cast<long long>(v));
  } else {
    // The shortest text that reads back as the same double.
    for (int precision = 6; precision <= 17; ++precision) {
      std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
  }
  return buf;
}

// HELP text escapes backslash and newline; label values also escape '"'.
void AppendEscaped(std::string_view s, bool quote, std::string* out) {
  for (char c : s) {
    if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (quote && c == '"') {
      out->append("\\\"");
    } else {
      out->push_back(c);
    }
  }
}

// name{a="x",b="y"} value\n, with `extra` as one more label (for "le").
void AppendSample(std::string_view name, const MetricLabels& labels, const char* extra_name,
                  const std::string& extra_value, const std::string& value, std::string* out) {
  out->append(name);
  if (!labels.empty() || extra_name != nullptr) {
    out->push_back('{');
    bool first = true;
    for (const auto& [k, v] : labels) {
      if (!IsValidLabelName(k))
        throw std::invalid_argument("invalid metric label name '" + k + "'");
      if (!first) out->push_back(',');
      first = false;
      out->append(k).append("=\"");
      AppendEscaped(v, true, out);
      out->push_back('"');
    }
    if (extra_name != nullptr) {
      if (!first) out->push_back(',');
      out->append(extra_name).append("=\"").append(extra_value).push_back('"');
    }
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(value);
  out->push_back('\n');
}

}  // namespace

bool IsValidLabelName(std::string_view name) {
  return IsValidMetricName(name) && name.find(':') == std::string_view::npos;
}

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

MetricsWriter::Family* MetricsWriter::FamilyFor(std::string_view name, std::string_view help,
                                                const char* type) {
  if (!IsValidMetricName(name)) {
    throw std::invalid_argument("invalid metric name '" + std::string(name) + "'");
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{std::string(help), type, {}}).first;
  }
  if (std::string_view(it->second.type) != type) return nullptr;
  return &it->second;
}

void MetricsWriter::AddCounter(std::string_view name, std::string_view help, double value,
                               const MetricLabels& labels) {
  if (Family* f = FamilyFor(name, help, "counter")) {
    AppendSample(name, labels, nullptr, "", FormatValue(value), &f->samples);
  }
}

void MetricsWriter::AddGauge(std::string_view name, std::string_view help, double value,
                             const MetricLabels& labels) {
  if (Family* f = FamilyFor(name, help, "gauge")) {
    AppendSample(name, labels, nullptr, "", FormatValue(value), &f->samples);
  }
}

void MetricsWriter::AddHistogram(std::string_view name, std::string_view help, const Histogram& h,
                                 const MetricLabels& labels) {
  Family* f = FamilyFor(name, help, "histogram");
  if (f == nullptr) return;
  if (labels.count("le") != 0) throw std::invalid_argument("a histogram may not use label 'le'");
  std::string bucket = std::string(name) + "_bucket";
  const std::vector<double>& bounds = h.upper_bounds();
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += h.bucket_count(i);
    std::string le = i < bounds.size() ? FormatValue(bounds[i]) : "+Inf";
    AppendSample(bucket, labels, "le", le, std::to_string(cumulative), &f->samples);
  }
  // Sum and count come from separate atomics; a scrape racing an Observe may
  // see them one observation apart, which Prometheus tolerates.
  AppendSample(std::string(name) + "_sum", labels, nullptr, "", FormatValue(h.sum()), &f->samples);
  AppendSample(std::string(name) + "_count", labels, nullptr, "", std::to_string(cumulative),
               &f->samples);
}

std::string MetricsWriter::Text() const {
  std::string out;
  for (const auto& [name, family] : families_) {
    out.append("# HELP ").append(name).push_back(' ');
    AppendEscaped(family.help, false, &out);
    out.append("\n# TYPE ").append(name).push_back(' ');
    out.append(family.type).push_back('\n');
    out.append(family.samples);
  }
  return out;
}

}  // namespace shoal
