// Protobuf's own log lines, rate-limited for the whole process. A peer that sends a request
// whose proto3 string fields are not UTF-8 (any bytes cross the wire) makes protobuf log
// "String field '...' contains invalid UTF-8 data when parsing a protocol buffer" once per
// message: thousands of lines a second. After RateLimitProtobufLogs, at most one non-fatal line
// a second reaches the handler that was installed before (protobuf's: stderr), control bytes
// replaced, with a count of the lines left out since the previous one. Fatal lines always pass.
#pragma once

namespace muster {

// Installs the rate limit once per process (later calls do nothing). Protobuf's handler is a
// plain global: call it before the process serves peers (Leader::Start does).
void RateLimitProtobufLogs();

}  // namespace muster
