// Unexpected messages at a real leader: a peer (a CAF node of its own, no token needed) sends a
// few thousand messages the leader's actors do not handle, with raw control bytes in them: text
// to the coordinator, answers to no request and node-info replies to a key-value directory, and
// requests whose strings are not UTF-8. The leader drops and counts them: its log stays a few
// lines without a raw control byte, and a job runs normally after.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

#include <absl/strings/escaping.h>
#include <absl/strings/numbers.h>
#include <gmock/gmock.h>
#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/mailbox_element.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/vocabulary/interfaces.h"
#include "muster/net/agent/agent.h"
#include "muster/net/transport/node_config.h"
#include "tests/e2e/e2e_fixture.h"

namespace muster {
namespace {

using ::muster::testing::E2eTest;
using ::muster::testing::Subprocess;
using ::testing::HasSubstr;

constexpr int kMessages = 2000;
// An ANSI escape sequence (red text, then a cleared screen) and a few other control bytes.
const std::string kHostileText = "\x1b[31m\x1b[2J\r\a\x7f" + std::string(64, 'A');

class UnexpectedMessagesE2eTest : public E2eTest {
 protected:
  int Port() const {
    int port = 0;
    EXPECT_TRUE(absl::SimpleAtoi(address_.substr(address_.find(':') + 1), &port));
    return port;
  }
  caf::expected<CoordinatorActor> Connect(caf::actor_system& system) {
    return system.middleman().remote_actor<CoordinatorActor>("127.0.0.1",
                                                             static_cast<uint16_t>(Port()));
  }
  void ExpectNormalJob() {
    std::vector<Subprocess*> workers = {StartWorker(0, "full", {"--tasks=2"}),
                                        StartWorker(1, "full", {"--tasks=2"})};
    for (auto* worker : workers) {
      ExpectExit(worker, 0);
      EXPECT_THAT(worker->output(), HasSubstr("EVENT shutdown code=OK"));
    }
  }
};

// Sends `message` to `dest` with message id `id` (an answer when it has the response flag).
void SendWithId(caf::scoped_actor& self, const caf::strong_actor_ptr& dest, caf::message_id id,
                caf::message message) {
  dest->enqueue(caf::make_mailbox_element(self->ctrl(), id, {}, std::move(message)), nullptr);
}

// Before: one line per message (CAF's "*** unexpected message", the peer's bytes raw), 4,200
// lines and 650 KB here, terminal escapes included; the leader stalled writing them to its
// pipe and the job after failed.
TEST_F(UnexpectedMessagesE2eTest, ThousandsOfUnexpectedMessages_LogStaysSmallNoRawBytes) {
  StartLeader({"--jobs=worker=2"});
  {
    NodeConfig config{WorkerNodeOptions()};
    caf::actor_system system{config};
    auto coordinator = Connect(system);
    ASSERT_TRUE(coordinator) << system.render(coordinator.error());
    caf::scoped_actor self{system};
    caf::actor untyped = caf::actor_cast<caf::actor>(*coordinator);
    for (int i = 0; i < kMessages; ++i) self->send(untyped, kHostileText + std::to_string(i));
    // A request among them is answered with an error, at once.
    self->request(untyped, std::chrono::seconds(10), kHostileText)
        .receive([](const std::string&) { ADD_FAILURE() << "an answer to text"; },
                 [&](caf::error& error) {
                   EXPECT_EQ(error, caf::sec::unexpected_message) << system.render(error);
                 });
    // A key-value directory answers through the coordinator: its reply names it.
    proto::InsertKeyValueRequest insert;
    insert.mutable_kv()->set_key("config/lr");
    insert.mutable_kv()->set_value("0.1");
    caf::strong_actor_ptr directory;
    self->request(*coordinator, std::chrono::seconds(10), insert)
        .receive([&](const proto::InsertKeyValueResponse&) { directory = self->current_sender(); },
                 [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
    ASSERT_NE(directory, nullptr);
    ASSERT_NE(directory->node(), system.node());
    for (int i = 0; i < kMessages; ++i) {  // answers to no request
      SendWithId(self, directory, caf::make_message_id(1000 + i).response_id(),
                 caf::make_message(kHostileText));
    }
    // CAF's node-info reply with the peer's text: the guard closes the connection at the first.
    for (int i = 0; i < kMessages; ++i) {
      SendWithId(self, directory, caf::make_message_id(),
                 caf::make_message(caf::ok_atom::value, std::string("info"),
                                   caf::strong_actor_ptr{}, kHostileText));
    }
    self->monitor(*coordinator);
    bool closed = false;
    self->receive([&](caf::down_msg&) { closed = true; },
                  caf::after(std::chrono::seconds(10)) >> [] {});
    EXPECT_TRUE(closed);
  }
  {  // Requests whose strings are not UTF-8: protobuf does not parse them, CAF delivers them
     // empty.
    NodeConfig config{WorkerNodeOptions()};
    caf::actor_system system{config};
    auto coordinator = Connect(system);
    ASSERT_TRUE(coordinator) << system.render(coordinator.error());
    caf::scoped_actor self{system};
    proto::InsertKeyValueRequest insert;
    insert.mutable_kv()->set_key("bad/" + kHostileText + "\xff\xfe");
    insert.mutable_kv()->set_value("v");
    google::protobuf::LogSilencer quiet;  // this side's own complaints
    for (int i = 0; i < kMessages; ++i) self->send(*coordinator, insert);
    insert.mutable_kv()->set_key("config/lr");
    insert.set_allow_overwrite(true);
    self->request(*coordinator, std::chrono::seconds(10), insert)
        .receive([](const proto::InsertKeyValueResponse&) {},
                 [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
  }
  ExpectNormalJob();
  leader_->Signal(SIGTERM);  // the whole log, to the leader's exit
  ExpectExit(leader_.get(), 0);
  const std::string& log = leader_->output();
  size_t lines = std::count(log.begin(), log.end(), '\n');
  std::printf("leader log after %d unexpected messages: %zu lines, %zu bytes:\n%s\n", 4 * kMessages,
              lines, log.size(), absl::CHexEscape(log.substr(0, 4000)).c_str());
  EXPECT_LT(lines, 20u);
  EXPECT_EQ(log.find('\x1b'), std::string::npos);
  EXPECT_THAT(log, HasSubstr("muster: dropped "));
  EXPECT_THAT(log, HasSubstr("which this node did not publish"));
}

}  // namespace
}  // namespace muster
