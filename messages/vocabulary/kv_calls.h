// The key-value calls that are one request and one reply, listed once. A list entry
// X(Verb, "label") names proto::<Verb>Request and proto::<Verb>Response, and the `verb` label of
// its metrics. What a new such verb needs in the typed actor interfaces (KvStoreActor, the
// agent's AgentControlActor), in the registered message types, in the coordinator's, the
// router's, the directory's and the agent's handlers and in the leader's metrics follows from
// this list. WatchKey and StopWatchKey, which take a watcher with the request, are listed where
// they are used.
#pragma once

#include <utility>

#include "muster/proto/coordination_service.pb.h"

// Possible errors of each (docs/protocol.md): InsertKeyValue AlreadyExists (without overwrite);
// UpdateKeyValue and TryGetKeyValue NotFound; GetKeyValue DeadlineExceeded / Cancelled;
// IncrementKeyValue FailedPrecondition (not an integer), OutOfRange (overflow);
// ReduceKeyValueDir InvalidArgument (root, bad op), NotFound (no keys), FailedPrecondition,
// OutOfRange; WaitForKeys InvalidArgument (root, count or timeout out of range),
// DeadlineExceeded (names how many keys there are), Cancelled (the directory stopped).
#define MUSTER_KV_CALLS(X)              \
  X(InsertKeyValue, "insert")           \
  X(UpdateKeyValue, "update")           \
  X(GetKeyValue, "get")                 \
  X(TryGetKeyValue, "try_get")          \
  X(IncrementKeyValue, "increment")     \
  X(GetKeyValueDir, "get_dir")          \
  X(DeleteKeyValue, "delete")           \
  X(CompareAndSwap, "compare_and_swap") \
  X(ReduceKeyValueDir, "reduce_dir")    \
  X(WaitForKeys, "wait_for_keys")

// caf::replies_to<proto::<Verb>Request>::with<proto::<Verb>Response>, (with the comma: an
// entry of a typed_actor's list).
#define MUSTER_KV_REPLIES_TO(Verb, label) \
  caf::replies_to<proto::Verb##Request>::with<proto::Verb##Response>,

// proto::<Verb>Request, proto::<Verb>Response, (with the comma: entries of a type list).
#define MUSTER_KV_MESSAGES(Verb, label) proto::Verb##Request, proto::Verb##Response,

namespace muster {
namespace kv_calls_internal {
// Declared only, to name the response type of each call (see KvCallResponse).
#define MUSTER_KV_RESPONSE_OF(Verb, label) \
  proto::Verb##Response ResponseOf(const proto::Verb##Request&);
MUSTER_KV_CALLS(MUSTER_KV_RESPONSE_OF)
#undef MUSTER_KV_RESPONSE_OF
}  // namespace kv_calls_internal

// The response type of a key-value call's request type.
template <class Request>
using KvCallResponse = decltype(kv_calls_internal::ResponseOf(std::declval<const Request&>()));

}  // namespace muster
