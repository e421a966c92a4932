#include "muster/net/transport/wire/frame_assembler.h"

#include <algorithm>

namespace muster {

void FrameAssembler::Start(size_t payload_bytes) {
  expected_ = payload_bytes;
  payload_.clear();
}

size_t FrameAssembler::NextChunk() const {
  size_t allowed = std::clamp(payload_.size(), kFirstChunkBytes, kMaxChunkBytes);
  return std::min(expected_ - payload_.size(), allowed);
}

bool FrameAssembler::Append(absl::Span<const char> chunk) {
  // Grows with what arrived (at most doubling), never to the announced size ahead of the bytes.
  if (payload_.capacity() < payload_.size() + chunk.size()) {
    payload_.reserve(
        std::min(expected_, std::max(payload_.size() * 2, payload_.size() + chunk.size())));
  }
  payload_.insert(payload_.end(), chunk.begin(), chunk.end());
  return payload_.size() >= expected_;
}

void FrameAssembler::Reset() {
  expected_ = 0;
  std::vector<char>().swap(payload_);
}

}  // namespace muster
