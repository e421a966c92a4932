// The state writer on a real actor system (it is a detached blocking actor, so not on the test
// scheduler) and a real state dir: concurrent batches from several actors are all acknowledged,
// and everything acknowledged is on disk for the next leader. Waits are bounded by request
// timeouts.
#include "muster/actors/durability/state_writer_actor.h"

#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/durability/state_store.h"
#include "muster/messages/vocabulary/message_types.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using ::muster::testing::IsOk;

constexpr int kSenders = 8;
constexpr int kPerSender = 125;  // 1,000 batches in all
constexpr auto kWait = std::chrono::seconds(60);

std::string KvValue(const std::string& value) {
  proto::KvRecord record;
  record.set_value(value);
  return record.SerializeAsString();
}

class StateWriterTest : public ::testing::Test {
 protected:
  StateWriterTest() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = (fs::path(::testing::TempDir()) /
            absl::StrCat("muster_writer_", info->name(), "_", getpid()))
               .string();
    fs::remove_all(dir_);
  }
  ~StateWriterTest() override { fs::remove_all(dir_); }

  static caf::actor_system_config& Config(caf::actor_system_config& cfg) {
    cfg.set("logger.console", caf::atom("none"));
    AddMessageTypes(cfg);
    return cfg;
  }

  static std::string LeaderValue() {
    proto::LeaderRecord leader;
    leader.set_format(kStateFormat);
    leader.set_incarnation(7);
    return leader.SerializeAsString();
  }

  // Loads the dir with a fresh store (the writer must be gone: it holds the lock).
  absl::StatusOr<proto::RecoveredState> Reload() {
    auto store = StateStore::Open(dir_);
    if (!store.ok()) return store.status();
    return (*store)->Load();
  }

  std::string dir_;
};

// Sends `count` batches (one key each, k/<prefix>/<i>) at once to the writer and answers the
// number acknowledged with true once every reply (or error) arrived.
caf::behavior Sender(caf::event_based_actor* self, StateWriterActor writer) {
  return {[=](int id, int count) -> caf::result<int> {
    auto promise = self->make_response_promise<int>();
    auto acked = std::make_shared<int>(0);
    auto pending = std::make_shared<int>(count);
    for (int i = 0; i < count; ++i) {
      StateBatch batch;
      batch.Put(KvStateKey(absl::StrCat("s", id, "/", i)), KvValue(absl::StrCat(id, ":", i)));
      self->request(writer, kWait, persist_atom::value, std::move(batch))
          .then(
              [=](bool durable) mutable {
                if (durable) ++*acked;
                if (--*pending == 0) promise.deliver(*acked);
              },
              [=](caf::error&) mutable {
                if (--*pending == 0) promise.deliver(*acked);
              });
    }
    return promise;
  }};
}

TEST_F(StateWriterTest, ThousandConcurrentBatches_AllAcknowledgedAndOnDisk) {
  {
    caf::actor_system_config cfg;
    caf::actor_system system(Config(cfg));
    auto store = StateStore::Open(dir_);
    ASSERT_THAT(store, IsOk());
    StateWriterActor writer = SpawnStateWriter(system, *std::move(store));
    caf::scoped_actor self(system);
    {
      StateBatch leader;
      leader.Put(LeaderStateKey(), LeaderValue());
      bool acked = false;
      self->request(writer, kWait, persist_atom::value, std::move(leader))
          .receive([&](bool durable) { acked = durable; },
                   [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
      ASSERT_TRUE(acked);
    }
    std::vector<caf::actor> senders;
    for (int id = 0; id < kSenders; ++id) senders.push_back(system.spawn(Sender, writer));
    // Every sender starts before any answer is awaited: their batches interleave.
    std::vector<decltype(self->request(senders[0], kWait, 0, 0))> handles;
    for (int id = 0; id < kSenders; ++id) {
      handles.push_back(self->request(senders[id], kWait + 10s, id, kPerSender));
    }
    int acked = 0;
    for (auto& handle : handles) {
      handle.receive([&](int n) { acked += n; },
                     [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
    }
    EXPECT_EQ(acked, kSenders * kPerSender);
    for (auto& sender : senders) self->send_exit(sender, caf::exit_reason::user_shutdown);
    self->send_exit(writer, caf::exit_reason::user_shutdown);
  }  // the system waits for the writer, which releases the store (and its lock)
  auto state = Reload();
  ASSERT_THAT(state, IsOk());
  EXPECT_FALSE(state->fresh());
  EXPECT_EQ(state->leader().incarnation(), 7u);
  std::set<std::string> keys;
  for (const auto& dir : state->directories()) {
    for (const auto& entry : dir.entries()) keys.insert(entry.key() + "=" + entry.value());
  }
  EXPECT_EQ(keys.size(), static_cast<size_t>(kSenders * kPerSender));
  for (int id = 0; id < kSenders; ++id) {
    for (int i = 0; i < kPerSender; ++i) {
      EXPECT_TRUE(keys.count(absl::StrCat("s", id, "/", i, "=", id, ":", i))) << id << " " << i;
    }
  }
}

// Batches of one sender apply in the order sent, also when they share a group commit.
TEST_F(StateWriterTest, BatchesOfOneSender_ApplyInOrder) {
  {
    caf::actor_system_config cfg;
    caf::actor_system system(Config(cfg));
    auto store = StateStore::Open(dir_);
    ASSERT_THAT(store, IsOk());
    StateWriterActor writer = SpawnStateWriter(system, *std::move(store));
    caf::scoped_actor self(system);
    std::vector<StateBatch> batches(5);
    batches[0].Put(LeaderStateKey(), LeaderValue());
    batches[1].Put(KvStateKey("d/x"), KvValue("1"));
    batches[2].Delete(KvStateKey("d/x"));
    batches[3].Put(KvStateKey("d/x"), KvValue("3"));
    batches[3].Put(KvStateKey("d/y"), KvValue("3"));
    batches[4].Delete(KvStateKey("d/y"));
    batches[4].Put(KvStateKey("d/z"), KvValue("4"));
    std::vector<decltype(self->request(writer, kWait, persist_atom::value, StateBatch()))> handles;
    for (auto& batch : batches) {
      handles.push_back(self->request(writer, kWait, persist_atom::value, std::move(batch)));
    }
    // An empty batch is acknowledged too (nothing to write).
    handles.push_back(self->request(writer, kWait, persist_atom::value, StateBatch()));
    int acked = 0;
    for (auto& handle : handles) {
      handle.receive([&](bool durable) { acked += durable ? 1 : 0; },
                     [&](caf::error& error) { ADD_FAILURE() << system.render(error); });
    }
    EXPECT_EQ(acked, 6);
    self->send_exit(writer, caf::exit_reason::user_shutdown);
  }
  auto state = Reload();
  ASSERT_THAT(state, IsOk());
  ASSERT_EQ(state->directories_size(), 1);
  std::vector<std::string> entries;
  for (const auto& entry : state->directories(0).entries()) {
    entries.push_back(entry.key() + "=" + entry.value());
  }
  EXPECT_THAT(entries, ::testing::ElementsAre("d/x=3", "d/z=4"));
}

}  // namespace
}  // namespace muster
