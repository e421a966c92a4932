// The coordinator with a state writer (a fake that keeps each batch in a map and answers when
// the test lets it), deterministic: replies wait for their batches to be durable, re-sent
// key-value writes are answered from their stored reply, a restarted leader continues from a
// RecoveredState (keys, tasks awaiting their reconnect, barrier results; ephemeral keys end with
// their recovered owner), watches resume.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "muster/actors/coordinator/coordinator_actor.h"
#include "muster/actors/durability/coordinator_records.h"
#include "muster/actors/durability/durable_gate.h"
#include "muster/actors/durability/state_store.h"
#include "muster/actors/durability/state_writer_actor.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/actors/tasks/task_actor.h"
#include "muster/messages/task_name.h"
#include "tests/actors/durability/fake_state_writer.h"
#include "tests/actors/kv/kv_test_helpers.h"
#include "tests/actors/leader_fixture.h"
#include "tests/testing/status_matchers.h"

namespace muster::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Code = absl::StatusCode;

// An OK StatusOr<std::string> holding `value`.
MATCHER_P(HoldsValue, value, "is OK and holds \"" + std::string(value) + "\"") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status();
    return false;
  }
  *result_listener << "value is \"" << *arg << "\"";
  return *arg == value;
}

proto::RequestId Id(uint64_t client, uint64_t seq) {
  proto::RequestId id;
  id.set_client(client);
  id.set_seq(seq);
  return id;
}

proto::RegisterTaskRequest Reconnect(const std::string& job, int id, uint64_t incarnation) {
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = MakeTask(job, id);
  request.set_incarnation(incarnation);
  request.set_reconnect(true);
  return request;
}

proto::BarrierRequest BarrierCall(const std::string& id, int64_t counter) {
  proto::BarrierRequest request;
  request.set_barrier_id(id);
  request.set_counter(counter);
  request.set_barrier_timeout_in_ms(10'000);
  *request.mutable_source_task() = MakeTask("worker", 0);
  return request;
}

class CoordinatorDurableTest : public LeaderTest {
 protected:
  // Spawns a coordinator over Config(1) with the fake writer of `disk_`, leader incarnation 7.
  // `config` replaces Config(1).
  CoordinatorActor SpawnDurable(std::shared_ptr<const proto::RecoveredState> recovered = nullptr,
                                caf::timespan reconnect_window = std::chrono::seconds(2),
                                std::optional<proto::CoordinationServiceConfig> config = {},
                                std::shared_ptr<SupervisionPolicy> policy = nullptr) {
    fake_ = Keep(system_.spawn(FakeWriter, disk_));
    CoordinatorOptions options{
        .config = config ? *config : Config(1), .incarnation = 7, .policy = std::move(policy)};
    options.state_writer = caf::actor_cast<StateWriterActor>(fake_);
    options.recovered = std::move(recovered);
    options.reconnect_window = reconnect_window;
    leader_ = Keep(SpawnCoordinator(system_, std::move(options)));
    Drain();
    return leader_;
  }

  // A watch of `key` from a watcher of its own (the directory keeps history from then on, as
  // after any agent's first watch).
  void WatchFirst(const std::string& key) {
    KvWatcherActor first =
        Keep(SpawnWatcher(system_, std::make_shared<std::vector<proto::KeyValueChangeEvent>>()));
    ASSERT_THAT(Call<proto::WatchKeyResponse>(leader_, WatchRequest(key), first), IsOk());
  }

  // Lets the fake writer answer every batch it holds, and drains.
  void Release() {
    caf::anon_send(fake_, release_atom::value);
    Drain();
  }

  // The record the fake disk holds under `key`, parsed.
  template <class Record>
  std::optional<Record> OnDisk(const std::string& key) {
    auto it = disk_->data.find(key);
    if (it == disk_->data.end()) return std::nullopt;
    Record record;
    EXPECT_TRUE(record.ParseFromString(it->second)) << key;
    return record;
  }

  // A directory "d" (revision 5, d/x=1), task /job:worker/task:0 CONNECTED with incarnation
  // 100, barrier "b" passed at counter 0, barrier "e" failed at counter 2; leader incarnation 7.
  static std::shared_ptr<proto::RecoveredState> Recovered() {
    auto state = std::make_shared<proto::RecoveredState>();
    state->mutable_leader()->set_format(kStateFormat);
    state->mutable_leader()->set_incarnation(7);
    state->mutable_leader()->set_version(40);
    state->mutable_leader()->add_started_unix_ms(1);
    state->mutable_leader()->set_starts(3);
    proto::TaskRecord* task = state->add_tasks();
    *task->mutable_task() = MakeTask("worker", 0);
    task->set_state(proto::TASKSTATE_CONNECTED);
    task->set_incarnation(100);
    proto::RecoveredKvDirectory* dir = state->add_directories();
    dir->set_directory("d");
    dir->set_revision(5);
    dir->set_watched(true);
    proto::KeyValueEntry* entry = dir->add_entries();
    entry->set_key("d/x");
    entry->set_value("1");
    dir->add_records();
    proto::BarrierRecord* passed = state->add_barriers();
    passed->set_id("b");
    passed->set_counter(0);
    *passed->mutable_result() = StoreStatus(absl::OkStatus());
    proto::BarrierRecord* failed = state->add_barriers();
    failed->set_id("e");
    failed->set_counter(2);
    *failed->mutable_result() = StoreStatus(absl::InternalError("a participant failed"));
    return state;
  }

  // Adds the ephemeral key `key` = "v" of directory "d", owned by incarnation `incarnation` of
  // `owner`, to `state` and to the fake disk (as the leader before the restart left it).
  void AddEphemeral(proto::RecoveredState& state, const std::string& key, const std::string& owner,
                    uint64_t incarnation) {
    proto::RecoveredKvDirectory* dir = state.mutable_directories(0);
    proto::KeyValueEntry* entry = dir->add_entries();
    entry->set_key(key);
    entry->set_value("v");
    proto::KvRecord* record = dir->add_records();
    record->set_owner_task(owner);
    record->set_owner_incarnation(incarnation);
    proto::KvRecord stored = *record;
    stored.set_value("v");
    disk_->data[KvStateKey(key)] = stored.SerializeAsString();
  }

  // An ephemeral insert of `key` = `value` by /job:worker/task:0.
  static proto::InsertKeyValueRequest EphemeralInsert(const std::string& key,
                                                      const std::string& value) {
    proto::InsertKeyValueRequest request = InsertRequest(key, value);
    request.set_ephemeral(true);
    *request.mutable_source_task() = MakeTask("worker", 0);
    return request;
  }

  // The value of `key`, or the error of TryGetKeyValue.
  absl::StatusOr<std::string> Value(const std::string& key) {
    auto reply = Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest(key));
    if (!reply.ok()) return reply.status();
    return reply->kv().value();
  }

  std::shared_ptr<FakeDisk> disk_ = std::make_shared<FakeDisk>();
  FakeWriterActor fake_;
  Reports reports_;
};

// ---- Replies wait for durability ----

TEST_F(CoordinatorDurableTest, Start_RecordsTheLeader) {
  SpawnDurable();
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  EXPECT_EQ(leader->format(), kStateFormat);
  EXPECT_EQ(leader->incarnation(), 7u);
  EXPECT_EQ(leader->started_unix_ms_size(), 1);
  EXPECT_EQ(leader->starts(), 1);
}

TEST_F(CoordinatorDurableTest, Insert_AnsweredOnlyOnceDurable_ParkedGetToo) {
  SpawnDurable();
  auto parked = Send<proto::GetKeyValueResponse>(leader_, GetRequest("d/x"));
  EXPECT_FALSE(parked->has_value());
  disk_->hold = true;
  auto insert = Send<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/x", "1"));
  // The change went to the writer, but nobody learns of it before the writer's answer.
  EXPECT_TRUE(disk_->data.count(KvStateKey("d/x")));
  EXPECT_FALSE(insert->has_value());
  EXPECT_FALSE(parked->has_value());
  auto get = Send<proto::GetKeyValueResponse>(leader_, GetRequest("d/x"));
  auto try_get = Send<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/x"));
  EXPECT_FALSE(get->has_value());
  EXPECT_FALSE(try_get->has_value());
  Release();
  ASSERT_TRUE(insert->has_value());
  EXPECT_THAT(**insert, IsOk());
  ASSERT_TRUE(parked->has_value());
  ASSERT_THAT(**parked, IsOk());
  EXPECT_EQ((*parked)->value().kv().value(), "1");
  ASSERT_TRUE(get->has_value());
  ASSERT_THAT(**get, IsOk());
  EXPECT_EQ((*get)->value().kv().value(), "1");
  ASSERT_TRUE(try_get->has_value());
  ASSERT_THAT(**try_get, IsOk());
  EXPECT_EQ((*try_get)->value().kv().value(), "1");
  // Once idle again, reads are answered at once.
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/x")), IsOk());
}

TEST_F(CoordinatorDurableTest, Insert_RecordsTheKeyOnly_WatchedDirectoryAlsoItsHistory) {
  SpawnDurable();
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("e/x", "1")), IsOk());
  EXPECT_TRUE(OnDisk<proto::KvRecord>(KvStateKey("e/x")).has_value());
  EXPECT_FALSE(OnDisk<proto::KvHistoryRecord>(KvHistoryStateKey("e", 1)).has_value());
  EXPECT_FALSE(OnDisk<proto::KvRevisionRecord>(KvRevisionStateKey("e")).has_value());
  WatchFirst("d");
  auto marker = OnDisk<proto::KvRevisionRecord>(KvRevisionStateKey("d"));
  ASSERT_TRUE(marker.has_value());
  EXPECT_TRUE(marker->watched());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/x", "1")), IsOk());
  auto record = OnDisk<proto::KvRecord>(KvStateKey("d/x"));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->value(), "1");
  EXPECT_TRUE(OnDisk<proto::KvHistoryRecord>(KvHistoryStateKey("d", 1)).has_value());
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, DeleteRequest("d/x", false)), IsOk());
  EXPECT_FALSE(disk_->data.count(KvStateKey("d/x")));
}

// A write the writer failed: its reply carries the error, and no later reply reveals the change
// it lost (the writer fails every later batch too).
TEST_F(CoordinatorDurableTest, FailedWrite_ErrorAndTheChangeIsNeverRevealed) {
  SpawnDurable();
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/old", "0")), IsOk());
  auto parked = Send<proto::GetKeyValueResponse>(leader_, GetRequest("d/x"));  // before the key
  disk_->hold = true;
  auto insert = Send<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/x", "1"));
  auto get = Send<proto::GetKeyValueResponse>(leader_, GetRequest("d/x"));  // after it
  auto try_get = Send<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/x"));
  EXPECT_FALSE(insert->has_value());
  EXPECT_FALSE(get->has_value());
  EXPECT_FALSE(try_get->has_value());
  disk_->fail = absl::InternalError("cannot write state dir /s: disk full");
  Release();
  ASSERT_TRUE(insert->has_value());
  EXPECT_THAT(**insert, StatusIs(Code::kInternal, HasSubstr("disk full")));
  ASSERT_TRUE(get->has_value());
  EXPECT_THAT(**get, StatusIs(Code::kInternal, HasSubstr("disk full")));
  ASSERT_TRUE(try_get->has_value());
  EXPECT_THAT(**try_get, StatusIs(Code::kInternal, HasSubstr("disk full")));
  EXPECT_FALSE(parked->has_value());  // the change is not published
  // Later reads fail the same way rather than answer from memory the disk does not have.
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/x")),
              StatusIs(Code::kInternal, HasSubstr("disk full")));
  EXPECT_THAT(Call<proto::GetKeyValueDirResponse>(leader_, DirRequest("d")),
              StatusIs(Code::kInternal));
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/y", "2")),
              StatusIs(Code::kInternal));
  EXPECT_FALSE(parked->has_value());
}

// A task's failure, reported while its record is not durable yet.
proto::ReportErrorToServiceRequest FailureOf(int task) {
  proto::ReportErrorToServiceRequest report;
  report.set_error_code(static_cast<int>(Code::kDataLoss));
  report.set_error_message("disk on fire");
  *report.mutable_error_origin() = MakeTask("worker", task);
  return report;
}

// A failure told is a change revealed: the others hear of it once the failed task's record is
// durable, and never when its write failed (an HA leader that lost its lease unnoticed, e.g.
// paused, fails its fenced write and must not tell the job that a task it lost sight of died).
TEST_F(CoordinatorDurableTest, TaskFailure_PushedToTheOthersOnlyOnceItsRecordIsDurable) {
  SpawnDurable(nullptr, std::chrono::seconds(2), Config(2));
  Reports r0, r1;
  ASSERT_THAT(Register("worker", 0, 5, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 6, Agent(&r1)), IsOk());
  disk_->hold = true;
  auto reported = Send<proto::ReportErrorToServiceResponse>(leader_, FailureOf(0));
  auto task = OnDisk<proto::TaskRecord>(TaskStateKey("/job:worker/task:0"));
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), proto::TASKSTATE_ERROR);  // sent to the writer, not answered yet
  EXPECT_TRUE(r1->empty());
  Release();
  ASSERT_EQ(r1->size(), 1u);
  EXPECT_EQ((*r1)[0].error_code(), static_cast<int>(Code::kDataLoss));
  EXPECT_EQ(TaskName((*r1)[0].error_payload().source_task()), "/job:worker/task:0");
  ASSERT_TRUE(reported->has_value());
  EXPECT_THAT(**reported, IsOk());
}

// The failure told to the whole cluster is kept with the leader record, in the same durable step
// (batch) as the failed task's ERROR record, which the pushes wait for; with its round, naming
// the failed task.
TEST_F(CoordinatorDurableTest, TaskFailure_TheClusterErrorIsKeptWithTheLeaderRecord) {
  SpawnDurable(nullptr, std::chrono::seconds(2), Config(2));
  Reports r0, r1;
  ASSERT_THAT(Register("worker", 0, 5, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 6, Agent(&r1)), IsOk());
  auto before = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(before.has_value());
  EXPECT_FALSE(before->has_cluster_error());
  const size_t batches_before = disk_->batches.size();
  auto reported = Send<proto::ReportErrorToServiceResponse>(leader_, FailureOf(0));
  Release();
  ASSERT_EQ(r1->size(), 1u);
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  ASSERT_TRUE(leader->has_cluster_error());
  EXPECT_EQ(leader->cluster_error_round(), leader->round());
  absl::Status kept = LoadStatus(leader->cluster_error());
  EXPECT_EQ(kept.code(), Code::kDataLoss);
  EXPECT_EQ(kept.code(), static_cast<Code>((*r1)[0].error_code()));
  auto source = GetCoordinationError(kept);
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(TaskName(source->source_task()), "/job:worker/task:0");
  // The first batch after the report holds both records: the task in ERROR, the leader record
  // with the error.
  ASSERT_GT(disk_->batches.size(), batches_before);
  const StateBatch& failure = disk_->batches[batches_before];
  std::optional<proto::TaskRecord> task;
  std::optional<proto::LeaderRecord> leader_in_batch;
  for (const auto& [key, value] : failure.ops) {
    if (!value) continue;
    if (key == TaskStateKey("/job:worker/task:0")) task.emplace().ParseFromString(*value);
    if (key == LeaderStateKey()) leader_in_batch.emplace().ParseFromString(*value);
  }
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), proto::TASKSTATE_ERROR);
  ASSERT_TRUE(leader_in_batch.has_value());
  EXPECT_TRUE(leader_in_batch->has_cluster_error());
}

// A policy that fails the job and gives no status of its own.
class FailsTheJobWithoutAStatus : public SupervisionPolicy {
 public:
  FailureDecision OnTaskFailure(const proto::CoordinatedTask&, const absl::Status&,
                                absl::Time) override {
    return {.action = FailureAction::kFailJob};
  }
  bool IsRecoverable(const proto::CoordinatedTask&) const override { return false; }
  std::string Describe() const override { return "fails the job without a status"; }
};

// What the cluster is told is an error naming the failed task even when the policy's status is
// OK: a task that registers later is told the failed task's error, not one naming itself.
TEST_F(CoordinatorDurableTest, TaskFailure_APolicyWithoutAStatus_TheTasksOwnErrorIsToldAndKept) {
  SpawnDurable(nullptr, std::chrono::seconds(2), Config(2),
               std::make_shared<FailsTheJobWithoutAStatus>());
  Reports r0, r1;
  ASSERT_THAT(Register("worker", 0, 5, Agent(&r0)), IsOk());
  auto reported = Send<proto::ReportErrorToServiceResponse>(leader_, FailureOf(0));
  Release();
  // The job's tasks are in ERROR now; a task of another job registers and is told.
  ASSERT_THAT(Register("ps", 0, 6, Agent(&r1)), IsOk());
  Release();
  ASSERT_EQ(r1->size(), 1u);
  EXPECT_EQ((*r1)[0].error_code(), static_cast<int>(Code::kDataLoss));
  EXPECT_EQ(TaskName((*r1)[0].error_payload().source_task()), "/job:worker/task:0");
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  absl::Status kept = LoadStatus(leader->cluster_error());
  EXPECT_EQ(kept.code(), Code::kDataLoss);
  EXPECT_THAT(kept.message(), HasSubstr("disk on fire"));
  auto source = GetCoordinationError(kept);
  ASSERT_TRUE(source.has_value());
  EXPECT_EQ(TaskName(source->source_task()), "/job:worker/task:0");
}

// A reported error's message is cut (kMaxReportedErrorBytes) before the task keeps it, and
// more (kMaxKeptErrorBytes) where the leader record keeps it: a report of megabytes is not
// written and pushed whole.
TEST_F(CoordinatorDurableTest, TaskFailure_AHugeMessage_IsCutWhereItIsKeptAndTold) {
  SpawnDurable(nullptr, std::chrono::seconds(2), Config(2));
  Reports r0, r1;
  ASSERT_THAT(Register("worker", 0, 5, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 6, Agent(&r1)), IsOk());
  proto::ReportErrorToServiceRequest huge = FailureOf(0);
  huge.set_error_message(std::string(1 << 20, 'x'));
  auto reported = Send<proto::ReportErrorToServiceResponse>(leader_, huge);
  Release();
  ASSERT_EQ(r1->size(), 1u);
  EXPECT_LT((*r1)[0].error_message().size(), kMaxReportedErrorBytes + 64);
  EXPECT_THAT((*r1)[0].error_message(), HasSubstr("[cut: "));
  auto task = OnDisk<proto::TaskRecord>(TaskStateKey("/job:worker/task:0"));
  ASSERT_TRUE(task.has_value());
  EXPECT_LT(task->error_message().size(), kMaxReportedErrorBytes + 64);
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  EXPECT_LT(leader->cluster_error().message().size(), kMaxKeptErrorBytes + 64);
  EXPECT_THAT(leader->cluster_error().message(), HasSubstr("[cut: "));
}

// A leader that recorded the cluster's failure and stopped before telling everyone: the next
// leader tells each task that reconnects, naming the task that failed.
TEST_F(CoordinatorDurableTest, Restore_ClusterError_ATaskThatReconnectsIsToldIt) {
  auto recovered = Recovered();
  *recovered->mutable_leader()->mutable_cluster_error() = StoreStatus(MakeCoordinationError(
      absl::AbortedError("the job failed: /job:ps/task:0 was lost"), MakeTask("ps", 0)));
  SpawnDurable(recovered);
  auto agent = Agent(&reports_);
  ASSERT_THAT(Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 100), agent),
              IsOk());
  Release();
  ASSERT_EQ(reports_->size(), 1u);
  EXPECT_EQ((*reports_)[0].error_code(), static_cast<int>(Code::kAborted));
  EXPECT_THAT((*reports_)[0].error_message(), HasSubstr("/job:ps/task:0 was lost"));
  EXPECT_EQ(TaskName((*reports_)[0].error_payload().source_task()), "/job:ps/task:0");
  // It stays kept for the tasks still to come.
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  EXPECT_TRUE(leader->has_cluster_error());
}

// A kept error is written again as the coordinator keeps it: bounded, even if an older writer
// stored it whole.
TEST_F(CoordinatorDurableTest, Restore_AnUnboundedKeptError_IsWrittenAgainBounded) {
  auto recovered = Recovered();
  *recovered->mutable_leader()->mutable_cluster_error() = StoreStatus(
      MakeCoordinationError(absl::AbortedError(std::string(64 << 10, 'e')), MakeTask("ps", 0)));
  SpawnDurable(recovered);
  Reports told;
  ASSERT_THAT(Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 100), Agent(&told)),
              IsOk());
  Release();
  ASSERT_EQ(told->size(), 1u);
  EXPECT_LT((*told)[0].error_message().size(), kMaxKeptErrorBytes + 128);
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  ASSERT_TRUE(leader->has_cluster_error());
  EXPECT_LT(leader->cluster_error().message().size(), kMaxKeptErrorBytes + 128);
}

// A kept error of another round than the record's (written through a new round by a leader that
// did not know the field), or one that is no error, is not told, and not written again.
TEST_F(CoordinatorDurableTest, Restore_ClusterErrorOfAnotherRoundOrNoError_NotToldNotKept) {
  for (bool other_round : {true, false}) {
    SCOPED_TRACE(other_round ? "another round" : "no error");
    auto recovered = Recovered();
    recovered->mutable_leader()->set_round(2);
    *recovered->mutable_leader()->mutable_cluster_error() =
        other_round ? StoreStatus(absl::AbortedError("the last round's failure"))
                    : proto::StoredStatus();
    recovered->mutable_leader()->set_cluster_error_round(other_round ? 1 : 2);
    disk_ = std::make_shared<FakeDisk>();
    SpawnDurable(recovered);
    Reports reports;
    ASSERT_THAT(
        Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 100), Agent(&reports)),
        IsOk());
    Release();
    EXPECT_TRUE(reports->empty());
    auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
    ASSERT_TRUE(leader.has_value());
    EXPECT_EQ(leader->round(), 2);
    EXPECT_FALSE(leader->has_cluster_error());
  }
}

// A new round (the policy restarts every task) ends the kept failure, on disk and for the tasks
// that register in it.
TEST_F(CoordinatorDurableTest, NewRound_TheKeptClusterErrorEnds) {
  auto recovered = Recovered();
  *recovered->mutable_leader()->mutable_cluster_error() = StoreStatus(MakeCoordinationError(
      absl::AbortedError("the job failed: /job:ps/task:0 was lost"), MakeTask("ps", 0)));
  SpawnDurable(recovered, std::chrono::seconds(2), std::nullopt, std::make_shared<OneForAll>());
  Reports told;
  ASSERT_THAT(Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 100), Agent(&told)),
              IsOk());
  Release();
  ASSERT_EQ(told->size(), 1u);  // the kept failure, told
  proto::ReportErrorToServiceRequest failure = FailureOf(0);
  auto reported = Send<proto::ReportErrorToServiceResponse>(leader_, failure);
  Release();
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  EXPECT_EQ(leader->round(), 1);
  EXPECT_FALSE(leader->has_cluster_error());
  Reports fresh;
  ASSERT_THAT(Register("worker", 0, 200, Agent(&fresh)), IsOk());
  Release();
  EXPECT_TRUE(fresh->empty());
}

// A beat of a task its job's failure put in ERROR is refused once that is durable, and never
// by a leader whose write failed (an HA leader paused past its lease reads the beats that
// waited: its refusals would tell the job a failure nobody recorded).
TEST_F(CoordinatorDurableTest,
       BeatOfATaskPutInError_RefusedOnlyOnceDurable_NeverAfterAFailedWrite) {
  for (bool write_fails : {false, true}) {
    SCOPED_TRACE(write_fails ? "the write fails" : "the write succeeds");
    disk_ = std::make_shared<FakeDisk>();
    SpawnDurable(nullptr, std::chrono::seconds(2), Config(2));
    Reports r0, r1;
    ASSERT_THAT(Register("worker", 0, 5, Agent(&r0)), IsOk());
    ASSERT_THAT(Register("worker", 1, 6, Agent(&r1)), IsOk());
    disk_->hold = true;
    (void)Send<proto::ReportErrorToServiceResponse>(leader_, FailureOf(1));
    proto::HeartbeatRequest beat;
    *beat.mutable_source_task() = MakeTask("worker", 1);
    beat.set_incarnation(6);
    auto refused = Send<proto::HeartbeatResponse>(leader_, beat);
    // A batch of the process's beats, one refused: its answer waits too.
    proto::HeartbeatBatchRequest batch;
    *batch.add_beats() = beat;
    proto::HeartbeatRequest* fine = batch.add_beats();
    *fine->mutable_source_task() = MakeTask("worker", 0);
    fine->set_incarnation(5);
    auto batched = Send<proto::HeartbeatBatchResponse>(leader_, batch);
    EXPECT_FALSE(refused->has_value());
    EXPECT_FALSE(batched->has_value());
    if (write_fails) {
      disk_->fail = PausesLeader(absl::FailedPreconditionError("no longer the active leader"));
    }
    Release();
    if (write_fails) {
      EXPECT_FALSE(refused->has_value());
      EXPECT_FALSE(batched->has_value());
    } else {
      ASSERT_TRUE(refused->has_value());
      EXPECT_THAT(**refused, StatusIs(Code::kAborted, HasSubstr("already-in-error")));
      ASSERT_TRUE(batched->has_value());
      ASSERT_THAT(**batched, IsOk());
      ASSERT_EQ((*batched)->value().failures_size(), 1);
      EXPECT_EQ((*batched)->value().failures(0).index(), 0);
    }
  }
}

// A stuck task (--stuck-after) hears its report, and the others theirs, once its ERROR is
// durable: the stuck task first, with the same report.
TEST_F(CoordinatorDurableTest, StuckTask_ToldOnceItsErrorIsDurable) {
  proto::CoordinationServiceConfig config = Config(3);
  config.set_heartbeat_timeout_in_ms(2'000);
  config.set_stuck_after_ms(2'000);
  SpawnDurable(nullptr, std::chrono::seconds(2), config);
  std::vector<Reports> reports(3);
  for (int id = 0; id < 3; ++id) {
    ASSERT_THAT(Register("worker", id, 10 + id, Agent(&reports[id])), IsOk());
  }
  auto beat = [&](int id, int64_t step) {
    proto::HeartbeatRequest request;
    *request.mutable_source_task() = MakeTask("worker", id);
    request.set_incarnation(10 + id);
    request.set_step(step);
    return Call<proto::HeartbeatResponse>(leader_, request);
  };
  for (int id = 0; id < 3; ++id) ASSERT_THAT(beat(id, 5), IsOk());
  // Workers 0 and 1 advance every 450 ms; worker 2 stays at step 5 (as in HealthTest).
  for (int64_t step = 6; step <= 12; ++step) {
    AdvanceTime(450ms);
    ASSERT_THAT(beat(0, step), IsOk());
    ASSERT_THAT(beat(1, step), IsOk());
    ASSERT_THAT(beat(2, 5), IsOk());
  }
  disk_->hold = true;
  AdvanceTime(450ms);  // 3.6 s: found stuck at 3.5 s
  auto task = OnDisk<proto::TaskRecord>(TaskStateKey("/job:worker/task:2"));
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), proto::TASKSTATE_ERROR);  // sent to the writer, not answered yet
  EXPECT_TRUE(reports[2]->empty());
  EXPECT_TRUE(reports[0]->empty());
  Release();
  ASSERT_EQ(reports[2]->size(), 1u);
  EXPECT_EQ((*reports[2])[0].error_payload().stuck().step(), 5);
  ASSERT_EQ(reports[0]->size(), 1u);
  EXPECT_TRUE((*reports[0])[0].error_payload().has_stuck());
}

// A reconnect refused because the task is in ERROR is answered once that is durable, and never
// by a leader whose write failed and pauses it (the agent registers with the next leader).
TEST_F(CoordinatorDurableTest, ReconnectOfATaskInError_RefusedOnlyOnceDurable) {
  for (bool write_fails : {false, true}) {
    SCOPED_TRACE(write_fails ? "the write fails" : "the write succeeds");
    disk_ = std::make_shared<FakeDisk>();
    SpawnDurable(nullptr, std::chrono::seconds(2), Config(2));
    Reports r0;
    AgentActor agent = Agent(&r0);
    ASSERT_THAT(Register("worker", 0, 5, agent), IsOk());
    disk_->hold = true;
    (void)Send<proto::ReportErrorToServiceResponse>(leader_, FailureOf(0));
    auto refused = Send<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 5), agent);
    EXPECT_FALSE(refused->has_value());
    if (write_fails) {
      disk_->fail = PausesLeader(absl::FailedPreconditionError("no longer the active leader"));
    }
    Release();
    if (write_fails) {
      EXPECT_FALSE(refused->has_value());
    } else {
      ASSERT_TRUE(refused->has_value());
      EXPECT_THAT(**refused, StatusIs(Code::kFailedPrecondition, HasSubstr("TASKSTATE_ERROR")));
    }
  }
}

TEST_F(CoordinatorDurableTest, TaskFailure_RecordNotWritten_NobodyIsTold) {
  SpawnDurable(nullptr, std::chrono::seconds(2), Config(3));
  Reports r0, r1, r2;
  ASSERT_THAT(Register("worker", 0, 5, Agent(&r0)), IsOk());
  ASSERT_THAT(Register("worker", 1, 6, Agent(&r1)), IsOk());
  ASSERT_THAT(Register("worker", 2, 7, Agent(&r2)), IsOk());
  disk_->hold = true;
  (void)Send<proto::ReportErrorToServiceResponse>(leader_, FailureOf(0));
  disk_->fail = absl::FailedPreconditionError("this leader's election key is gone (fenced)");
  Release();
  EXPECT_TRUE(r1->empty());
  EXPECT_TRUE(r2->empty());
}

// A failed write marked as pausing the leader (an HA leader's: it steps down) leaves the calls
// waiting on it unanswered, and the later ones too: their agents re-send them to the next
// leader, which has what was written.
TEST_F(CoordinatorDurableTest, FailedWriteThatPausesTheLeader_CallsLeftForTheNextLeader) {
  SpawnDurable();
  disk_->hold = true;
  auto insert = Send<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/x", "1"));
  auto get = Send<proto::GetKeyValueResponse>(leader_, GetRequest("d/x"));
  disk_->fail = PausesLeader(absl::FailedPreconditionError("no longer the active leader"));
  Release();
  EXPECT_FALSE(insert->has_value());
  EXPECT_FALSE(get->has_value());
  auto try_get = Send<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/x"));
  auto later = Send<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/y", "2"));
  EXPECT_FALSE(try_get->has_value());
  EXPECT_FALSE(later->has_value());
}

// ---- Re-sent writes ----

TEST_F(CoordinatorDurableTest, Increment_SameRequestIdTwice_AppliedOnce) {
  SpawnDurable();
  proto::IncrementKeyValueRequest increment = IncrementRequest("d/n", 1);
  *increment.mutable_request_id() = Id(5, 1);
  auto first = Call<proto::IncrementKeyValueResponse>(leader_, increment);
  ASSERT_THAT(first, IsOk());
  EXPECT_EQ(first->kv().value(), "1");
  auto again = Call<proto::IncrementKeyValueResponse>(leader_, increment);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->kv().value(), "1");
  auto stored = Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/n"));
  ASSERT_THAT(stored, IsOk());
  EXPECT_EQ(stored->kv().value(), "1");
  EXPECT_TRUE(disk_->data.count(KvReplyStateKey("d", 5, 1)));
  *increment.mutable_request_id() = Id(5, 2);
  auto next = Call<proto::IncrementKeyValueResponse>(leader_, increment);
  ASSERT_THAT(next, IsOk());
  EXPECT_EQ(next->kv().value(), "2");
  // Another client's seq 1 is a request of its own.
  *increment.mutable_request_id() = Id(6, 1);
  auto other = Call<proto::IncrementKeyValueResponse>(leader_, increment);
  ASSERT_THAT(other, IsOk());
  EXPECT_EQ(other->kv().value(), "3");
}

TEST_F(CoordinatorDurableTest, ResentInsert_AnsweredFromItsReplyNotAppliedAgain) {
  SpawnDurable();
  proto::InsertKeyValueRequest insert = InsertRequest("d/y", "1");
  *insert.mutable_request_id() = Id(5, 3);
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, insert), IsOk());
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, DeleteRequest("d/y", false)), IsOk());
  // The re-sent insert gets its first reply and the key stays deleted.
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, insert), IsOk());
  EXPECT_THAT(Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/y")),
              StatusIs(Code::kNotFound));
  // An error reply is replayed too: the second insert (new id) fails, and so does its re-send
  // even after the key is gone.
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/z", "1")), IsOk());
  proto::InsertKeyValueRequest clash = InsertRequest("d/z", "2");
  *clash.mutable_request_id() = Id(5, 4);
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, clash), StatusIs(Code::kAlreadyExists));
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, DeleteRequest("d/z", false)), IsOk());
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, clash), StatusIs(Code::kAlreadyExists));
}

// An agent re-sends its pending writes in order after a reconnect: one that changed nothing is
// answered from its reply too, never evaluated again, or it could undo a later one (a delete of
// a missing key, re-sent after the insert that followed it, would erase the inserted key).
TEST_F(CoordinatorDurableTest, ResentWriteThatChangedNothing_DoesNotUndoALaterOne) {
  SpawnDurable();
  proto::DeleteKeyValueRequest remove = DeleteRequest("d/k", false);
  *remove.mutable_request_id() = Id(5, 1);
  proto::InsertKeyValueRequest insert = InsertRequest("d/k", "v");
  *insert.mutable_request_id() = Id(5, 2);
  ASSERT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, remove), IsOk());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, insert), IsOk());
  EXPECT_THAT(Call<proto::DeleteKeyValueResponse>(leader_, remove), IsOk());
  EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, insert), IsOk());
  auto now = Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/k"));
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ(now->kv().value(), "v");
}

// A compare-and-swap's kept reply is small: one that was refused leaves out a large value of
// the key (a re-send is still refused, and told the key's value then), one that succeeded the
// value it set (a re-send is told it from the request). A loop of refused ones against a large
// value, as a rendezvous makes, does not keep that value once per call.
TEST_F(CoordinatorDurableTest, ResentCompareAndSwap_AnsweredFromASmallReply) {
  SpawnDurable();
  const std::string large(64 * 1024, 'x');
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/state", large)),
              IsOk());
  proto::CompareAndSwapRequest refused = CasRequest("d/state", "stale", "mine");
  *refused.mutable_request_id() = Id(5, 1);
  auto answer = Call<proto::CompareAndSwapResponse>(leader_, refused);
  ASSERT_THAT(answer, IsOk());
  EXPECT_FALSE(answer->succeeded());
  EXPECT_EQ(answer->current(), large);
  auto kept = OnDisk<proto::StoredReply>(KvReplyStateKey("d", 5, 1));
  ASSERT_TRUE(kept.has_value());
  EXPECT_LT(kept->ByteSizeLong(), 64u);

  const std::string desired = large + "y";
  proto::CompareAndSwapRequest swap = CasRequest("d/state", large, desired);
  *swap.mutable_request_id() = Id(5, 2);
  auto first = Call<proto::CompareAndSwapResponse>(leader_, swap);
  ASSERT_THAT(first, IsOk());
  EXPECT_TRUE(first->succeeded());
  EXPECT_EQ(first->current(), desired);
  kept = OnDisk<proto::StoredReply>(KvReplyStateKey("d", 5, 2));
  ASSERT_TRUE(kept.has_value());
  EXPECT_LT(kept->ByteSizeLong(), 64u);

  // The key now holds what the refused one expected: its re-send is still refused (answered
  // from its reply, with the key's value now), and the applied one's is not applied again.
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/state", "stale", true)),
              IsOk());
  auto refused_again = Call<proto::CompareAndSwapResponse>(leader_, refused);
  ASSERT_THAT(refused_again, IsOk());
  EXPECT_FALSE(refused_again->succeeded());
  EXPECT_TRUE(refused_again->exists());
  EXPECT_EQ(refused_again->current(), "stale");
  auto again = Call<proto::CompareAndSwapResponse>(leader_, swap);
  ASSERT_THAT(again, IsOk());
  EXPECT_TRUE(again->succeeded());
  EXPECT_TRUE(again->exists());
  EXPECT_EQ(again->current(), desired);
  auto now = Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/state"));
  ASSERT_THAT(now, IsOk());
  EXPECT_EQ(now->kv().value(), "stale");
  // A small value stays in the reply, and so does an empty one (nothing was left out): a re-send
  // after the key changed is told the value the key held then.
  auto refused_then_changed = [&](const std::string& key, uint64_t seq) {
    proto::CompareAndSwapRequest refused = CasRequest(key, "other", "mine");
    *refused.mutable_request_id() = Id(5, seq);
    EXPECT_THAT(Call<proto::CompareAndSwapResponse>(leader_, refused), IsOk());
    EXPECT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest(key, "changed", true)),
                IsOk());
    return Call<proto::CompareAndSwapResponse>(leader_, refused);
  };
  auto small_again = refused_then_changed("d/state", 3);
  ASSERT_THAT(small_again, IsOk());
  EXPECT_FALSE(small_again->succeeded());
  EXPECT_EQ(small_again->current(), "stale");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/empty", "")), IsOk());
  auto empty_again = refused_then_changed("d/empty", 4);
  ASSERT_THAT(empty_again, IsOk());
  EXPECT_FALSE(empty_again->succeeded());
  EXPECT_TRUE(empty_again->exists());
  EXPECT_EQ(empty_again->current(), "");
}

TEST_F(CoordinatorDurableTest, ResentWriteWhileFirstNotDurable_AnsweredOnceDurable) {
  SpawnDurable();
  disk_->hold = true;
  proto::IncrementKeyValueRequest increment = IncrementRequest("d/n", 1);
  *increment.mutable_request_id() = Id(5, 1);
  auto first = Send<proto::IncrementKeyValueResponse>(leader_, increment);
  auto again = Send<proto::IncrementKeyValueResponse>(leader_, increment);
  EXPECT_FALSE(first->has_value());
  EXPECT_FALSE(again->has_value());
  Release();
  ASSERT_TRUE(first->has_value());
  ASSERT_TRUE(again->has_value());
  ASSERT_THAT(**again, IsOk());
  EXPECT_EQ((*again)->value().kv().value(), "1");
}

// A leader without a state dir keeps the replies too, in memory: a write re-sent after a lost
// connection (a direct call's, or the agent's connection with a reconnect timeout) may reach the
// very leader that applied it.
TEST_F(CoordinatorDurableTest, WithoutWriter_SameRequestIdTwice_AppliedOnce) {
  Spawn(Config(1));
  proto::IncrementKeyValueRequest increment = IncrementRequest("d/n", 1);
  *increment.mutable_request_id() = Id(5, 1);
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(leader_, increment), IsOk());
  auto again = Call<proto::IncrementKeyValueResponse>(leader_, increment);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ(again->kv().value(), "1");
  auto stored = Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/n"));
  ASSERT_THAT(stored, IsOk());
  EXPECT_EQ(stored->kv().value(), "1");
  // A write without an id is applied every time.
  increment.clear_request_id();
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(leader_, increment), IsOk());
  auto plain = Call<proto::IncrementKeyValueResponse>(leader_, increment);
  ASSERT_THAT(plain, IsOk());
  EXPECT_EQ(plain->kv().value(), "3");
}

// A write's reply record and its changes must reach the disk together: were the reply durable
// without the change, a re-send after a crash would be told "done" for a write that is lost.
TEST_F(CoordinatorDurableTest, ReplyRecordAndChangeInOneBatch) {
  SpawnDurable();
  proto::IncrementKeyValueRequest increment = IncrementRequest("d/n", 1);
  *increment.mutable_request_id() = Id(5, 1);
  ASSERT_THAT(Call<proto::IncrementKeyValueResponse>(leader_, increment), IsOk());
  const std::string reply_key = KvReplyStateKey("d", 5, 1);
  const StateBatch* with_reply = nullptr;
  for (const StateBatch& batch : disk_->batches) {
    for (const auto& op : batch.ops) {
      if (op.first == reply_key) with_reply = &batch;
    }
  }
  ASSERT_NE(with_reply, nullptr);
  std::vector<std::string> keys;
  for (const auto& op : with_reply->ops) keys.push_back(op.first);
  EXPECT_THAT(keys, ::testing::Contains(KvStateKey("d/n")));
}

// ---- A restarted leader ----

TEST_F(CoordinatorDurableTest, Restore_KeysTasksAndBarrierResultsContinue) {
  SpawnDurable(Recovered());
  auto kv = Call<proto::TryGetKeyValueResponse>(leader_, TryGetRequest("d/x"));
  ASSERT_THAT(kv, IsOk());
  EXPECT_EQ(kv->kv().value(), "1");
  proto::CoordinatedTaskStateInfo info = State("worker", 0);
  EXPECT_EQ(info.state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(info.incarnation(), 100u);
  EXPECT_EQ(State("ps", 0).state(), proto::TASKSTATE_DISCONNECTED);
  // The passed barrier answers its stored result at once, the failed one its error.
  auto passed = Call<proto::BarrierResponse>(leader_, BarrierCall("b", 0));
  ASSERT_THAT(passed, IsOk());
  EXPECT_EQ(passed->counter(), 0);
  EXPECT_THAT(Call<proto::BarrierResponse>(leader_, BarrierCall("e", 2)),
              StatusIs(Code::kInternal, HasSubstr("a participant failed")));
  // The leader record keeps the incarnation and adds this start.
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  EXPECT_EQ(leader->incarnation(), 7u);
  EXPECT_EQ(leader->version(), 40);
  EXPECT_EQ(leader->started_unix_ms_size(), 2);
  EXPECT_EQ(leader->started_unix_ms(0), 1);
  EXPECT_EQ(leader->starts(), 4);
}

TEST_F(CoordinatorDurableTest, Restore_KeysContinueTheRecoveredRevision) {
  SpawnDurable(Recovered());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/y", "2")), IsOk());
  auto change = OnDisk<proto::KvHistoryRecord>(KvHistoryStateKey("d", 6));
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->event().key(), "d/y");
  auto listing = Call<proto::GetKeyValueDirResponse>(leader_, DirRequest("d"));
  ASSERT_THAT(listing, IsOk());
  EXPECT_THAT(Keys(*listing), ElementsAre("d/x", "d/y"));
}

TEST_F(CoordinatorDurableTest, Restore_SameIncarnationReconnects) {
  SpawnDurable(Recovered());
  auto agent = Agent(&reports_);
  auto reply = Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 100), agent);
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->leader_incarnation(), 7u);
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  auto task = OnDisk<proto::TaskRecord>(TaskStateKey("/job:worker/task:0"));
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(task->incarnation(), 100u);
  auto leader = OnDisk<proto::LeaderRecord>(LeaderStateKey());
  ASSERT_TRUE(leader.has_value());
  EXPECT_GT(leader->version(), 40);  // the job-state version continues
  // The window passes without harm: the task came back.
  AdvanceTime(std::chrono::seconds(3));
  proto::CoordinatedTaskStateInfo info = State("worker", 0);
  EXPECT_EQ(info.state(), proto::TASKSTATE_CONNECTED);
  EXPECT_EQ(info.incarnation(), 100u);
  // Another incarnation cannot "reconnect".
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 101), agent),
              StatusIs(Code::kFailedPrecondition, HasSubstr("incarnation 101")));
}

TEST_F(CoordinatorDurableTest, Restore_OtherIncarnation_FailedPrecondition) {
  SpawnDurable(Recovered());
  auto agent = Agent(&reports_);
  EXPECT_THAT(
      Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 101), agent),
      StatusIs(Code::kFailedPrecondition, AllOf(HasSubstr("cannot reconnect with incarnation 101"),
                                                HasSubstr("CONNECTED with incarnation 100"))));
  // A task the leader knows DISCONNECTED cannot reconnect either.
  EXPECT_THAT(Call<proto::RegisterTaskResponse>(leader_, Reconnect("ps", 0, 100), agent),
              StatusIs(Code::kFailedPrecondition, HasSubstr("DISCONNECTED")));
}

TEST_F(CoordinatorDurableTest, Restore_NoReconnectWithinTheWindow_TaskFailsUnavailable) {
  SpawnDurable(Recovered(), std::chrono::seconds(2));
  AdvanceTime(std::chrono::milliseconds(1999));
  EXPECT_EQ(State("worker", 0).state(), proto::TASKSTATE_CONNECTED);
  AdvanceTime(std::chrono::milliseconds(1));
  proto::CoordinatedTaskStateInfo info = State("worker", 0);
  EXPECT_EQ(info.state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(info.error_code(), static_cast<int>(Code::kUnavailable));
  EXPECT_THAT(info.error_message(), AllOf(HasSubstr("reconnect window"), HasSubstr("2000 ms")));
  auto task = OnDisk<proto::TaskRecord>(TaskStateKey("/job:worker/task:0"));
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), proto::TASKSTATE_ERROR);
  EXPECT_EQ(task->error_code(), static_cast<int>(Code::kUnavailable));
}

// ---- Ephemeral keys across a restart ----

TEST_F(CoordinatorDurableTest, Restore_EphemeralKeyOfATaskThatDoesNotReconnect_GoneWhenWindowEnds) {
  auto state = Recovered();
  AddEphemeral(*state, "d/e", "/job:worker/task:0", 100);
  SpawnDurable(state, std::chrono::seconds(2));
  AdvanceTime(std::chrono::milliseconds(1999));
  EXPECT_THAT(Value("d/e"), HoldsValue("v"));  // the incarnation may still come back
  AdvanceTime(std::chrono::milliseconds(1));
  ASSERT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(Value("d/e"), StatusIs(Code::kNotFound));
  EXPECT_FALSE(disk_->data.count(KvStateKey("d/e")));  // the deletion is recorded
  EXPECT_THAT(Value("d/x"), HoldsValue("1"));          // a persistent key stays
}

TEST_F(CoordinatorDurableTest, Restore_EphemeralKeyOwnerReconnectsThenDies_KeyGone) {
  auto state = Recovered();
  AddEphemeral(*state, "d/e", "/job:worker/task:0", 100);
  SpawnDurable(state, std::chrono::seconds(2));
  EXPECT_EQ(State("worker", 0).connected_age_ms(), -1);  // not back yet
  auto agent = Agent(&reports_);
  ASSERT_THAT(Call<proto::RegisterTaskResponse>(leader_, Reconnect("worker", 0, 100), agent),
              IsOk());
  EXPECT_EQ(State("worker", 0).connected_age_ms(), 0);  // connected since it came back
  AdvanceTime(std::chrono::seconds(3));                 // the window passes: the task is back
  EXPECT_THAT(Value("d/e"), HoldsValue("v"));
  // The reconnected incarnation dies: no heartbeat for the heartbeat timeout (10 s).
  AdvanceTime(std::chrono::seconds(10));
  ASSERT_EQ(State("worker", 0).state(), proto::TASKSTATE_ERROR);
  EXPECT_THAT(Value("d/e"), StatusIs(Code::kNotFound));
  EXPECT_FALSE(disk_->data.count(KvStateKey("d/e")));
  EXPECT_THAT(Value("d/x"), HoldsValue("1"));
}

TEST_F(CoordinatorDurableTest, Restore_EphemeralKeyOwnerReplacedByANewIncarnation_KeyGone) {
  proto::CoordinationServiceConfig config = Config(1);
  config.add_recoverable_jobs("worker");
  auto state = Recovered();
  AddEphemeral(*state, "d/e", "/job:worker/task:0", 100);
  SpawnDurable(state, std::chrono::seconds(2), config);
  // The restarted process registers with a new incarnation within the window.
  ASSERT_THAT(Register("worker", 0, 200, Agent(&reports_)), IsOk());
  EXPECT_THAT(Value("d/e"), StatusIs(Code::kNotFound));
  // Its own ephemeral insert of the key succeeds, and it owns the key now.
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, EphemeralInsert("d/e", "200")), IsOk());
  auto record = OnDisk<proto::KvRecord>(KvStateKey("d/e"));
  ASSERT_TRUE(record.has_value());
  EXPECT_EQ(record->owner_incarnation(), 200u);
  ASSERT_THAT((TaskCall<proto::ShutdownTaskResponse, proto::ShutdownTaskRequest>("worker", 0)),
              IsOk());
  EXPECT_THAT(Value("d/e"), StatusIs(Code::kNotFound));
}

// Keys of an owner that is not live at the restart (an incarnation that ended before the leader
// stopped, a task that is not connected, a task no longer configured) are deleted at start.
TEST_F(CoordinatorDurableTest, Restore_EphemeralKeysOfOwnersNotLive_DeletedAtStart) {
  auto state = Recovered();
  AddEphemeral(*state, "d/old", "/job:worker/task:0", 99);
  AddEphemeral(*state, "d/ps", "/job:ps/task:0", 5);
  AddEphemeral(*state, "d/gone", "/job:gone/task:0", 6);
  AddEphemeral(*state, "d/live", "/job:worker/task:0", 100);
  SpawnDurable(state, std::chrono::seconds(2));
  EXPECT_THAT(Value("d/old"), StatusIs(Code::kNotFound));
  EXPECT_THAT(Value("d/ps"), StatusIs(Code::kNotFound));
  EXPECT_THAT(Value("d/gone"), StatusIs(Code::kNotFound));
  EXPECT_FALSE(disk_->data.count(KvStateKey("d/old")));
  EXPECT_FALSE(disk_->data.count(KvStateKey("d/ps")));
  EXPECT_FALSE(disk_->data.count(KvStateKey("d/gone")));
  EXPECT_THAT(Value("d/live"), HoldsValue("v"));
  EXPECT_THAT(Value("d/x"), HoldsValue("1"));
}

// ---- Resumed watches ----

TEST_F(CoordinatorDurableTest, WatchResume_ReplaysExactlyTheChangesAfterTheRevision) {
  SpawnDurable();
  WatchFirst("d");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/a", "1")), IsOk());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/b", "2")), IsOk());
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("e/c", "3")), IsOk());
  EventLog log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  KvWatcherActor watcher = Keep(SpawnWatcher(system_, log));
  proto::WatchKeyRequest watch = WatchRequest("d");
  watch.set_from_revision(1);
  auto reply = Call<proto::WatchKeyResponse>(leader_, watch, watcher);
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->revision(), 2);
  ASSERT_EQ(log->size(), 1u);
  EXPECT_EQ(log->at(0).key(), "d/b");
  EXPECT_EQ(log->at(0).value(), "2");
  EXPECT_EQ(log->at(0).revision(), 2);
  EXPECT_EQ(log->at(0).kind(), proto::KeyValueChangeEvent::INSERTED);
  EXPECT_EQ(log->at(0).watched_key(), "d");
  // Later changes follow as usual.
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/c", "4")), IsOk());
  ASSERT_EQ(log->size(), 2u);
  EXPECT_EQ(log->at(1).revision(), 3);
}

TEST_F(CoordinatorDurableTest, WatchResume_OfAKeyReplaysOnlyThatKey) {
  SpawnDurable();
  WatchFirst("d");
  for (const char* key : {"d/a", "d/ab", "d/a/x", "d/b"}) {
    ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest(key, "v")), IsOk());
  }
  EventLog log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  KvWatcherActor watcher = Keep(SpawnWatcher(system_, log));
  proto::WatchKeyRequest watch = WatchRequest("d/a");
  watch.set_from_revision(1);
  ASSERT_THAT(Call<proto::WatchKeyResponse>(leader_, watch, watcher), IsOk());
  std::vector<std::string> keys;
  for (const auto& event : *log) keys.push_back(absl::StrCat(event.key(), "@", event.revision()));
  EXPECT_THAT(keys, ElementsAre("d/a/x@3"));
}

TEST_F(CoordinatorDurableTest, WatchResume_AheadOrWithoutHistory_OutOfRange) {
  SpawnDurable();
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/a", "1")), IsOk());
  EventLog log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  KvWatcherActor watcher = Keep(SpawnWatcher(system_, log));
  proto::WatchKeyRequest watch = WatchRequest("d");
  watch.set_from_revision(2);
  EXPECT_THAT(Call<proto::WatchKeyResponse>(leader_, watch, watcher),
              StatusIs(Code::kOutOfRange, HasSubstr("ahead")));
  EXPECT_TRUE(log->empty());
}

TEST_F(CoordinatorDurableTest, WatchResume_AfterRestoreBehindTheHistory_OutOfRange) {
  // Recovered() has revision 5 and no history: a resume from 3 cannot be served.
  SpawnDurable(Recovered());
  EventLog log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  KvWatcherActor watcher = Keep(SpawnWatcher(system_, log));
  proto::WatchKeyRequest watch = WatchRequest("d");
  watch.set_from_revision(3);
  EXPECT_THAT(Call<proto::WatchKeyResponse>(leader_, watch, watcher),
              StatusIs(Code::kOutOfRange, HasSubstr("oldest kept")));
  // From the current revision nothing is missed.
  watch.set_from_revision(5);
  auto reply = Call<proto::WatchKeyResponse>(leader_, watch, watcher);
  ASSERT_THAT(reply, IsOk());
  EXPECT_EQ(reply->revision(), 5);
  EXPECT_TRUE(log->empty());
}

TEST_F(CoordinatorDurableTest, WatchResume_WithoutStateDir_OutOfRange) {
  Spawn(Config(1));
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/a", "1")), IsOk());
  EventLog log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  KvWatcherActor watcher = Keep(SpawnWatcher(system_, log));
  proto::WatchKeyRequest watch = WatchRequest("d");
  watch.set_from_revision(1);
  EXPECT_THAT(Call<proto::WatchKeyResponse>(leader_, watch, watcher),
              StatusIs(Code::kOutOfRange, HasSubstr("no change history")));
}

// A watch resumed while a change is still being written: the watcher must see it once, and
// only once it is durable.
TEST_F(CoordinatorDurableTest, WatchResumeWhileAChangeIsPending_SeesItOnceWhenDurable) {
  SpawnDurable();
  WatchFirst("d");
  ASSERT_THAT(Call<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/a", "1")), IsOk());
  disk_->hold = true;
  auto pending = Send<proto::InsertKeyValueResponse>(leader_, InsertRequest("d/b", "2"));
  EXPECT_FALSE(pending->has_value());
  EventLog log = std::make_shared<std::vector<proto::KeyValueChangeEvent>>();
  KvWatcherActor watcher = Keep(SpawnWatcher(system_, log));
  proto::WatchKeyRequest watch = WatchRequest("d");
  watch.set_from_revision(1);
  auto reply = Send<proto::WatchKeyResponse>(leader_, watch, watcher);
  EXPECT_TRUE(log->empty()) << "a change was revealed before it was durable";
  Release();
  ASSERT_TRUE(reply->has_value());
  ASSERT_THAT(**reply, IsOk());
  std::vector<int64_t> revisions;
  for (const auto& event : *log) revisions.push_back(event.revision());
  EXPECT_THAT(revisions, ElementsAre(2));
}

}  // namespace
}  // namespace muster::testing
