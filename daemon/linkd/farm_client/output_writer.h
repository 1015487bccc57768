// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// An output arriving from a farm node, written to its file on a thread of
// its own and hashed on another (lib/digest/sha256_thread.h).
//
// The thread reading the node's stream would otherwise also write every
// chunk; on a machine where new page-cache pages are expensive (this VM:
// ~9 us each) that write was 340 ms of the 440 ms a 137 MB output took, and
// the stream waited behind it. At most a few MiB wait in the queue.
#pragma once

#include "digest/sha256_thread.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace linkd {

class OutputWriter {
public:
  explicit OutputWriter(int fd);
  ~OutputWriter();
  OutputWriter(const OutputWriter &) = delete;
  OutputWriter &operator=(const OutputWriter &) = delete;

  // Appends `chunk` to the file, then hashes it. False once a write failed.
  bool add(std::string chunk);
  // Waits for every write and the hash; false (and `digest` unset) if a
  // write failed. The object is spent afterwards.
  bool finish(Digest &digest);

private:
  void loop();
  int fd;
  Sha256Thread hash;
  std::mutex mu;
  std::condition_variable cv, room;
  std::deque<std::string> queue;
  size_t queuedBytes = 0;
  bool ending = false, failed = false;
  std::thread worker;
};

} // namespace linkd
