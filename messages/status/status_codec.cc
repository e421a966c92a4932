#include "muster/messages/status/status_codec.h"

#include <map>

#include <absl/strings/str_cat.h>
#include <caf/exit_reason.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

#include "muster/messages/status/caf_text.h"
#include "muster/messages/task_name.h"

namespace muster {
namespace {

using PayloadMap = std::map<std::string, std::string>;

constexpr int kMaxStatusCode = static_cast<int>(absl::StatusCode::kUnauthenticated);

absl::Status FromCafSystemError(const caf::error& error, const std::string& text) {
  switch (static_cast<caf::sec>(error.code())) {
    case caf::sec::request_timeout:
      return absl::DeadlineExceededError(text);
    case caf::sec::request_receiver_down:
    case caf::sec::cannot_connect_to_node:
    case caf::sec::remote_linking_failed:
    case caf::sec::connection_timeout:
      return absl::UnavailableError(absl::StrCat("peer unreachable: ", text));
    case caf::sec::invalid_argument:
      return absl::InvalidArgumentError(text);
    default:
      return absl::InternalError(text);
  }
}

absl::Status FromCafExitReason(const caf::error& error, const std::string& text) {
  switch (static_cast<caf::exit_reason>(error.code())) {
    case caf::exit_reason::remote_link_unreachable:
      return absl::UnavailableError(text);
    case caf::exit_reason::user_shutdown:
    case caf::exit_reason::kill:
      return absl::CancelledError(absl::StrCat("the actor stopped: ", text));
    default:
      return absl::UnavailableError(absl::StrCat("the actor stopped: ", text));
  }
}

std::string ContextText(const caf::message& context) {
  return context.empty() ? std::string() : caf::to_string(context);
}

// The proto of type T that `status` carries under `url`; nullopt when absent or unreadable.
template <class T>
std::optional<T> ParsePayload(const absl::Status& status, absl::string_view url) {
  auto bytes = status.GetPayload(url);
  T payload;
  if (!bytes || !payload.ParseFromString(std::string(*bytes))) return std::nullopt;
  return payload;
}

}  // namespace

caf::error ToError(const absl::Status& status) {
  if (status.ok()) return caf::none;
  PayloadMap payloads;
  status.ForEachPayload([&](absl::string_view url, const absl::Cord& bytes) {
    payloads.emplace(std::string(url), std::string(bytes));
  });
  return caf::error(static_cast<uint8_t>(status.code()), kStatusCategory,
                    caf::make_message(std::string(status.message()), std::move(payloads)));
}

absl::Status ToStatus(const caf::error& error) {
  if (!error) return absl::OkStatus();
  const caf::message& context = error.context();
  if (error.category() == kStatusCategory) {
    int code = error.code();
    if (code > kMaxStatusCode) code = static_cast<int>(absl::StatusCode::kUnknown);
    if (!context.match_elements<std::string, PayloadMap>()) {
      return absl::Status(static_cast<absl::StatusCode>(code), ContextText(context));
    }
    absl::Status status(static_cast<absl::StatusCode>(code), context.get_as<std::string>(0));
    for (const auto& [url, bytes] : context.get_as<PayloadMap>(1)) {
      status.SetPayload(url, absl::Cord(bytes));
    }
    return status;
  }
  std::string text = DescribeCafError(error);
  if (error.category() == caf::atom("system")) return FromCafSystemError(error, text);
  if (error.category() == caf::atom("exit")) return FromCafExitReason(error, text);
  return absl::InternalError(text);
}

std::string RenderStatusError(uint8_t code, caf::atom_value, const caf::message& context) {
  auto status_code = static_cast<absl::StatusCode>(code <= kMaxStatusCode ? code : 2);
  std::string text = context.match_elements<std::string, PayloadMap>()
                         ? context.get_as<std::string>(0)
                         : ContextText(context);
  return absl::StrCat(absl::StatusCodeToString(status_code), ": ", text);
}

absl::Status MakeCoordinationError(absl::Status status) {
  status.SetPayload(kCoordinationErrorUrl, absl::Cord());
  return status;
}

absl::Status MakeCoordinationError(absl::Status status, const proto::CoordinatedTask& source_task,
                                   bool is_reported_error) {
  proto::CoordinationServiceError payload;
  *payload.mutable_source_task() = source_task;
  payload.set_is_reported_error(is_reported_error);
  status.SetPayload(kCoordinationErrorUrl, absl::Cord(payload.SerializeAsString()));
  return status;
}

absl::Status MakeStuckTaskError(absl::Status status, const proto::TaskStuck& stuck) {
  proto::CoordinationServiceError payload;
  *payload.mutable_source_task() = stuck.task();
  *payload.mutable_stuck() = stuck;
  status.SetPayload(kCoordinationErrorUrl, absl::Cord(payload.SerializeAsString()));
  return status;
}

std::optional<proto::TaskStuck> GetTaskStuck(const absl::Status& status) {
  auto payload = GetCoordinationError(status);
  if (!payload || !payload->has_stuck()) return std::nullopt;
  return payload->stuck();
}

absl::Status MakeStatus(int code, absl::string_view message,
                        const proto::CoordinationServiceError* payload) {
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    code = static_cast<int>(absl::StatusCode::kUnknown);
  }
  absl::Status status(static_cast<absl::StatusCode>(code), message);
  if (payload != nullptr) {
    status.SetPayload(kCoordinationErrorUrl, absl::Cord(payload->SerializeAsString()));
  }
  return status;
}

std::string StatusText(const absl::Status& status) {
  if (status.ok()) return "OK";
  std::string text = absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
  if (auto payload = GetCoordinationError(status); payload && payload->has_source_task()) {
    absl::StrAppend(&text, " [source task ", TaskNameForMessage(payload->source_task()),
                    payload->is_reported_error() ? ", reported by it" : "", "]");
  }
  return text;
}

std::optional<proto::CoordinationServiceError> GetCoordinationError(const absl::Status& status) {
  return ParsePayload<proto::CoordinationServiceError>(status, kCoordinationErrorUrl);
}

absl::Status MakeBarrierError(absl::Status status, absl::string_view barrier_id, int64_t counter) {
  proto::BarrierError payload;
  payload.set_barrier_id(std::string(barrier_id));
  payload.set_counter(counter);
  status.SetPayload(kBarrierErrorUrl, absl::Cord(payload.SerializeAsString()));
  if (!status.GetPayload(kCoordinationErrorUrl)) status = MakeCoordinationError(std::move(status));
  return status;
}

int64_t GetBarrierCounter(const absl::Status& status) {
  auto payload = ParsePayload<proto::BarrierError>(status, kBarrierErrorUrl);
  return payload ? payload->counter() : -1;
}

absl::Status WithFailedTask(absl::Status status, const proto::CoordinatedTask& task) {
  status.SetPayload(kFailedTaskUrl, absl::Cord(task.SerializeAsString()));
  return status;
}

std::optional<proto::CoordinatedTask> FailedTaskOf(const absl::Status& status) {
  return ParsePayload<proto::CoordinatedTask>(status, kFailedTaskUrl);
}

}  // namespace muster
