// Supervision policies: what the coordinator does when a task fails. A policy is plain data and
// pure functions of (task, error, time): tested without actors, passed by value at spawn time.
//
// Built in:
//   FateSharing          every failure is propagated to the whole cluster (the default)
//   JobScoped            a failure is propagated to the failed task's job only
//   RecoverableJobs      failures of tasks in the named jobs are tolerated: the task may reset
//                        and register again; other failures share fate
//   RestartIntensity     wraps a policy: more than N failures of one job within T fail that job
//                        as a whole (OTP's restart intensity)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>
#include <absl/status/status.h>
#include <absl/time/time.h>

#include "muster/proto/coordination_service.pb.h"

namespace muster {

enum class FailureAction {
  kPropagateToCluster,  // tell every connected task
  kPropagateToJob,      // tell the connected tasks of the failed task's job
  kTolerate,            // tell nobody; the task may reset and register again
  kFailJob,             // set every task of the job to ERROR and tell the whole cluster
};

struct FailureDecision {
  FailureAction action = FailureAction::kPropagateToCluster;
  // The status that is propagated (and, for kFailJob, set on every task of the job).
  absl::Status status;
};

class SupervisionPolicy {
 public:
  virtual ~SupervisionPolicy() = default;
  // Decides what follows the failure of `task` with `error` at time `now` (actor clock).
  virtual FailureDecision OnTaskFailure(const proto::CoordinatedTask& task,
                                        const absl::Status& error, absl::Time now) = 0;
  // True when `task` may fail and come back: its failures leave barriers waiting for it.
  virtual bool IsRecoverable(const proto::CoordinatedTask& task) const = 0;
  // A short description for logs and `muster status`.
  virtual std::string Describe() const = 0;
};

class FateSharing : public SupervisionPolicy {
 public:
  FailureDecision OnTaskFailure(const proto::CoordinatedTask& task, const absl::Status& error,
                                absl::Time now) override;
  bool IsRecoverable(const proto::CoordinatedTask&) const override { return false; }
  std::string Describe() const override { return "fate-sharing"; }
};

class JobScoped : public SupervisionPolicy {
 public:
  FailureDecision OnTaskFailure(const proto::CoordinatedTask& task, const absl::Status& error,
                                absl::Time now) override;
  bool IsRecoverable(const proto::CoordinatedTask&) const override { return false; }
  std::string Describe() const override { return "job-scoped"; }
};

class RecoverableJobs : public SupervisionPolicy {
 public:
  explicit RecoverableJobs(std::vector<std::string> jobs);
  FailureDecision OnTaskFailure(const proto::CoordinatedTask& task, const absl::Status& error,
                                absl::Time now) override;
  bool IsRecoverable(const proto::CoordinatedTask& task) const override;
  std::string Describe() const override;

 private:
  absl::flat_hash_set<std::string> jobs_;
};

class RestartIntensity : public SupervisionPolicy {
 public:
  // Fails a job once more than `max_failures` of its tasks failed within `period`.
  RestartIntensity(std::unique_ptr<SupervisionPolicy> inner, int max_failures,
                   absl::Duration period);
  FailureDecision OnTaskFailure(const proto::CoordinatedTask& task, const absl::Status& error,
                                absl::Time now) override;
  bool IsRecoverable(const proto::CoordinatedTask& task) const override;
  std::string Describe() const override;

 private:
  std::unique_ptr<SupervisionPolicy> inner_;
  int max_failures_;
  absl::Duration period_;
  absl::flat_hash_map<std::string, std::vector<absl::Time>> failures_;  // by job
};

// The default policy for a configuration: RecoverableJobs when it names recoverable jobs,
// FateSharing otherwise.
std::unique_ptr<SupervisionPolicy> DefaultPolicy(const std::vector<std::string>& recoverable_jobs);

}  // namespace muster
