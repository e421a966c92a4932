// Certificates for a job's mutual TLS: one CA and a certificate per node, signed by it (what
// `muster tls init` writes; see net/transport/tls/tls_context.h for how they are used), and
// optionally one per task, naming it (net/transport/tls/certificate_identity.h).
#pragma once

#include <string>
#include <vector>

#include <absl/status/status.h>

namespace muster {

// The tasks of one job that get certificates of their own: /job:<job>/task:0 to num_tasks - 1.
struct TaskCertificates {
  std::string job;
  int num_tasks = 0;
};

// Writes DIR/ca.pem and DIR/ca.key (the job's CA), and DIR/NAME.pem and DIR/NAME.key for each of
// `names` (EC P-256 keys, readable by the owner only; certificates valid `days` days, for both
// TLS client and server use). With `tasks`, also one certificate per task, naming it, in
// DIR/TaskCertificateName(job, i).pem and .key, and the CA says that its job binds tasks to
// their certificates (CaBindsTasks). Creates DIR if needed and never overwrites a file.
// Possible errors: InvalidArgument (a bad name or job, a task count outside 1..100000, days
// outside 1..36500), AlreadyExists (a file is there; nothing was overwritten), PermissionDenied
// (DIR cannot be written).
absl::Status WriteJobCertificates(const std::string& dir, const std::vector<std::string>& names,
                                  int days = 365, const std::vector<TaskCertificates>& tasks = {});

// "task-<job>-<id>": the file name (without .pem/.key) of a task's certificate.
std::string TaskCertificateName(const std::string& job, int task_id);

// OK for a usable node name: letters, digits, '-', '_', '.', at most 64, not "ca".
absl::Status CheckCertificateName(const std::string& name);

}  // namespace muster
