// Whether a registration may take a task: the task actor's decisions (task_actor.cc), as plain
// functions of what it knows. A claim takes only a task no other incarnation holds; a reconnect
// after a lost leader connection only the incarnation the task is connected with; a task in
// ERROR rejoins only when it is recoverable and its error was a lost connection. Each refusal is
// a coordination error of the task that names it and says what to do.
#pragma once

#include <cstdint>

#include <absl/status/status.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

// OK, or AlreadyExists naming the incarnation that holds the task: the connected one, else
// `pending` (one waiting in the register barrier; 0: none). Not a claim: OK.
absl::Status MayClaim(const proto::CoordinatedTaskStateInfo& info, uint64_t pending,
                      const proto::RegisterTaskRequest& request);

// OK when the task is CONNECTED with the request's incarnation; FailedPrecondition naming the
// state (and incarnation) the leader knows otherwise.
absl::Status MayReconnect(const proto::CoordinatedTaskStateInfo& info,
                          const proto::RegisterTaskRequest& request);

// Whether a task in ERROR with `error` may register again: only a recoverable task whose error
// was a lost connection (Unavailable, as a coordination error).
bool MayRejoinFromError(bool recoverable, const absl::Status& error);

}  // namespace muster
