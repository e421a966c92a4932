// muster._muster.Leader: a coordinator hosted by this Python process (muster::Leader), or one of
// an HA job's leaders (muster::HaLeader, reaching etcd through its JSON gateway), in the
// process's leader actor system. muster/_leader.py wraps it.
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <absl/strings/str_cat.h>

#include "bindings.h"
#include "common.h"
#include "muster/actors/supervision/supervision_policy.h"
#include "muster/net/ha/ha_leader.h"
#include "muster/net/leader/job_spec.h"
#include "muster/net/leader/leader.h"
#include "runtime.h"

namespace muster::python {
namespace {

class PyLeader : public Closable {
 public:
  explicit PyLeader(std::unique_ptr<Leader> leader)
      : address_(leader->address()),
        port_(leader->port()),
        incarnation_(leader->incarnation()),
        http_url_(leader->http_url()),
        recovery_(leader->recovery()),
        leader_(std::move(leader)) {
    Runtime::Get().Register(this);
  }
  // One of an HA job's leaders: active or standing by (role()).
  explicit PyLeader(std::shared_ptr<HaLeader> leader)
      : address_(leader->address()), port_(leader->port()), ha_(std::move(leader)) {
    Runtime::Get().Register(this);
  }
  ~PyLeader() override {
    Runtime::Get().Unregister(this);
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      Close();
    } else {
      Close();
    }
  }
  int close_rank() const override { return 1; }

  void Close() override {
    std::unique_ptr<Leader> leader;
    std::shared_ptr<HaLeader> ha;
    {
      absl::MutexLock lock(&mutex_);
      leader = std::move(leader_);
      ha = std::move(ha_);
      if (ha) last_said_ = ha->said();  // ha_status while it stops
    }
    if (leader) leader->Stop();
    if (ha) {
      ha->Stop();  // resigns: a standby takes over at once
      absl::MutexLock lock(&mutex_);
      last_said_ = ha->said();
    }
  }
  bool running() {
    absl::MutexLock lock(&mutex_);
    return leader_ != nullptr || ha_ != nullptr;
  }

  // An HA leader's role now: "active", "standby" or "stopped" (a leader of no HA job: "active"
  // while running).
  std::string role() {
    if (std::shared_ptr<HaLeader> ha = Ha()) {
      switch (ha->role()) {
        case HaRole::kActive:
          return "active";
        case HaRole::kStandby:
          return "standby";
        case HaRole::kStopped:
          return "stopped";
      }
    }
    return running() ? "active" : "stopped";
  }
  // The active leader's address as etcd names it ("" when none; this one's when active).
  std::string active_leader() {
    if (std::shared_ptr<HaLeader> ha = Ha()) return ha->active_leader();
    return running() ? address_ : std::string();
  }
  // Waits up to `timeout` seconds until this leader is active (false when it stopped), in short
  // steps with the GIL released between them, so that Ctrl-C interrupts it.
  bool wait_active(double timeout) {
    std::shared_ptr<HaLeader> ha = Ha();
    if (!ha) return running();
    const absl::Time deadline = absl::Now() + absl::Seconds(std::max(0.0, timeout));
    while (true) {
      bool active = false;
      {
        py::gil_scoped_release release;
        active = ha->AwaitActive(std::min(absl::Milliseconds(100), deadline - absl::Now()));
      }
      if (active) return true;
      if (ha->role() == HaRole::kStopped || absl::Now() >= deadline) return false;
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
    }
  }
  // An HA leader's last word on its role ("" for a leader of no HA job).
  std::string ha_status() {
    if (std::shared_ptr<HaLeader> ha = Ha()) return ha->said();
    absl::MutexLock lock(&mutex_);
    return last_said_;  // its last line once stopped
  }
  // The HTTP endpoint's URL ("" without one; an HA leader: only while active).
  std::string http_url() {
    if (std::shared_ptr<HaLeader> ha = Ha()) return ha->http_url();
    return http_url_;
  }
  // What the leader recovered when it started (an HA leader: at its last takeover).
  std::string recovery() {
    if (std::shared_ptr<HaLeader> ha = Ha()) return ha->recovery();
    return recovery_;
  }

  const std::string address_;
  const uint16_t port_;
  const uint64_t incarnation_ = 0;
  const std::string http_url_;

 private:
  // The HA leader, shared: a wait or a read of it runs without the mutex (Close may come
  // meanwhile).
  std::shared_ptr<HaLeader> Ha() {
    absl::MutexLock lock(&mutex_);
    return ha_;
  }

  const std::string recovery_;
  absl::Mutex mutex_;
  std::unique_ptr<Leader> leader_ ABSL_GUARDED_BY(mutex_);
  std::string last_said_ ABSL_GUARDED_BY(mutex_);  // an HA leader's, once closed
  std::shared_ptr<HaLeader> ha_ ABSL_GUARDED_BY(mutex_);
};

int64_t Millis(std::optional<double> seconds) {
  absl::Duration d = ToDuration(seconds);
  return d == absl::InfiniteDuration() ? 0 : absl::ToInt64Milliseconds(d);
}

std::shared_ptr<SupervisionPolicy> PolicyOf(const std::string& policy,
                                            const std::vector<std::string>& recoverable) {
  std::string name =
      policy.empty() ? (recoverable.empty() ? "fate-sharing" : "recoverable") : policy;
  if (name == "recoverable") {
    if (recoverable.empty()) {
      throw StatusError(absl::InvalidArgumentError(
          "policy \"recoverable\" needs the jobs to tolerate: give recoverable_jobs"));
    }
    return std::make_shared<RecoverableJobs>(recoverable);
  }
  if (!recoverable.empty()) {
    throw StatusError(absl::InvalidArgumentError(
        absl::StrCat("recoverable_jobs needs policy \"recoverable\" (its default); \"", name,
                     "\" does not tolerate failures")));
  }
  if (name == "fate-sharing") return std::make_shared<FateSharing>();
  if (name == "job-scoped") return std::make_shared<JobScoped>();
  throw StatusError(absl::InvalidArgumentError(absl::StrCat(
      "unknown policy \"", name, "\"; expected fate-sharing, job-scoped or recoverable")));
}

std::unique_ptr<PyLeader> MakeLeader(
    const std::map<std::string, std::string>& jobs, const std::string& host, int port,
    double heartbeat_timeout, std::optional<double> register_timeout,
    std::optional<double> shutdown_barrier_timeout,
    const std::vector<std::string>& recoverable_jobs, const std::string& policy,
    const std::string& token, std::optional<double> stuck_after, int64_t max_step_lag,
    const std::string& state_dir, std::optional<double> reconnect_window, const std::string& http,
    std::optional<double> settle_time, const std::string& ha_etcd, const std::string& ha_name,
    std::optional<double> ha_lease_ttl, const std::string& ha_advertise) {
  if (jobs.empty())
    throw StatusError(absl::InvalidArgumentError("jobs is empty: e.g. {\"worker\": 4}"));
  if (port < 0 || port > 65535) throw py::value_error("port must be 0 to 65535");
  if (heartbeat_timeout <= 0) throw py::value_error("heartbeat_timeout must be > 0 seconds");
  CoordinatorOptions options;
  for (const auto& [name, tasks] : jobs) {
    // "4", or "2:8" for an elastic job: the spec of muster serve --job.
    *options.config.add_coordinated_job_list() =
        ValueOrThrow(ParseJobSpec(absl::StrCat(name, "=", tasks)));
  }
  if (settle_time.has_value() && *settle_time < 0) {
    throw py::value_error("settle_time must be >= 0 seconds (None: 5 s)");
  }
  options.config.set_membership_settle_ms(
      settle_time.has_value() ? std::max<int64_t>(1, Millis(settle_time)) : 0);
  for (const auto& name : recoverable_jobs) {
    if (!jobs.contains(name)) {
      throw StatusError(absl::InvalidArgumentError(
          absl::StrCat("recoverable job \"", name, "\" is not one of the jobs")));
    }
    options.config.add_recoverable_jobs(name);
  }
  options.config.set_heartbeat_timeout_in_ms(
      std::max<int64_t>(1, static_cast<int64_t>(heartbeat_timeout * 1000)));
  options.config.set_cluster_register_timeout_in_ms(Millis(register_timeout));
  options.config.set_shutdown_barrier_timeout_in_ms(Millis(shutdown_barrier_timeout));
  if (max_step_lag < 0) throw py::value_error("max_step_lag must be >= 0 (0: no lag rule)");
  int64_t stuck_after_ms = Millis(stuck_after);  // None: no stall rule, as 0
  if (stuck_after.has_value() && *stuck_after > 0 && stuck_after_ms == 0) stuck_after_ms = 1;
  options.config.set_stuck_after_ms(stuck_after_ms);
  options.config.set_max_step_lag(max_step_lag);
  options.policy = PolicyOf(policy, recoverable_jobs);
  if (reconnect_window.has_value() && *reconnect_window < 0) {
    throw py::value_error("reconnect_window must be >= 0 seconds");
  }
  if (Millis(reconnect_window) > 0 && state_dir.empty() && ha_etcd.empty()) {
    throw StatusError(absl::InvalidArgumentError(
        "reconnect_window needs state_dir or ha_etcd: without them a restarted leader knows no "
        "task"));
  }
  options.state_dir = state_dir;
  options.reconnect_window = std::chrono::milliseconds(Millis(reconnect_window));
  LeaderEndpoint endpoint{.host = host, .port = static_cast<uint16_t>(port), .token = token};
  if (!http.empty()) endpoint.http = ValueOrThrow(ParseHttpAddress(http));
  caf::actor_system* system = ValueOrThrow(Runtime::Get().LeaderSystem());
  if (!ha_etcd.empty()) {
    HaOptions ha{.etcd = ha_etcd, .name = ha_name, .advertise = ha_advertise};
    if (ha_lease_ttl.has_value()) {
      if (!(*ha_lease_ttl >= 1 && *ha_lease_ttl <= 3600)) {
        throw py::value_error("ha_lease_ttl must be whole seconds from 1 to 3600 (default 2)");
      }
      ha.lease_ttl = ToDuration(ha_lease_ttl);
    }
    absl::StatusOr<std::unique_ptr<HaLeader>> started;
    {
      py::gil_scoped_release release;
      started = HaLeader::Start(*system, std::move(options), std::move(endpoint), std::move(ha));
    }
    return std::make_unique<PyLeader>(ValueOrThrow(std::move(started)));
  }
  if (!ha_name.empty() || ha_lease_ttl.has_value() || !ha_advertise.empty()) {
    throw StatusError(absl::InvalidArgumentError(
        "ha_name, ha_lease_ttl and ha_advertise need ha_etcd: etcd's members"));
  }
  absl::StatusOr<std::unique_ptr<Leader>> leader;
  {
    py::gil_scoped_release release;
    leader = Leader::Start(*system, std::move(options), std::move(endpoint));
  }
  return std::make_unique<PyLeader>(ValueOrThrow(std::move(leader)));
}

}  // namespace

void BindLeader(py::module_& m) {
  py::class_<PyLeader>(m, "Leader")
      .def(py::init(&MakeLeader), py::arg("jobs"), py::arg("host"), py::arg("port"),
           py::arg("heartbeat_timeout"), py::arg("register_timeout"),
           py::arg("shutdown_barrier_timeout"), py::arg("recoverable_jobs"), py::arg("policy"),
           py::arg("token"), py::arg("stuck_after"), py::arg("max_step_lag"), py::arg("state_dir"),
           py::arg("reconnect_window"), py::arg("http"), py::arg("settle_time"), py::arg("ha_etcd"),
           py::arg("ha_name"), py::arg("ha_lease_ttl"), py::arg("ha_advertise"))
      .def("stop", &PyLeader::Close, py::call_guard<py::gil_scoped_release>())
      .def("wait_active", &PyLeader::wait_active, py::arg("timeout"))
      .def_property_readonly("running", &PyLeader::running)
      .def_property_readonly("role", &PyLeader::role, py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("active_leader", &PyLeader::active_leader,
                             py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("recovery", &PyLeader::recovery,
                             py::call_guard<py::gil_scoped_release>())
      .def_readonly("address", &PyLeader::address_)
      .def_readonly("port", &PyLeader::port_)
      .def_readonly("incarnation", &PyLeader::incarnation_)
      .def_property_readonly("http_url", &PyLeader::http_url,
                             py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("ha_status", &PyLeader::ha_status,
                             py::call_guard<py::gil_scoped_release>());
}

}  // namespace muster::python
