// PeerIdentities: which requests act as a task or a launcher (RoleOf), and who may send them
// when the job binds tasks to certificates: a task's own certificate only, a launcher's from a
// node certificate only, the rest from anyone; nodes of no or of conflicting certificates, and
// connections counted until the last one goes.
#include "muster/net/leader/auth/peer_identities.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/make_message.hpp>
#include <caf/message.hpp>

#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "tests/testing/status_matchers.h"

namespace muster {
namespace {

using ::muster::testing::IsOk;
using ::muster::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using Code = absl::StatusCode;
using Kind = CertificateIdentity::Kind;

caf::node_id Node(uint32_t pid) {
  caf::node_id::default_data::host_id_type host{};
  host.fill(7);
  return caf::make_node_id(pid, host);
}

template <class Request>
caf::message Message(const Request& request) {
  return caf::make_message(request);
}

proto::RegisterTaskRequest Register(int task) {
  proto::RegisterTaskRequest request;
  *request.mutable_source_task() = MakeTask("worker", task);
  request.set_incarnation(42);
  return request;
}

absl::Status MaySend(const PeerIdentities& identities, uint32_t pid, const caf::message& m) {
  return identities.MaySend(Node(pid), "pid " + std::to_string(pid), m.content());
}

const CertificateIdentity kTask0{Kind::kTask, "/job:worker/task:0"};
const CertificateIdentity kTask1{Kind::kTask, "/job:worker/task:1"};
const CertificateIdentity kCli{Kind::kCli, "cli"};
const CertificateIdentity kHost{Kind::kNode, "host0"};

TEST(PeerIdentitiesTest, RoleOf_NamesTheTasksARequestActsAs) {
  EXPECT_EQ(RoleOf(Message(Register(3)).content()).tasks.size(), 1u);
  EXPECT_EQ(TaskName(RoleOf(Message(Register(3)).content()).tasks[0]), "/job:worker/task:3");
  proto::HeartbeatBatchRequest batch;
  for (int task : {1, 2}) *batch.add_beats()->mutable_source_task() = MakeTask("worker", task);
  EXPECT_EQ(RoleOf(Message(batch).content()).tasks.size(), 2u);
  proto::ReportErrorToServiceRequest report;
  *report.mutable_error_origin() = MakeTask("worker", 1);
  EXPECT_EQ(RoleOf(Message(report).content()).tasks.size(), 1u);
  // A key is a task's own only when the request says so.
  proto::InsertKeyValueRequest insert;
  insert.mutable_kv()->set_key("k");
  EXPECT_TRUE(RoleOf(Message(insert).content()).tasks.empty());
  *insert.mutable_source_task() = MakeTask("worker", 0);
  EXPECT_EQ(RoleOf(Message(insert).content()).tasks.size(), 1u);
  EXPECT_TRUE(RoleOf(Message(proto::TaskExitedRequest()).content()).launcher);
  EXPECT_TRUE(RoleOf(Message(proto::RegisterLauncherRequest()).content()).launcher);
  RequestRole status = RoleOf(Message(proto::GetTaskStateRequest()).content());
  EXPECT_TRUE(status.tasks.empty());
  EXPECT_FALSE(status.launcher);
  EXPECT_TRUE(RoleOf(caf::message()).tasks.empty());
}

// Every request that names a task it acts as (interfaces.h), each with task 1 set.
std::vector<caf::message> EveryTaskAct() {
  const proto::CoordinatedTask t = MakeTask("worker", 1);
  std::vector<caf::message> acts;
  {
    proto::RegisterTaskRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::HeartbeatRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::HeartbeatBatchRequest r;
    *r.add_beats()->mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::WaitForAllTasksRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::ShutdownTaskRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::ReportErrorToServiceRequest r;
    *r.mutable_error_origin() = t;
    acts.push_back(Message(r));
  }
  {
    proto::GetAliveTasksRequest r;
    *r.mutable_requesting_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::BarrierRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::BarrierGroupRequest r;
    *r.add_sources() = t;
    acts.push_back(Message(r));
  }
  {
    proto::CancelBarrierRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::NotifyPreemptionRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::InsertKeyValueRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::UpdateKeyValueRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  {
    proto::CompareAndSwapRequest r;
    *r.mutable_source_task() = t;
    acts.push_back(Message(r));
  }
  return acts;
}

TEST(PeerIdentitiesTest, RoleOf_EveryTaskActIsBoundToItsTask) {
  PeerIdentities identities;
  identities.Connected(Node(1), kTask0);
  identities.Connected(Node(2), kTask1);
  const std::vector<caf::message> acts = EveryTaskAct();
  ASSERT_EQ(acts.size(), 14u);
  for (size_t i = 0; i < acts.size(); ++i) {
    RequestRole role = RoleOf(acts[i].content());
    ASSERT_EQ(role.tasks.size(), 1u) << i;
    EXPECT_EQ(TaskName(role.tasks[0]), "/job:worker/task:1") << i;
    EXPECT_THAT(MaySend(identities, 2, acts[i]), IsOk()) << i;
    EXPECT_THAT(MaySend(identities, 1, acts[i]), StatusIs(Code::kPermissionDenied)) << i;
  }
  // A request that names no task is the coordinator's to refuse (InvalidArgument), not a
  // refusal on behalf of a task it does not name.
  EXPECT_TRUE(RoleOf(Message(proto::RegisterTaskRequest()).content()).tasks.empty());
  EXPECT_TRUE(RoleOf(Message(proto::BarrierRequest()).content()).tasks.empty());
}

TEST(PeerIdentitiesTest, ACertificateThatNamesNobody_ActsAsNobody) {
  PeerIdentities identities;
  identities.Connected(Node(5), {Kind::kUnknown, ""});
  EXPECT_THAT(MaySend(identities, 5, Message(Register(0))),
              StatusIs(Code::kPermissionDenied, HasSubstr("names nobody")));
  EXPECT_THAT(MaySend(identities, 5, Message(proto::TaskExitedRequest())),
              StatusIs(Code::kPermissionDenied));
  EXPECT_THAT(MaySend(identities, 5, Message(proto::GetTaskStateRequest())), IsOk());
}

TEST(PeerIdentitiesTest, ATaskActsOnlyWithItsOwnCertificate) {
  PeerIdentities identities;
  identities.Connected(Node(1), kTask0);
  identities.Connected(Node(2), kTask1);
  identities.Connected(Node(3), kCli);
  identities.Connected(Node(4), kHost);
  EXPECT_THAT(MaySend(identities, 1, Message(Register(0))), IsOk());
  EXPECT_THAT(MaySend(identities, 2, Message(Register(0))),
              StatusIs(Code::kPermissionDenied,
                       AllOf(HasSubstr("acting as task /job:worker/task:0 from pid 2"),
                             HasSubstr("task /job:worker/task:1's certificate"),
                             HasSubstr("task-JOB-ID.pem"))));
  EXPECT_THAT(MaySend(identities, 3, Message(Register(0))),
              StatusIs(Code::kPermissionDenied, HasSubstr("the muster command's certificate")));
  EXPECT_THAT(MaySend(identities, 4, Message(Register(0))),
              StatusIs(Code::kPermissionDenied, HasSubstr("node \"host0\"")));
  // A batch passes only when every beat is the task's own.
  proto::HeartbeatBatchRequest batch;
  *batch.add_beats()->mutable_source_task() = MakeTask("worker", 0);
  EXPECT_THAT(MaySend(identities, 1, Message(batch)), IsOk());
  *batch.add_beats()->mutable_source_task() = MakeTask("worker", 1);
  EXPECT_THAT(MaySend(identities, 1, Message(batch)), StatusIs(Code::kPermissionDenied));
  // Keys, status and the rest are for every certificate of the job.
  proto::InsertKeyValueRequest insert;
  insert.mutable_kv()->set_key("config/lr");
  for (uint32_t pid : {1, 2, 3, 4}) {
    EXPECT_THAT(MaySend(identities, pid, Message(insert)), IsOk()) << pid;
    EXPECT_THAT(MaySend(identities, pid, Message(proto::ResetTaskRequest())), IsOk()) << pid;
  }
}

TEST(PeerIdentitiesTest, LaunchersNeedANodeCertificate) {
  PeerIdentities identities;
  identities.Connected(Node(1), kTask0);
  identities.Connected(Node(3), kCli);
  identities.Connected(Node(4), kHost);
  caf::message exited = Message(proto::TaskExitedRequest());
  EXPECT_THAT(MaySend(identities, 4, exited), IsOk());
  EXPECT_THAT(MaySend(identities, 1, exited),
              StatusIs(Code::kPermissionDenied, HasSubstr("only a node certificate")));
  EXPECT_THAT(MaySend(identities, 3, exited), StatusIs(Code::kPermissionDenied));
}

TEST(PeerIdentitiesTest, UnknownAndConflictingNodes_ActAsNobody) {
  PeerIdentities identities;
  EXPECT_THAT(MaySend(identities, 9, Message(Register(0))),
              StatusIs(Code::kPermissionDenied, HasSubstr("no certificate the leader knows of")));
  identities.Connected(Node(1), kTask0);
  identities.Connected(Node(1), kTask1);  // a second connection of the node, another certificate
  EXPECT_THAT(MaySend(identities, 1, Message(Register(0))),
              StatusIs(Code::kPermissionDenied, HasSubstr("two different certificates")));
  EXPECT_THAT(MaySend(identities, 1, Message(Register(1))), StatusIs(Code::kPermissionDenied));
  identities.Disconnected(Node(1), kTask1);
  identities.Disconnected(Node(1), kTask0);
  EXPECT_EQ(identities.size(), 0u);
}

TEST(PeerIdentitiesTest, ANodeIsKnownUntilItsLastConnectionCloses) {
  PeerIdentities identities;
  identities.Connected(Node(1), kTask0);
  identities.Connected(Node(1), kTask0);
  identities.Disconnected(Node(1), kTask0);
  EXPECT_THAT(MaySend(identities, 1, Message(Register(0))), IsOk());
  identities.Disconnected(Node(1), kTask0);
  EXPECT_THAT(MaySend(identities, 1, Message(Register(0))), StatusIs(Code::kPermissionDenied));
  identities.Disconnected(Node(1), kTask0);  // one more than were told: ignored
  EXPECT_EQ(identities.size(), 0u);
}

}  // namespace
}  // namespace muster
