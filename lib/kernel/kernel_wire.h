// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception

// The kernel library's wire: liblinkd <-> the daemon's blob listener
// (daemon/linkd/service/kernel_listener.h), over a Unix socket of its own
// (<LINKD_SOCKET>.blob). Not gRPC: liblinkd is loaded into Python, Julia
// and compiler processes that bring their own gRPC, Abseil and protobuf (and
// gRPC does not survive fork), so the library speaks hand-encoded frames and
// links nothing but libc and libcrypto (docs/design.md, "Kernel library").
//
// Frame: u32 little-endian payload length, then the payload; the payload's
// first byte is the message type. Integers are little-endian; a string is a
// u32 length and its bytes; a blob's data a u64 length and its bytes.
//
//   client                                   daemon
//   Link {flavor, flags, timeout, argv, env,
//         inputs: [name, sha256, size]}  -->
//                                        <-- Need {input indexes}   (or Result)
//   Blob {index, data} ...              -->
//                                        <-- Result {exit, signal, hit,
//                                                    stdout, stderr, outputs,
//                                                    uncacheable}
//   Health                              -->
//                                        <-- HealthReply {versions, counters}
//   any request                         <-- Error {message, kind}: the daemon
//                                            did not run it (kind CannotRun:
//                                            the library links in a child
//                                            process; Timeout, Refused: no)
//
// Both sides treat every field as hostile: decoders check lengths against
// the payload and the limits below and return nullopt, never read past it.
// Header-only types, codec in kernel_wire.cpp; no LLVM, no gRPC, no globals.
#pragma once

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace linkd::kernel {

constexpr uint32_t kWireVersion = 1;
constexpr uint32_t kMaxFrameBytes = 1u << 30; // 1 GiB
constexpr size_t kMaxNameBytes = 4096;
constexpr size_t kMaxArgs = 1 << 16;
constexpr size_t kMaxInputs = 1 << 14;
constexpr std::string_view kSocketSuffix = ".blob";

enum MsgType : uint8_t {
  MsgLink = 'L',
  MsgNeed = 'N',
  MsgBlob = 'B',
  MsgResult = 'R',
  MsgHealth = 'H',
  MsgHealthReply = 'h',
  MsgError = 'E',
};

enum LinkFlags : uint32_t {
  FlagNoCache = 1,
};

struct WireInput {
  std::string name;
  std::string sha256; // 32 raw bytes
  uint64_t size = 0;
};

struct LinkMsg {
  uint32_t version = kWireVersion;
  uint8_t flavor = 0; // linkd::Flavor
  uint32_t flags = 0;
  uint32_t timeoutMs = 0;        // 0: the daemon's own limit
  std::vector<std::string> argv; // argv[0] = the tool's name
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<WireInput> inputs;
};

struct WireOutput {
  std::string name;
  uint32_t mode = 0644;
  std::string data;
};

struct ResultMsg {
  int32_t exitCode = 0;
  int32_t termSignal = 0;
  bool cacheHit = false;
  uint32_t blobsUploaded = 0;
  std::string out, err;
  std::vector<WireOutput> outputs;
  // Why the daemon did not store this result ("" if it did, or for a hit).
  std::string uncacheable;
};

// What an Error means for the library: whether a local link may answer
// the call instead.
enum class ErrorKind : uint8_t {
  CannotRun = 0, // the daemon cannot run this link: link locally
  Timeout = 1,   // the caller's timeout passed: no second try
  Refused = 2,   // the request is wrong (a bad name, an output outside the
                 // working directory): the same answer locally
};

struct WireError {
  std::string message;
  ErrorKind kind = ErrorKind::CannotRun;
};

struct HealthMsg {
  std::string version, lldVersion;
  uint64_t activeLinks = 0, linksTotal = 0, hits = 0, misses = 0;
};

std::string encodeLink(const LinkMsg &m);
std::string encodeNeed(const std::vector<uint32_t> &indexes);
// The Blob message's head (type, index, length); the data follows it in the
// same frame (sent without a copy).
std::string encodeBlobHead(uint32_t index, uint64_t size);
std::string encodeResult(const ResultMsg &m);
std::string encodeHealth();
std::string encodeHealthReply(const HealthMsg &m);
std::string encodeError(std::string_view message,
                        ErrorKind kind = ErrorKind::CannotRun);

// Decoders take the payload without the type byte.
std::optional<LinkMsg> decodeLink(std::string_view p);
std::optional<std::vector<uint32_t>> decodeNeed(std::string_view p);
// The index and a view of the data inside `p`.
std::optional<std::pair<uint32_t, std::string_view>>
decodeBlob(std::string_view p);
std::optional<ResultMsg> decodeResult(std::string_view p);
std::optional<HealthMsg> decodeHealthReply(std::string_view p);
std::optional<WireError> decodeError(std::string_view p);

// Whole frames on a stream socket. `parts` are concatenated into one frame
// (writev). Reads wait at most `timeoutMs` in total (0: no limit); false on
// EOF, error, timeout, or a length over kMaxFrameBytes.
bool writeFrame(int fd, std::initializer_list<std::string_view> parts);
bool readFrame(int fd, std::string &payload, uint32_t timeoutMs = 0,
               uint32_t maxBytes = kMaxFrameBytes);
// Waits until `fd` has bytes (or a hang-up) to read; false at `deadline`
// or on an error (EINTR is waited through).
bool waitReadable(int fd, std::chrono::steady_clock::time_point deadline);
// `parts` as they are, in one writev (at most 7): a caller's own framing.
bool writeRaw(int fd, std::initializer_list<std::string_view> parts);

// A caller's input name is a path the link may refer to: non-empty, at most
// kMaxNameBytes, no NUL, no empty, "." or ".." component (so that one name is
// one file in the link's view). "" if acceptable, else why not.
std::string checkInputName(std::string_view name);

} // namespace linkd::kernel
