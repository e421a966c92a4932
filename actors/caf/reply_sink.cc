#include "muster/actors/caf/reply_sink.h"

#include <atomic>
#include <memory>
#include <utility>

#include <absl/synchronization/notification.h>
#include <caf/actor_cast.hpp>
#include <caf/actor_system.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/make_actor.hpp>
#include <caf/message_id.hpp>
#include <caf/monitorable_actor.hpp>

namespace muster {
namespace {

class ReplySink final : public caf::monitorable_actor {
 public:
  ReplySink(ReplyCallback on_reply, caf::error unanswered)
      : ReplySink(caf::actor_config{}, std::move(on_reply), std::move(unanswered)) {}

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit*) override {
    if (what == nullptr || !what->mid.is_response()) return;
    caf::message reply = what->move_content_to_message();
    Complete(reply);
  }

  void on_destroy() override {
    if (!done_.load(std::memory_order_acquire)) {
      caf::message error = caf::make_message(std::move(unanswered_));
      Complete(error);
    }
    caf::monitorable_actor::on_destroy();
  }

  const char* name() const override { return "muster.reply_sink"; }

 private:
  ReplySink(caf::actor_config&& config, ReplyCallback on_reply, caf::error unanswered)
      : caf::monitorable_actor(config),
        on_reply_(std::move(on_reply)),
        unanswered_(std::move(unanswered)) {}

  void Complete(caf::message& reply) {
    if (done_.exchange(true, std::memory_order_acq_rel)) return;
    ReplyCallback on_reply = std::move(on_reply_);
    on_reply(reply);
  }

  std::atomic<bool> done_{false};
  ReplyCallback on_reply_;
  caf::error unanswered_;
};

}  // namespace

caf::actor_addr RequestWithSink(const caf::strong_actor_ptr& receiver, caf::message request,
                                ReplyCallback on_reply, caf::error unanswered) {
  caf::actor_system& system = *receiver->home_system;
  auto sink = caf::make_actor<ReplySink, caf::strong_actor_ptr>(
      system.next_actor_id(), system.node(), &system, std::move(on_reply), std::move(unanswered));
  caf::actor_addr address = caf::actor_cast<caf::actor_addr>(sink);
  // The request is the only reference: a receiver that drops it unanswered destroys the sink.
  receiver->enqueue(std::move(sink), caf::make_message_id(1), std::move(request), nullptr);
  return address;
}

bool AwaitExit(const std::vector<caf::actor_addr>& actors, absl::Duration timeout) {
  struct Exits {
    std::atomic<size_t> left;
    absl::Notification all;
  };
  auto exits = std::make_shared<Exits>();
  exits->left = actors.size() + 1;  // one more until every functor is attached
  auto exited = [exits] {
    if (exits->left.fetch_sub(1, std::memory_order_acq_rel) == 1) exits->all.Notify();
  };
  for (const caf::actor_addr& address : actors) {
    // A functor attached to an actor that is gone runs at once.
    if (auto actor = caf::actor_cast<caf::strong_actor_ptr>(address)) {
      actor->get()->attach_functor(exited);
    } else {
      exited();
    }
  }
  exited();
  return exits->all.WaitForNotificationWithTimeout(timeout);
}

}  // namespace muster
