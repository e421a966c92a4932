// Reads a large frame's payload as its bytes arrive, instead of sizing a buffer for all of it as
// soon as its header announces it (CAF 0.17 sizes and zero-fills its read buffer at once: a peer
// that announced 8 MiB and then sent one byte a second held 8 MiB of the leader's memory per
// connection). A payload over kPresizedBytes is read in chunks that grow with what has
// arrived: 4 KiB, then as much again as has arrived so far, at most 64 KiB a chunk. So what the
// payload costs the receiver is at most about twice the bytes the peer actually sent.
//
//   [idle] --Start(n > kPresizedBytes)--> [assembling] --Append(last chunk)--> [complete]
//      ^                                                                          |
//      +--------------------------------- Reset() --------------------------------+
// Pure logic, one per connection (GuardedScribe).
#pragma once

#include <cstddef>
#include <vector>

#include <absl/types/span.h>

namespace muster {

class FrameAssembler {
 public:
  // Payloads up to this size are read into a buffer of their size at once (most frames: one
  // read, no copy).
  static constexpr size_t kPresizedBytes = 16 << 10;
  static constexpr size_t kFirstChunkBytes = 4 << 10;
  static constexpr size_t kMaxChunkBytes = 64 << 10;

  static bool Assembles(size_t payload_bytes) { return payload_bytes > kPresizedBytes; }

  // Begins a payload of `payload_bytes` (Assembles(payload_bytes) must hold).
  void Start(size_t payload_bytes);
  bool active() const { return expected_ != 0; }
  // The size of the next read: what is left, at most the chunk the bytes so far allow.
  size_t NextChunk() const;
  // Appends a chunk that arrived (at most NextChunk() bytes). True when the payload is complete.
  bool Append(absl::Span<const char> chunk);
  size_t expected() const { return expected_; }
  size_t received() const { return payload_.size(); }
  // The complete payload, for the protocol to read (valid until Reset).
  std::vector<char>& payload() { return payload_; }
  // Back to idle; the payload's memory is freed.
  void Reset();

 private:
  size_t expected_ = 0;
  std::vector<char> payload_;
};

}  // namespace muster
