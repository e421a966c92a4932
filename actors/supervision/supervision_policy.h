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
//   OneForOne            restarts the failed task alone (its launcher starts it again); the
//                        other tasks are not told
//   OneForAll            tells every task, then restarts them all as a new round
//
// Restarts reach the tasks whose processes a launcher (`muster run`) runs: the coordinator sends
// each launcher the decision, and the launcher stops and starts the processes.
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

// Which tasks are started again after a failure, by the launchers that run them.
enum class RestartScope {
  kNone,  // nothing is restarted
  kTask,  // the failed task: a new process, registering as a new incarnation
  kAll,   // every task: a new round, with an empty key-value store and no barriers
};

struct FailureDecision {
  FailureAction action = FailureAction::kPropagateToCluster;
  // The status that is propagated (and, for kFailJob, set on every task of the job).
  absl::Status status;
  RestartScope restart = RestartScope::kNone;
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
  struct Failure {
    absl::Time time;
    int32_t task_id;
  };
  std::unique_ptr<SupervisionPolicy> inner_;
  int max_failures_;
  absl::Duration period_;
  absl::flat_hash_map<std::string, std::vector<Failure>> failures_;  // by job
};

class OneForOne : public SupervisionPolicy {
 public:
  FailureDecision OnTaskFailure(const proto::CoordinatedTask& task, const absl::Status& error,
                                absl::Time now) override;
  // Every task: a restarted one rejoins while the others go on (barriers wait for it).
  bool IsRecoverable(const proto::CoordinatedTask&) const override { return true; }
  std::string Describe() const override { return "one-for-one restarts"; }
};

class OneForAll : public SupervisionPolicy {
 public:
  FailureDecision OnTaskFailure(const proto::CoordinatedTask& task, const absl::Status& error,
                                absl::Time now) override;
  bool IsRecoverable(const proto::CoordinatedTask&) const override { return false; }
  std::string Describe() const override { return "one-for-all restarts"; }
};

// The default policy for a configuration: RecoverableJobs when it names recoverable jobs,
// FateSharing otherwise.
std::unique_ptr<SupervisionPolicy> DefaultPolicy(const std::vector<std::string>& recoverable_jobs);

}  // namespace muster
