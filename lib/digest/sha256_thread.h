// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// SHA-256 of a byte stream on a helper thread.
//
// Moving a large file through a socket or into a file and hashing it on the
// same thread adds the hash (about 1 ms per MiB here) to every chunk; on a
// helper thread it overlaps with the transfer. The mover hands over each
// chunk after it is done with it (owned strings are moved, views must stay
// valid until finish()), and finish() waits for the digest.
#pragma once

#include "digest/digest.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace linkd {

class Sha256Thread {
public:
  Sha256Thread();
  ~Sha256Thread();
  Sha256Thread(const Sha256Thread &) = delete;
  Sha256Thread &operator=(const Sha256Thread &) = delete;

  void update(std::string chunk);      // takes the bytes
  void updateView(std::string_view v); // the bytes outlive finish()
  // The digest of everything handed over; the object is spent afterwards.
  Digest finish();

private:
  struct Piece {
    std::string owned;
    std::string_view view;
  };
  void loop();

  Sha256 hash;
  std::mutex mu;
  std::condition_variable cv, room;
  std::deque<Piece> queue;
  size_t queuedBytes = 0; // owned chunks only
  bool ending = false;
  std::thread worker;
};

} // namespace linkd
