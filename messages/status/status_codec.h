// The one codec between absl::Status and caf::error, and the coordination error payloads.
//
// A status travels inside CAF as caf::error{code, category "absl", (message, payloads)}, where
// payloads maps each absl payload type URL to its bytes. OK is the empty caf::error. Errors
// raised by CAF itself (timeouts, lost connections) map to transport statuses that carry no
// coordination payload, which is how callers tell service errors from transport errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <absl/status/status.h>
#include <absl/strings/string_view.h>
#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/message.hpp>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

// The CAF error category of statuses.
inline constexpr caf::atom_value kStatusCategory = caf::atom("absl");

// Payload type URLs.
inline constexpr char kCoordinationErrorUrl[] =
    "type.googleapis.com/muster.proto.CoordinationServiceError";
inline constexpr char kBarrierErrorUrl[] = "type.googleapis.com/muster.proto.BarrierError";
// Muster: the task whose failure ended the call (a serialized proto::CoordinatedTask), e.g. the
// participant that died while a barrier waited for it. Set with WithFailedTask, read with
// FailedTaskOf; docs/protocol.md lists the errors that carry it.
inline constexpr char kFailedTaskUrl[] = "type.googleapis.com/muster.proto.CoordinatedTask";

// Converts a status to a caf::error; OK becomes the empty error.
caf::error ToError(const absl::Status& status);

// Converts a caf::error back to a status. Statuses made by ToError come back unchanged;
// CAF's own errors become transport statuses (DeadlineExceeded for request timeouts,
// Unavailable for lost connections and dead receivers, Internal otherwise).
absl::Status ToStatus(const caf::error& error);

// Renders an error of kStatusCategory for caf::actor_system::render.
std::string RenderStatusError(uint8_t code, caf::atom_value category, const caf::message& context);

// Returns `status` with a coordination payload naming no source task.
absl::Status MakeCoordinationError(absl::Status status);

// Returns `status` with a coordination payload naming `source_task`.
absl::Status MakeCoordinationError(absl::Status status, const proto::CoordinatedTask& source_task,
                                   bool is_reported_error = false);

// Returns `status` with a coordination payload naming stuck.task() and carrying `stuck` (the
// error of a stuck task, docs/supervision.md).
absl::Status MakeStuckTaskError(absl::Status status, const proto::TaskStuck& stuck);

// The TaskStuck of a stuck task's error; nullopt for other statuses.
std::optional<proto::TaskStuck> GetTaskStuck(const absl::Status& status);

// "CODE: message" for logs and error texts, with the task a coordination payload names shown as
// " [source task /job:worker/task:1]" instead of the payload's raw bytes that
// absl::Status::ToString() appends. "OK" for OK.
std::string StatusText(const absl::Status& status);

// Returns the coordination payload of `status`, if it has one.
std::optional<proto::CoordinationServiceError> GetCoordinationError(const absl::Status& status);

// Builds a status from its fields in a message: `code` outside absl's range becomes Unknown;
// `payload` (may be null) becomes the coordination payload. OK when `code` is 0.
absl::Status MakeStatus(int code, absl::string_view message,
                        const proto::CoordinationServiceError* payload);

// Writes `status` into the error fields (error_code, error_message, error_payload) of a message
// such as CoordinatedTaskStateInfo, ReportErrorToTaskRequest or HeartbeatFailure.
template <class Message>
void SetStatusFields(const absl::Status& status, Message* out) {
  out->set_error_code(static_cast<int32_t>(status.code()));
  if (status.message().empty()) {
    out->clear_error_message();  // setting "" would allocate a string
  } else {
    out->set_error_message(std::string(status.message()));
  }
  out->clear_error_payload();
  if (auto payload = GetCoordinationError(status)) *out->mutable_error_payload() = *payload;
}

// The status that SetStatusFields wrote into `in`.
template <class Message>
absl::Status StatusFromFields(const Message& in) {
  return MakeStatus(in.error_code(), in.error_message(),
                    in.has_error_payload() ? &in.error_payload() : nullptr);
}

// Returns `status` with a BarrierError payload (and a coordination payload).
absl::Status MakeBarrierError(absl::Status status, absl::string_view barrier_id, int64_t counter);

// Returns the barrier counter carried by `status`, or -1 when it has no BarrierError payload.
int64_t GetBarrierCounter(const absl::Status& status);

// Returns `status` with `task` as the task whose failure ended the call (kFailedTaskUrl).
absl::Status WithFailedTask(absl::Status status, const proto::CoordinatedTask& task);

// The task whose failure ended the call that returned `status` (a barrier failed because a
// participant died or was in ERROR); nullopt when `status` does not report a failed peer.
std::optional<proto::CoordinatedTask> FailedTaskOf(const absl::Status& status);

}  // namespace muster
