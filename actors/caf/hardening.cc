#include "muster/actors/caf/hardening.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>

#include <absl/strings/escaping.h>
#include <absl/strings/str_cat.h>
#include <caf/actor_clock.hpp>
#include <caf/delegated.hpp>
#include <caf/message_view.hpp>
#include <caf/node_id.hpp>
#include <caf/result.hpp>
#include <caf/sec.hpp>
#include <caf/type_erased_tuple.hpp>

#include "muster/messages/line_rate_limiter.h"
#include "muster/messages/status/caf_text.h"

namespace muster {
namespace {

// How much of a dropped message's text its line shows (before escaping).
constexpr size_t kShownBytes = 160;
// Shared by every actor of the process (atomics: actors run on several threads).
std::atomic<uint64_t> dropped_total{0};
LineRateLimiter drop_lines;  // counts every drop since the last line

// The message's values as CAF renders them, cut at kShownBytes and escaped: one line, no
// control bytes.
std::string Shown(const caf::type_erased_tuple& content) {
  std::string text = "(";
  for (size_t i = 0; i < content.size() && text.size() <= kShownBytes; ++i) {
    if (i > 0) text += ", ";
    text += content.stringify(i);
  }
  if (text.size() <= kShownBytes) return absl::CHexEscape(absl::StrCat(text, ")"));
  return absl::StrCat(absl::CHexEscape(text.substr(0, kShownBytes)), "...");
}

std::string SenderOf(caf::scheduled_actor* self) {
  const caf::strong_actor_ptr& sender = self->current_sender();
  if (!sender) return "an anonymous sender";
  if (sender->node() == self->node()) return "this node";
  return PeerName(sender->node());
}

caf::result<caf::message> Drop(caf::scheduled_actor* self, caf::message_view& view) {
  dropped_total.fetch_add(1, std::memory_order_relaxed);
  drop_lines.Count();
  const auto now = self->clock().now();  // the actor clock: simulated in tests
  if (drop_lines.TakeTurn(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count())) {
    const uint64_t count = drop_lines.TakeCount();
    std::string line =
        absl::StrCat("muster: dropped ", count, " unexpected message", count == 1 ? "" : "s",
                     " since the last such line; the latest, to ", self->name(), " from ",
                     SenderOf(self), ": ", Shown(view.content()), "\n");
    std::fputs(line.c_str(), stderr);
  }
  if (self->current_message_id().is_request()) return caf::sec::unexpected_message;
  return caf::delegated<caf::message>{};  // no answer
}

}  // namespace

void DropUnexpectedMessages(caf::scheduled_actor* self) { self->set_default_handler(Drop); }

uint64_t UnexpectedMessagesDropped() { return dropped_total.load(std::memory_order_relaxed); }

void ResetUnexpectedMessageLogForTesting() { drop_lines.Reset(); }

}  // namespace muster
