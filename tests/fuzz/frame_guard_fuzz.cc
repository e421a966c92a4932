// FrameGuard over arbitrary bytes cut as CAF would deliver them: a 32-byte header, then the
// payload it announces (capped), and so on. Must never crash or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "muster/net/transport/wire/frame_guard.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  muster::WireLimits limits;
  limits.max_frame_bytes = 1 << 16;
  limits.max_handshake_bytes = 1 << 12;
  muster::PublishedActors published;  // bit 1: a node that published actor 1
  published.Add(1);
  muster::FrameGuard guard(limits, /*inbound=*/(data[0] & 1) != 0,
                           (data[0] & 2) != 0 ? &published : nullptr,
                           (data[0] & 4) != 0 ? std::string(32, '\1') : std::string{});
  const char* bytes = reinterpret_cast<const char*>(data + 1);
  size_t left = size - 1;
  bool header = true;
  size_t announced = 0;
  while (left > 0) {
    size_t chunk = header ? muster::FrameGuard::kHeaderSize : announced;
    if (chunk == 0 || chunk > left) chunk = left;
    if (header && chunk == muster::FrameGuard::kHeaderSize) {
      announced = static_cast<uint8_t>(bytes[4]) << 24 | static_cast<uint8_t>(bytes[5]) << 16 |
                  static_cast<uint8_t>(bytes[6]) << 8 | static_cast<uint8_t>(bytes[7]);
    }
    if (!guard.Check(absl::MakeConstSpan(bytes, chunk)).ok()) break;
    header = !header || announced == 0;
    bytes += chunk;
    left -= chunk;
  }
  return 0;
}
