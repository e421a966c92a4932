// How muster._muster_torch (torch_store.cc: a c10d::Store in C++, which gloo and c10d call
// without Python) makes an agent's key-value calls in muster._muster, whose library it does not
// link: a table of functions in a capsule, muster._muster._store_api. Both modules are built
// together, by one compiler against one standard library, so std::string crosses.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

namespace muster::python {

inline constexpr uint32_t kStoreApiVersion = 3;
inline constexpr char kStoreApiCapsule[] = "muster._muster._store_api";
inline constexpr char kStoreHandleCapsule[] = "muster._muster._store_handle";

// Each call returns an absl::StatusCode as an int (0: OK) with the error in `*error`: the whole
// absl::Status (its payloads name a failed task, a stuck one), which error_text reads and
// muster._muster._store_exception(error) turns into the muster exception the binding raises.
// Calls run without the GIL, on any thread; a handle serves several threads at once.
struct StoreApi {
  uint32_t version;
  // A handle of the caller's own on the agent of `handle` (the pointer in the capsule that
  // muster._muster._store_handle(agent) returns), to give back with release. It does not keep
  // the agent open: after close() calls fail with FailedPrecondition.
  void* (*clone)(const void* handle);
  void (*release)(void* handle);
  // Waits for `key` up to `timeout_ms` (negative: without a limit). `interrupted`, when not
  // null, is asked every 50 ms while the call waits: true ends it with Cancelled (and withdraws
  // the get at the leader).
  int (*get)(void* handle, const std::string& key, int64_t timeout_ms, bool (*interrupted)(),
             std::string* value, std::string* error);
  int (*try_get)(void* handle, const std::string& key, std::string* value, std::string* error);
  int (*set)(void* handle, const std::string& key, const std::string& value, std::string* error);
  int (*add)(void* handle, const std::string& key, int64_t delta, int64_t* value,
             std::string* error);
  // Sets `desired` if the key holds `*expected` (null: if it is absent); `*current` the value
  // after the call when `*exists`.
  int (*compare_and_swap)(void* handle, const std::string& key, const std::string* expected,
                          const std::string& desired, bool* succeeded, bool* exists,
                          std::string* current, std::string* error);
  int (*remove)(void* handle, const std::string& key, std::string* error);
  // How many keys `directory` holds.
  int (*count)(void* handle, const std::string& directory, int64_t* keys, std::string* error);
  // An error's message, for C++ callers (gloo's std::runtime_error).
  std::string (*error_text)(const std::string& error);
};

}  // namespace muster::python
