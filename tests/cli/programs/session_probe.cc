// A client of a leader for the tests of cli::LeaderSession: connects as the muster command does
// (--leader, --max_frame_size and the other flags of the command), sends an InsertKeyValue of
// --value_bytes bytes under probe/big and then one of a byte under probe/small, prints
// "PROBE big OK" or "PROBE small OK" for each that succeeded, reports a failure as the command
// does (and stops there), and exits with the command's exit code once the session has ended.
#include <cstdio>
#include <string>

#include <absl/flags/flag.h>
#include <absl/flags/parse.h>
#include <absl/time/time.h>

#include "muster/tools/common/cli_common.h"

ABSL_FLAG(int64_t, value_bytes, 1, "The size of the value to insert under probe/big");

namespace muster::cli {
namespace {

absl::Status Insert(LeaderSession& session, const std::string& key, std::string value) {
  proto::InsertKeyValueRequest request;
  request.mutable_kv()->set_key(key);
  request.mutable_kv()->set_value(std::move(value));
  return session.Ask<proto::InsertKeyValueResponse>(absl::Seconds(10), request).status();
}

int Probe() {
  auto leader = LeaderFlag();
  if (!leader.ok()) return ReportUsageError("probe", leader.status());
  auto session = LeaderSession::Connect(*leader, absl::Seconds(10));
  if (!session.ok()) return ReportFailure("probe", session.status());
  std::string big(static_cast<size_t>(absl::GetFlag(FLAGS_value_bytes)), 'x');
  if (absl::Status s = Insert(**session, "probe/big", std::move(big)); !s.ok()) {
    return ReportFailure("probe", s);
  }
  std::printf("PROBE big OK\n");
  if (absl::Status s = Insert(**session, "probe/small", "1"); !s.ok()) {
    return ReportFailure("probe", s);
  }
  std::printf("PROBE small OK\n");
  return kExitOk;
}

}  // namespace
}  // namespace muster::cli

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return muster::cli::Probe();
}
