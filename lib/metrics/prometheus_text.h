// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Writes metrics in Prometheus's text exposition format (version 0.0.4):
// per family one `# HELP` and one `# TYPE` line, then its samples, label
// values escaped. The writer keeps families together whatever order the
// caller adds samples in, so a collector can walk its sources once.
//
// Labels must have bounded values (a kind, an outcome, a configured tier):
// boundedLabel() folds free text such as an uncacheable reason into one.
#pragma once

#include "metrics/histogram.h"

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace linkd {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class PrometheusText {
public:
  void counter(const std::string &name, const std::string &help, double value,
               const MetricLabels &labels = {});
  void gauge(const std::string &name, const std::string &help, double value,
             const MetricLabels &labels = {});
  void histogram(const std::string &name, const std::string &help,
                 const LatencyHistogram::Snapshot &h,
                 const MetricLabels &labels = {});
  // Every family, in the order first added.
  std::string str() const;

private:
  struct Family {
    std::string type, help;
    std::vector<std::string> samples; // full lines, without the newline
  };
  Family &family(const std::string &name, const char *type,
                 const std::string &help);
  std::vector<std::string> order;
  std::map<std::string, Family> families;
};

// `text` as a label value of bounded variety: words naming a path become
// "<path>", anything after ": " (a file, a member) goes, and the result is
// cut to 80 bytes.
std::string boundedLabel(const std::string &text);

} // namespace linkd
