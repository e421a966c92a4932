#include "muster/messages/requests/kv_requests.h"

#include "muster/messages/requests/wire_timeouts.h"

namespace muster::requests {

proto::GetKeyValueRequest GetKeyValue(const std::string& key, absl::Duration timeout) {
  proto::GetKeyValueRequest request;
  request.set_key(key);
  request.set_timeout_in_ms(WaitTimeoutMs(timeout));
  return request;
}

proto::TryGetKeyValueRequest TryGetKeyValue(const std::string& key) {
  proto::TryGetKeyValueRequest request;
  request.set_key(key);
  return request;
}

proto::GetKeyValueDirRequest GetKeyValueDir(const std::string& directory) {
  proto::GetKeyValueDirRequest request;
  request.set_directory_key(directory);
  return request;
}

proto::InsertKeyValueRequest InsertKeyValue(const std::string& key, const std::string& value,
                                            bool allow_overwrite, bool ephemeral) {
  proto::InsertKeyValueRequest request;
  request.mutable_kv()->set_key(key);
  request.mutable_kv()->set_value(value);
  request.set_allow_overwrite(allow_overwrite);
  request.set_ephemeral(ephemeral);
  return request;
}

proto::UpdateKeyValueRequest UpdateKeyValue(const std::string& key, const std::string& value,
                                            bool ephemeral) {
  proto::UpdateKeyValueRequest request;
  request.mutable_kv()->set_key(key);
  request.mutable_kv()->set_value(value);
  request.set_ephemeral(ephemeral);
  return request;
}

proto::DeleteKeyValueRequest DeleteKeyValue(const std::string& key, bool recursive,
                                            bool delete_root) {
  proto::DeleteKeyValueRequest request;
  request.set_key(key);
  request.set_is_directory(recursive);
  request.set_delete_root(delete_root);
  return request;
}

proto::IncrementKeyValueRequest IncrementKeyValue(const std::string& key, int64_t delta) {
  proto::IncrementKeyValueRequest request;
  request.set_key(key);
  request.set_increment(delta);
  return request;
}

proto::CompareAndSwapRequest CompareAndSwap(const std::string& key,
                                            const std::optional<std::string>& expected,
                                            const std::string& desired, bool ephemeral) {
  proto::CompareAndSwapRequest request;
  request.set_key(key);
  request.set_ephemeral(ephemeral);
  request.set_expect_absent(!expected.has_value());
  if (expected) request.set_expected(*expected);
  request.set_desired(desired);
  return request;
}

proto::WatchKeyRequest WatchKey(const std::string& key, int64_t from_revision) {
  proto::WatchKeyRequest request;
  request.set_key(key);
  request.set_from_revision(from_revision);
  return request;
}

proto::StopWatchKeyRequest StopWatchKey(const std::string& key) {
  proto::StopWatchKeyRequest request;
  request.set_key(key);
  return request;
}

proto::ReduceKeyValueDirRequest ReduceKeyValueDir(const std::string& directory,
                                                  proto::ReduceOp op) {
  proto::ReduceKeyValueDirRequest request;
  request.set_directory_key(directory);
  request.set_op(op);
  return request;
}

proto::WaitForKeysRequest WaitForKeys(const std::string& directory, int64_t count,
                                      absl::Duration timeout) {
  proto::WaitForKeysRequest request;
  request.set_directory_key(directory);
  request.set_count(count);
  request.set_timeout_in_ms(WaitTimeoutMs(AtLeastOneMillisecond(timeout)));
  return request;
}

}  // namespace muster::requests
