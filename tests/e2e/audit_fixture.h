// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// What the `linkd audit` end-to-end tests share: running the audit, waiting
// for the link records the daemon stores after its answer, running a PE
// program under wine, looking for lines in a report.
#pragma once

#include "harness.h"

#include <string>
#include <vector>

namespace linkd::e2e {

class AuditE2eTest : public E2eTest {
protected:
  RunResult audit(const std::string &args) {
    return run(binPath("linkd") + " audit " + args);
  }

  // Records of links the cache does not keep are stored after the answer.
  void waitForRecords(long long n) { waitForStat("audit_records_stored", n); }

  std::string runPe(const std::string &exe) {
    RunResult r = run(wine(exe), std::chrono::seconds(180));
    EXPECT_EQ(r.exitCode, 0) << describe(r);
    std::erase(r.out, '\r');
    return r.out;
  }

  void expectIn(const RunResult &r, const std::vector<std::string> &needles) {
    for (const std::string &n : needles)
      EXPECT_NE(r.out.find(n), std::string::npos) << n << "\n" << r.out;
  }
};

} // namespace linkd::e2e
