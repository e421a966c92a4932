// The durable gate, deterministic, in an actor that owns one and a fake writer: work waits for
// every batch persisted before it, runs in order, and after a failed write runs with the error
// (then and forever after).
#include "muster/actors/durability/durable_gate.h"

#include <memory>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/event_based_actor.hpp>

#include "tests/actors/durability/fake_state_writer.h"
#include "tests/testing/deterministic_fixture.h"

namespace muster::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using idle_atom = caf::atom_constant<caf::atom("idle")>;

using Log = std::shared_ptr<std::vector<std::string>>;

class DurableGateTest : public DeterministicTest {
 protected:
  // An actor owning a gate on `writer`: (persist_atom, key) persists a batch putting key,
  // (name) queues work that logs "<name>:<status code>", (idle_atom) logs the gate's idleness.
  caf::actor SpawnOwner(StateWriterActor writer) {
    Log log = log_;
    return Keep(system_.spawn([writer, log](caf::event_based_actor* self) -> caf::behavior {
      auto gate = std::make_shared<DurableGate>(writer);
      return {
          [=](persist_atom, const std::string& key) {
            StateBatch batch;
            if (!key.empty()) batch.Put(key, "v");
            gate->Persist(self, std::move(batch));
          },
          [=](const std::string& name) {
            gate->After([=](const absl::Status& status) {
              log->push_back(absl::StrCat(name, ":", absl::StatusCodeToString(status.code())));
            });
          },
          [=](idle_atom) { log->push_back(gate->idle() ? "idle" : "waiting"); },
      };
    }));
  }

  void Tell(const caf::actor& owner, const std::string& name) {
    caf::anon_send(owner, name);
    Drain();
  }
  void Persist(const caf::actor& owner, const std::string& key) {
    caf::anon_send(owner, persist_atom::value, key);
    Drain();
  }
  void AskIdle(const caf::actor& owner) {
    caf::anon_send(owner, idle_atom::value);
    Drain();
  }
  void Release() {
    caf::anon_send(writer_, release_atom::value);
    Drain();
  }
  StateWriterActor Writer() {
    writer_ = Keep(system_.spawn(FakeWriter, disk_));
    return caf::actor_cast<StateWriterActor>(writer_);
  }

  Log log_ = std::make_shared<std::vector<std::string>>();
  std::shared_ptr<FakeDisk> disk_ = std::make_shared<FakeDisk>();
  FakeWriterActor writer_;
};

TEST_F(DurableGateTest, WithoutWriter_DisabledAndWorkRunsAtOnce) {
  DurableGate gate;
  EXPECT_FALSE(gate.enabled());
  EXPECT_TRUE(gate.idle());
  auto owner = SpawnOwner(StateWriterActor());
  Persist(owner, "k");  // nothing to persist to
  Tell(owner, "a");
  AskIdle(owner);
  EXPECT_THAT(*log_, ElementsAre("a:OK", "idle"));
}

TEST_F(DurableGateTest, WorkWaitsForEveryBatchBeforeIt_InOrder) {
  auto owner = SpawnOwner(Writer());
  Tell(owner, "before");  // nothing persisted yet: at once
  disk_->hold = true;
  Persist(owner, "k1");
  Tell(owner, "after-1");
  Persist(owner, "k2");
  Tell(owner, "after-2a");
  Persist(owner, "k3");
  Tell(owner, "after-3");
  AskIdle(owner);
  EXPECT_THAT(*log_, ElementsAre("before:OK", "waiting"));
  // One write in flight: k2 and k3, made meanwhile, wait for it and then go together.
  ASSERT_EQ(disk_->held.size(), 1u);
  Release();
  EXPECT_THAT(*log_, ElementsAre("before:OK", "waiting", "after-1:OK"));
  ASSERT_EQ(disk_->held.size(), 1u);  // the next write: k2 and k3 in one batch
  ASSERT_EQ(disk_->batches.size(), 2u);
  EXPECT_EQ(disk_->batches[1].ops.size(), 2u);
  Release();
  AskIdle(owner);
  EXPECT_THAT(*log_, ElementsAre("before:OK", "waiting", "after-1:OK", "after-2a:OK", "after-3:OK",
                                 "idle"));
  EXPECT_EQ(disk_->data.count("k2") + disk_->data.count("k3"), 2u);
}

TEST_F(DurableGateTest, EmptyBatch_NotSentAndNothingWaits) {
  auto owner = SpawnOwner(Writer());
  disk_->hold = true;
  Persist(owner, "");
  Tell(owner, "a");
  EXPECT_THAT(disk_->batches, IsEmpty());
  EXPECT_THAT(*log_, ElementsAre("a:OK"));
}

TEST_F(DurableGateTest, FailedWrite_QueuedWorkAndAllLaterWorkGetTheError) {
  auto owner = SpawnOwner(Writer());
  disk_->hold = true;
  Persist(owner, "k1");
  Tell(owner, "queued");
  disk_->fail = absl::InternalError("disk full");
  Release();
  EXPECT_THAT(*log_, ElementsAre("queued:INTERNAL"));
  // No new batch since, but the gate stays failed: nothing is answered as durable any more.
  AskIdle(owner);
  Tell(owner, "later");
  EXPECT_THAT(*log_, ElementsAre("queued:INTERNAL", "waiting", "later:INTERNAL"));
  Persist(owner, "k2");  // the writer fails it as well
  Tell(owner, "after-k2");
  Release();
  EXPECT_THAT(*log_,
              ElementsAre("queued:INTERNAL", "waiting", "later:INTERNAL", "after-k2:INTERNAL"));
}

TEST_F(DurableGateTest, WriterGone_WorkRunsWithAnError) {
  auto owner = SpawnOwner(Writer());
  caf::anon_send_exit(writer_, caf::exit_reason::user_shutdown);
  Drain();
  Persist(owner, "k1");
  Tell(owner, "after");
  ASSERT_EQ(log_->size(), 1u);
  EXPECT_NE(log_->at(0), "after:OK");
  EXPECT_THAT(disk_->batches, IsEmpty());
}

}  // namespace
}  // namespace muster::testing
