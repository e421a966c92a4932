// Error replies as they come off the wire: a caf::error with an arbitrary code, category and
// context (text, payload map), decoded by ToStatus and the payload readers.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>

#include "muster/messages/status/status_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  uint8_t code = data[0];
  uint8_t shape = data[1];
  std::string rest(reinterpret_cast<const char*>(data + 2), size - 2);
  size_t cut = rest.size() / 2;
  std::string text = rest.substr(0, cut);
  std::string payload = rest.substr(cut);
  caf::atom_value category = (shape & 1) ? muster::kStatusCategory : caf::atom("system");
  caf::message context;
  if (shape & 2) {
    std::map<std::string, std::string> payloads{
        {(shape & 4) ? "type.googleapis.com/muster.proto.BarrierError"
                     : "type.googleapis.com/muster.proto.CoordinationServiceError",
         payload}};
    context = caf::make_message(text, payloads);
  } else {
    context = caf::make_message(text);
  }
  // Code 0 is no error at all (CAF keeps no category or context for it).
  caf::error error = code == 0 ? caf::error{} : caf::error(code, category, context);
  absl::Status status = muster::ToStatus(error);
  (void)muster::GetCoordinationError(status);
  (void)muster::GetBarrierCounter(status);
  (void)muster::RenderStatusError(code, category, context);
  (void)muster::ToError(status);
  return 0;
}
