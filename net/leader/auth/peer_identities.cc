#include "muster/net/leader/auth/peer_identities.h"

#include <absl/strings/str_cat.h>

#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/kv_calls.h"

namespace muster {
namespace {

using Kind = CertificateIdentity::Kind;

// `T` at position 0 of `request`, or null.
template <class T>
const T* As(const caf::type_erased_tuple& request) {
  if (request.size() == 0 || !request.match_element<T>(0)) return nullptr;
  return &request.get_as<T>(0);
}

// The task a request names, when it names one (a request without its task gets the
// coordinator's InvalidArgument, not a refusal here).
void AddTask(bool has, const proto::CoordinatedTask& task, RequestRole* role) {
  if (has) role->tasks.push_back(task);
}

// A key-value call of type `Request` acts as the task it names when its request has a source
// task (an ephemeral write names its writer). True when `request` is one.
template <class Request>
bool AddWriterOf(const caf::type_erased_tuple& request, RequestRole* role) {
  if constexpr (requires(const Request& r) { r.source_task(); }) {
    if (auto* r = As<Request>(request)) {
      AddTask(r->has_source_task(), r->source_task(), role);
      return true;
    }
  }
  return false;
}

// The task a key-value call of MUSTER_KV_CALLS (kv_calls.h) names, if it names one.
void AddKvWriter(const caf::type_erased_tuple& request, RequestRole* role) {
#define MUSTER_KV_WRITER(Verb, label) \
  if (AddWriterOf<proto::Verb##Request>(request, role)) return;
  MUSTER_KV_CALLS(MUSTER_KV_WRITER)
#undef MUSTER_KV_WRITER
}

constexpr char kRemedy[] =
    "; with per-task certificates (muster tls init --tasks), give each task's process its own "
    "certificate: MUSTER_TLS_CERT=DIR/task-JOB-ID.pem and MUSTER_TLS_KEY=DIR/task-JOB-ID.key";

}  // namespace

RequestRole RoleOf(const caf::type_erased_tuple& request) {
  RequestRole role;
  if (auto* r = As<proto::RegisterTaskRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::HeartbeatRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::HeartbeatBatchRequest>(request)) {
    for (const auto& beat : r->beats()) {
      AddTask(beat.has_source_task(), beat.source_task(), &role);
    }
  } else if (auto* r = As<proto::WaitForAllTasksRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::ShutdownTaskRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::ReportErrorToServiceRequest>(request)) {
    AddTask(r->has_error_origin(), r->error_origin(), &role);
  } else if (auto* r = As<proto::GetAliveTasksRequest>(request)) {
    AddTask(r->has_requesting_task(), r->requesting_task(), &role);
  } else if (auto* r = As<proto::BarrierRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::BarrierGroupRequest>(request)) {
    for (const auto& source : r->sources()) AddTask(true, source, &role);
  } else if (auto* r = As<proto::CancelBarrierRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::NotifyPreemptionRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (auto* r = As<proto::WaitForMembershipRequest>(request)) {
    AddTask(r->has_source_task(), r->source_task(), &role);
  } else if (As<proto::RegisterLauncherRequest>(request) != nullptr ||
             As<proto::TaskExitedRequest>(request) != nullptr) {
    role.launcher = true;
  } else {
    AddKvWriter(request, &role);
  }
  return role;
}

void PeerIdentities::Connected(const caf::node_id& node, const CertificateIdentity& identity) {
  auto it = nodes_.find(node);
  if (it == nodes_.end()) {
    if (nodes_.size() >= kCapacity) return;
    nodes_.emplace(node, Entry{identity, 1, false});
    return;
  }
  Entry& entry = it->second;
  ++entry.connections;
  if (entry.identity.kind != identity.kind || entry.identity.name != identity.name) {
    entry.conflicting = true;
  }
}

void PeerIdentities::Disconnected(const caf::node_id& node, const CertificateIdentity&) {
  auto it = nodes_.find(node);
  if (it != nodes_.end() && --it->second.connections <= 0) nodes_.erase(it);
}

absl::Status PeerIdentities::MaySend(const caf::node_id& node, const std::string& peer,
                                     const caf::type_erased_tuple& request) const {
  RequestRole role = RoleOf(request);
  if (role.tasks.empty() && !role.launcher) return absl::OkStatus();
  auto it = nodes_.find(node);
  if (it == nodes_.end() || it->second.conflicting) {
    return absl::PermissionDeniedError(absl::StrCat(
        peer,
        it == nodes_.end() ? " has no certificate the leader knows of"
                           : " connected with two different certificates",
        ", so it may not act as a task or run a launcher",
        role.launcher ? "; run launchers with a node certificate (muster tls init --names)"
                      : kRemedy));
  }
  const CertificateIdentity& identity = it->second.identity;
  if (role.launcher) {
    if (identity.kind == Kind::kNode) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat(
        "a launcher's request from ", peer, ", which holds ", DescribeIdentity(identity),
        ": this job binds tasks to certificates, and only a node certificate (one of `muster tls "
        "init --names`) may run a launcher (muster run --tls-cert DIR/NODE.pem)"));
  }
  for (const proto::CoordinatedTask& task : role.tasks) {
    if (identity.kind == Kind::kTask && identity.name == TaskName(task)) continue;
    return absl::PermissionDeniedError(absl::StrCat(
        "a request acting as task ", TaskNameForMessage(task), " from ", peer, ", which holds ",
        DescribeIdentity(identity),
        ": this job binds tasks to certificates, and a task may act only with its own", kRemedy));
  }
  return absl::OkStatus();
}

}  // namespace muster
