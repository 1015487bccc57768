// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

#include "metrics/prometheus_text.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace linkd {
namespace {

std::string escapeLabel(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string escapeHelp(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string formatValue(double v) {
  if (std::isinf(v))
    return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v))
    return "NaN";
  // Integers (every counter but the _sum of seconds) print exactly.
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

std::string sample(const std::string &name, const MetricLabels &labels,
                   double value) {
  std::string line = name;
  if (!labels.empty()) {
    line += '{';
    for (size_t i = 0; i < labels.size(); ++i)
      line += (i ? "," : "") + labels[i].first + "=\"" +
              escapeLabel(labels[i].second) + "\"";
    line += '}';
  }
  return line + " " + formatValue(value);
}

} // namespace

PrometheusText::Family &PrometheusText::family(const std::string &name,
                                               const char *type,
                                               const std::string &help) {
  auto [it, added] = families.try_emplace(name);
  if (added) {
    order.push_back(name);
    it->second.type = type;
    it->second.help = help;
  }
  return it->second;
}

void PrometheusText::counter(const std::string &name, const std::string &help,
                             double value, const MetricLabels &labels) {
  family(name, "counter", help).samples.push_back(sample(name, labels, value));
}

void PrometheusText::gauge(const std::string &name, const std::string &help,
                           double value, const MetricLabels &labels) {
  family(name, "gauge", help).samples.push_back(sample(name, labels, value));
}

void PrometheusText::histogram(const std::string &name, const std::string &help,
                               const LatencyHistogram::Snapshot &h,
                               const MetricLabels &labels) {
  Family &f = family(name, "histogram", help);
  for (size_t i = 0; i < h.cumulative.size(); ++i) {
    MetricLabels with = labels;
    with.emplace_back("le", i < LatencyHistogram::kBounds.size()
                                ? formatValue(LatencyHistogram::kBounds[i])
                                : "+Inf");
    f.samples.push_back(
        sample(name + "_bucket", with, static_cast<double>(h.cumulative[i])));
  }
  f.samples.push_back(sample(name + "_sum", labels, h.sumSeconds));
  f.samples.push_back(
      sample(name + "_count", labels, static_cast<double>(h.count)));
}

std::string PrometheusText::str() const {
  std::ostringstream o;
  for (const std::string &name : order) {
    const Family &f = families.at(name);
    o << "# HELP " << name << " " << escapeHelp(f.help) << "\n";
    o << "# TYPE " << name << " " << f.type << "\n";
    for (const std::string &s : f.samples)
      o << s << "\n";
  }
  return o.str();
}

std::string boundedLabel(const std::string &text) {
  std::string head = text.substr(0, text.find(": "));
  std::istringstream words(head);
  std::string out;
  for (std::string w; words >> w;)
    out += (out.empty() ? "" : " ") +
           (w.find('/') != std::string::npos ? std::string("<path>") : w);
  if (out.size() > 80)
    out.resize(80);
  return out.empty() ? "unknown" : out;
}

} // namespace linkd
