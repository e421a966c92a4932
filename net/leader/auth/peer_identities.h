// Who the leader's peer nodes are, by the certificates of their connections, and what each may
// send when the job binds tasks to certificates (`muster tls init --tasks`,
// net/transport/tls/certificate_identity.h). The token gate owns one and asks it about every
// request from another node.
//
// The rules, with binding on:
//  - a request that acts as a task (registration, with a new incarnation or not; heartbeats;
//    WaitForAllTasks; error reports; shutdown; barriers and their cancellation; GetAliveTasks;
//    preemption notices; key writes that name a task as their owner) comes from a node whose
//    certificate names that task (a process hosting several tasks cannot send their batched
//    heartbeats or group barriers: with per-task certificates, one task per process);
//  - a launcher's requests (RegisterLauncher, TaskExited) come from a node certificate (one of
//    `muster tls init --names`), never from a task's or the muster command's;
//  - everything else (the key-value store, status, watches, ResetTask, whose own rules the
//    coordinator applies) is open to every certificate of the job.
// A node whose connections name two different certificates, or none, may not act as a task
// (the multiplexer closes such a second connection before it is read; this is the second line).
//
//   node: UNKNOWN --a connection names identity I--> KNOWN(I, 1 connection)
//         KNOWN(I, n) --another names I--> KNOWN(I, n+1); --one closes--> KNOWN(I, n-1) or UNKNOWN
//         KNOWN(I, n) --another names J != I--> CONFLICTING (until all its connections close)
#pragma once

#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/status/status.h>
#include <caf/node_id.hpp>
#include <caf/type_erased_tuple.hpp>

#include "muster/net/transport/tls/certificate_identity.h"
#include "muster/proto/coordination_service.pb.h"

namespace muster {

// What a request claims to be: the tasks it acts as, or a launcher's.
struct RequestRole {
  std::vector<proto::CoordinatedTask> tasks;
  bool launcher = false;
};
RequestRole RoleOf(const caf::type_erased_tuple& request);

class PeerIdentities {
 public:
  // At most this many nodes are remembered; a connection beyond them is not known (and may then
  // not act as a task).
  static constexpr size_t kCapacity = 1 << 17;

  void Connected(const caf::node_id& node, const CertificateIdentity& identity);
  void Disconnected(const caf::node_id& node, const CertificateIdentity& identity);

  // OK when `node` (named `peer` in messages) may send `request`; PermissionDenied otherwise,
  // naming the task, the certificate and what to do.
  absl::Status MaySend(const caf::node_id& node, const std::string& peer,
                       const caf::type_erased_tuple& request) const;

  size_t size() const { return nodes_.size(); }

 private:
  struct Entry {
    CertificateIdentity identity;
    int connections = 0;
    bool conflicting = false;
  };
  absl::flat_hash_map<caf::node_id, Entry> nodes_;
};

}  // namespace muster
