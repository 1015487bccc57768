// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// Removes finished links' scratch directories on a farm node, on a thread of
// its own.
//
// A link's scratch directory holds its outputs until they are sent; removing
// a 130 MB output takes 20-40 ms (page cache, extents), and done inline it
// would sit between the link's last message and its status, which the client
// waits for. Directories still queued at destruction are removed before the
// destructor returns; a node killed before that leaves them to the next
// start's sweep of the links directory.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace linkd {

class ScratchJanitor {
public:
  ScratchJanitor();
  ~ScratchJanitor();
  ScratchJanitor(const ScratchJanitor &) = delete;
  ScratchJanitor &operator=(const ScratchJanitor &) = delete;

  // Removes `dir` and everything beneath it, soon.
  void remove(std::string dir);

private:
  void loop();
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;
  bool stopping = false;
  std::thread worker;
};

} // namespace linkd
