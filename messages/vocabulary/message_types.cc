#include "muster/messages/vocabulary/message_types.h"

#include "muster/messages/status/status_codec.h"
#include "muster/messages/vocabulary/interfaces.h"
#include "muster/messages/vocabulary/kv_calls.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"
#include "muster/proto/observe.pb.h"
#include "muster/proto/topology.pb.h"

namespace muster {
namespace {

template <class... Messages>
void AddProtoTypes(caf::actor_system_config& cfg) {
  (cfg.add_message_type<Messages>(Messages::descriptor()->full_name()), ...);
}

}  // namespace

void AddMessageTypes(caf::actor_system_config& cfg) {
  AddProtoTypes<
      // Tasks, errors, devices and configuration.
      proto::CoordinatedTask, proto::CoordinationServiceError, proto::BarrierError,
      proto::TaskStuck, proto::CoordinationServiceDeviceInfo, proto::CoordinationServiceConfig,
      proto::LocalTopologyProto, proto::GlobalTopologyProto,
      // Task lifecycle.
      proto::AuthenticateRequest, proto::AuthenticateResponse, proto::RegisterTaskRequest,
      proto::RegisterTaskResponse, proto::HeartbeatRequest, proto::HeartbeatResponse,
      proto::HeartbeatBatchRequest, proto::HeartbeatBatchResponse, proto::HeartbeatFailure,
      proto::WaitForAllTasksRequest, proto::WaitForAllTasksResponse, proto::ShutdownTaskRequest,
      proto::ShutdownTaskResponse, proto::ResetTaskRequest, proto::ResetTaskResponse,
      proto::ReportErrorToTaskRequest, proto::ReportErrorToTaskResponse,
      proto::ReportErrorToServiceRequest, proto::ReportErrorToServiceResponse,
      proto::GetTaskStateRequest, proto::GetTaskStateResponse, proto::WatchJobStateRequest,
      proto::WatchJobStateResponse, proto::GetAliveTasksRequest, proto::GetAliveTasksResponse,
      // Key-value store.
      proto::KeyValueEntry, MUSTER_KV_CALLS(MUSTER_KV_MESSAGES) proto::WatchKeyRequest,
      proto::WatchKeyResponse, proto::StopWatchKeyRequest, proto::StopWatchKeyResponse,
      proto::KeyValueChangeEvent,
      // Barriers.
      proto::BarrierRequest, proto::BarrierResponse, proto::BarrierGroupRequest,
      proto::BarrierGroupResponse, proto::BarrierGroupFailure, proto::CancelBarrierRequest,
      proto::CancelBarrierResponse, proto::GetBarriersRequest, proto::GetBarriersResponse,
      proto::BarrierInfo, proto::GetBarrierProgressRequest, proto::GetBarrierProgressResponse,
      // Preemption.
      proto::NotifyPreemptionRequest, proto::NotifyPreemptionResponse, proto::PreemptionNotice,
      proto::PreemptionAck, proto::SyncPointNotice,
      // Elastic jobs.
      proto::JobMembership, proto::WaitForMembershipRequest, proto::WaitForMembershipResponse,
      proto::GetMembershipRequest, proto::GetMembershipResponse, proto::MembershipNotice,
      // Launchers.
      proto::RegisterLauncherRequest, proto::RegisterLauncherResponse, proto::TaskExitedRequest,
      proto::TaskExitedResponse, proto::TaskRestart, proto::SupervisionEvent,
      proto::LauncherStatusRequest, proto::LauncherStatusResponse,
      // Observing a job.
      proto::GetKvStatsRequest, proto::GetKvStatsResponse, proto::KvDirectoryStats,
      proto::GetTaskColumnsRequest, proto::TaskColumns, proto::TaskColumnError, proto::JobEvent,
      proto::WatchEventsRequest, proto::WatchEventsResponse,
      // Task states pushed by the coordinator to the barriers that wait for them.
      proto::CoordinatedTaskStateInfo>(cfg);
  cfg.add_message_type<AgentActor>("muster::AgentActor");
  cfg.add_message_type<CoordinatorActor>("muster::CoordinatorActor");
  cfg.add_message_type<KvWatcherActor>("muster::KvWatcherActor");
  cfg.add_message_type<LauncherActor>("muster::LauncherActor");
  cfg.add_error_category(kStatusCategory, RenderStatusError);
}

}  // namespace muster
