// Message payloads as they come off the wire: CAF deserializes each proto type through the
// bridge (a byte string, then ParseFromString). Malformed input must be refused cleanly.
#include <cstddef>
#include <cstdint>

#include <caf/binary_deserializer.hpp>

#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_service.pb.h"

namespace {

template <class Message>
void Decode(const uint8_t* data, size_t size) {
  Message message;
  caf::binary_deserializer source(nullptr, reinterpret_cast<const char*>(data), size);
  (void)source(message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  switch (data[0] % 6) {
    case 0:
      Decode<muster::proto::RegisterTaskRequest>(data + 1, size - 1);
      break;
    case 1:
      Decode<muster::proto::InsertKeyValueRequest>(data + 1, size - 1);
      break;
    case 2:
      Decode<muster::proto::BarrierRequest>(data + 1, size - 1);
      break;
    case 3:
      Decode<muster::proto::HeartbeatBatchRequest>(data + 1, size - 1);
      break;
    case 4:
      Decode<muster::proto::WaitForAllTasksRequest>(data + 1, size - 1);
      break;
    default:
      Decode<muster::proto::AuthenticateRequest>(data + 1, size - 1);
      break;
  }
  return 0;
}
