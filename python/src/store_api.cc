// muster._muster's side of the store API (store_api.h): an agent's key-value calls for
// muster._muster_torch's c10d store, made as the Python binding makes its blocking ones (direct
// when the agent can, else through the agent actor) but without Python: the callers are gloo's
// and c10d's threads, which hold no GIL.
#include "store_api.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include <absl/status/statusor.h>
#include <absl/strings/str_cat.h>
#include <absl/synchronization/notification.h>

#include "bindings.h"
#include "common.h"
#include "muster/actors/durability/state_store.h"
#include "muster/messages/requests/kv_requests.h"
#include "muster/net/agent/agent.h"
#include "py_agent.h"

namespace muster::python {
namespace {

// What a store holds: the agent, not kept open (close() ends its calls).
struct StoreHandle {
  std::weak_ptr<Agent> agent;
};

// The Cancelled of a wait that its caller's `interrupted` ended.
absl::Status Interrupted(const std::string& key) {
  return absl::CancelledError(
      absl::StrCat("the wait for key \"", key, "\" was interrupted (a signal, such as Ctrl-C)"));
}

// One key-value call, direct when the agent can make it so, else through the agent actor; the
// wait for the actor's answer does not hold the agent. `interrupted` (a get's): asked every
// 50 ms while it waits.
template <class Request>
absl::StatusOr<KvCallResponse<Request>> CallKv(void* handle, Request request,
                                               const std::string& get_key = {},
                                               bool (*interrupted)() = nullptr) {
  using Response = KvCallResponse<Request>;
  const std::weak_ptr<Agent>& weak = static_cast<StoreHandle*>(handle)->agent;
  std::shared_ptr<Agent> agent = weak.lock();
  if (!agent) return PyAgent::ClosedError();
  uint64_t hold = 0;
  std::function<bool()> asked;
  if (interrupted != nullptr) asked = interrupted;
  if (auto direct = agent->TryDirect(request, get_key, asked, &hold)) return *std::move(direct);
  struct Answer {
    absl::Notification done;
    std::optional<absl::StatusOr<Response>> result;
  };
  auto answer = std::make_shared<Answer>();
  std::function<void()> end_of_write = agent->EndOfDirectWrite(request);
  caf::actor_addr call = agent->CallAsync<Response>(
      [answer, end_of_write](absl::StatusOr<Response> result) {
        if (end_of_write) end_of_write();
        answer->result = std::move(result);
        answer->done.Notify();
      },
      std::move(request));
  if (hold != 0) agent->ReleaseGet(hold, call);
  agent.reset();  // may be the last reference (close() ran): ~Agent answers the call
  if (interrupted == nullptr) {
    answer->done.WaitForNotification();
  } else {
    while (!answer->done.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      if (!interrupted()) continue;
      // As the binding's on_interrupt: the actor withdraws the get (its answer is dropped).
      if (std::shared_ptr<Agent> still = weak.lock()) still->CancelGetKeyValue(get_key);
      return Interrupted(get_key);
    }
  }
  return *std::move(answer->result);
}

// The whole status crosses: its payloads make PeerFailedError and StuckTaskError in Python.
int Fail(const absl::Status& status, std::string* error) {
  *error = StoreStatus(status).SerializeAsString();
  return static_cast<int>(status.code());
}

absl::Status StatusOf(const std::string& error) {
  proto::StoredStatus stored;
  if (!stored.ParseFromString(error)) return absl::InternalError(error);
  return LoadStatus(stored);
}

std::string ErrorText(const std::string& error) noexcept {
  try {
    return std::string(StatusOf(error).message());
  } catch (...) {
    return "muster store call failed";
  }
}

// Runs a call for the table: nothing thrown crosses into the other module (an allocation that
// failed, a message CAF could not send) but comes back as Internal.
template <class Call>
int Guarded(std::string* error, Call call) noexcept {
  try {
    return call();
  } catch (const std::exception& e) {
    return Fail(absl::InternalError(absl::StrCat("muster store call failed: ", e.what())), error);
  } catch (...) {
    return Fail(absl::InternalError("muster store call failed"), error);
  }
}

void Release(void* handle) { delete static_cast<StoreHandle*>(handle); }

void* Clone(const void* handle) {
  return new (std::nothrow) StoreHandle(*static_cast<const StoreHandle*>(handle));
}

int Get(void* handle, const std::string& key, int64_t timeout_ms, bool (*interrupted)(),
        std::string* value, std::string* error) {
  return Guarded(error, [&] {
    absl::Duration timeout = timeout_ms < 0 ? absl::InfiniteDuration()
                                            : absl::Milliseconds(std::max<int64_t>(timeout_ms, 1));
    auto response = CallKv(handle, requests::GetKeyValue(key, timeout), key, interrupted);
    if (!response.ok()) return Fail(response.status(), error);
    *value = std::move(*response->mutable_kv()->mutable_value());
    return 0;
  });
}

int TryGet(void* handle, const std::string& key, std::string* value, std::string* error) {
  return Guarded(error, [&] {
    auto response = CallKv(handle, requests::TryGetKeyValue(key));
    if (!response.ok()) return Fail(response.status(), error);
    *value = std::move(*response->mutable_kv()->mutable_value());
    return 0;
  });
}

int Set(void* handle, const std::string& key, const std::string& value, std::string* error) {
  return Guarded(error, [&] {
    auto response = CallKv(handle, requests::InsertKeyValue(key, value, /*allow_overwrite=*/true));
    return response.ok() ? 0 : Fail(response.status(), error);
  });
}

int Add(void* handle, const std::string& key, int64_t delta, int64_t* value, std::string* error) {
  return Guarded(error, [&] {
    auto response = CallKv(handle, requests::IncrementKeyValue(key, delta));
    absl::StatusOr<int64_t> counter = response.ok() ? CounterOf(*response) : response.status();
    if (!counter.ok()) return Fail(counter.status(), error);
    *value = *counter;
    return 0;
  });
}

int CompareAndSwap(void* handle, const std::string& key, const std::string* expected,
                   const std::string& desired, bool* succeeded, bool* exists, std::string* current,
                   std::string* error) {
  return Guarded(error, [&] {
    std::optional<std::string> expected_value;
    if (expected != nullptr) expected_value = *expected;
    auto response = CallKv(handle, requests::CompareAndSwap(key, expected_value, desired));
    if (!response.ok()) return Fail(response.status(), error);
    *succeeded = response->succeeded();
    *exists = response->exists();
    *current = std::move(*response->mutable_current());
    return 0;
  });
}

int Remove(void* handle, const std::string& key, std::string* error) {
  return Guarded(error, [&] {
    auto response = CallKv(handle, requests::DeleteKeyValue(key, /*recursive=*/true));
    return response.ok() ? 0 : Fail(response.status(), error);
  });
}

int Count(void* handle, const std::string& directory, int64_t* keys, std::string* error) {
  return Guarded(error, [&] {
    auto response = CallKv(handle, requests::GetKeyValueDir(directory));
    if (!response.ok()) return Fail(response.status(), error);
    *keys = response->kv_size();
    return 0;
  });
}

const StoreApi kApi = {kStoreApiVersion, &Clone,  &Release, &Get,      &TryGet, &Set, &Add,
                       &CompareAndSwap,  &Remove, &Count,   &ErrorText};

}  // namespace

void BindStoreApi(py::module_& m) {
  m.attr("_store_api") = py::capsule(&kApi, kStoreApiCapsule);
  m.def(
      "_store_handle",
      [](PyAgent& agent) {
        return py::capsule(
            new StoreHandle{agent.GetWeak()}, kStoreHandleCapsule,
            [](PyObject* capsule) { Release(PyCapsule_GetPointer(capsule, kStoreHandleCapsule)); });
      },
      "A handle on the agent for muster._muster_torch's store (store_api.h).");
  m.def(
      "_store_exception",
      [](const py::bytes& error) { return MakeException(StatusOf(std::string(error))); },
      "The muster exception of an error of a store_api.h call.");
}

}  // namespace muster::python
