#include "muster/net/leader/leader.h"

#include "muster/net/leader/job_spec.h"

#include <optional>

#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/actors/durability/coordinator_records.h"
#include "muster/actors/durability/state_store.h"
#include "muster/actors/observe/events/event_file.h"
#include "muster/actors/observe/events/event_log_actor.h"
#include "muster/actors/observe/events/event_writer_actor.h"
#include "muster/actors/observe/job_observer_actor.h"
#include "muster/messages/incarnation.h"
#include "muster/messages/status/status_codec.h"
#include "muster/net/leader/auth/token_gate_actor.h"
#include "muster/net/leader/direct/direct_endpoint.h"
#include "muster/net/leader/leader_endpoint.h"
#include "muster/net/process/protobuf_log.h"
#include "muster/net/process/thread_logger_guard.h"
#include "muster/net/transport/tls/certificate_identity.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

// "state dir D: recovered 4 tasks (3 connected), 12 keys in 2 directories and 5 barrier
// results; start 3 of this leader" (or "empty: a new job"). `where` names the state.
std::string RecoverySummary(const std::string& where, const proto::RecoveredState& state) {
  if (state.fresh()) return absl::StrCat(where, ": empty, a new job");
  int connected = 0;
  for (const auto& task : state.tasks()) connected += task.state() == proto::TASKSTATE_CONNECTED;
  int keys = 0;
  for (const auto& directory : state.directories()) keys += directory.entries_size();
  std::string summary =
      absl::StrCat(where, ": recovered ", state.tasks_size(), " tasks (", connected,
                   " connected, who have the reconnect window to come back), ", keys, " keys in ",
                   state.directories_size(), " directories and ", state.barriers_size(),
                   " barrier results; start ", state.leader().starts() + 1, " of this leader");
  if (std::optional<absl::Status> failed = RestoredClusterError(state.leader())) {
    absl::StrAppend(&summary, "; the job was told of a failure (", StatusText(*failed),
                    "): tasks that connect are told it too, until a new round");
  }
  return summary;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Leader>> Leader::Start(caf::actor_system& system,
                                                      CoordinatorOptions options,
                                                      LeaderEndpoint endpoint,
                                                      std::shared_ptr<StateStore> store) {
  ThreadLoggerGuard logger_guard;
  RateLimitProtobufLogs();  // a peer's strings that are not UTF-8 would flood the log
  if (absl::Status jobs = CheckElasticJobs(options.config); !jobs.ok()) return jobs;
  const TlsFiles tls_files = TlsFilesOf(system.config());
  if (absl::Status tls = CheckTlsFiles(tls_files); !tls.ok()) return tls;
  std::shared_ptr<EventFile> event_file;  // opened now: a path it cannot write fails the start
  if (!options.events_file.empty()) {
    absl::StatusOr<std::unique_ptr<EventFile>> opened = EventFile::Open(options.events_file);
    if (!opened.ok()) return opened.status();
    event_file = *std::move(opened);
  }
  bool bind_tasks = false;
  if (tls_files.enabled()) {
    absl::StatusOr<bool> binds = CaBindsTasks(tls_files.ca);
    if (!binds.ok()) return binds.status();
    bind_tasks = *binds;
  }
  auto* mpx = dynamic_cast<GuardedMultiplexer*>(&system.middleman().backend());
  if (bind_tasks && mpx == nullptr) {
    return absl::FailedPreconditionError(
        "per-task certificates need the node's guarded network layer (ConfigureNode)");
  }
  std::string recovery;
  caf::actor writer;
  auto metrics = std::make_shared<LeaderMetrics>();
  options.metrics = metrics;
  std::string where = store ? store->location() : absl::StrCat("state dir ", options.state_dir);
  if (!store && !options.state_dir.empty()) {
    absl::StatusOr<std::shared_ptr<StateStore>> opened = StateStore::Open(options.state_dir);
    if (!opened.ok()) return opened.status();
    store = *std::move(opened);
  }
  if (store) {
    absl::StatusOr<proto::RecoveredState> recovered = store->Load();
    if (!recovered.ok()) return recovered.status();
    // A restarted leader is the same leader: its tasks reconnect to the incarnation they knew.
    if (!recovered->fresh() && recovered->leader().incarnation() != 0) {
      options.incarnation = recovered->leader().incarnation();
    }
    recovery = RecoverySummary(where, *recovered);
    options.recovered = std::make_shared<const proto::RecoveredState>(*std::move(recovered));
    options.state_writer = SpawnStateWriter(system, std::move(store), metrics);
    writer = caf::actor_cast<caf::actor>(options.state_writer);
  }
  if (options.incarnation == 0) options.incarnation = NewIncarnation();
  uint64_t incarnation = options.incarnation;
  // The calendar time of the start, read once: for the observers, the event log and the record.
  const absl::Time started = absl::Now();
  options.started_unix_ms = absl::ToUnixMillis(started);
  ObserverOptions observed{.leader_incarnation = incarnation,
                           .start_unix_ms = options.started_unix_ms};
  // Every leader keeps its last events in memory; with an event file it appends them there too.
  EventLogActor events =
      SpawnEventLog(system, {.wall_start = started,
                             .writer = event_file ? SpawnEventWriter(system, std::move(event_file))
                                                  : EventWriterActor{}});
  options.events = events;
  std::unique_ptr<DirectEndpoint> direct;
  if (endpoint.publish && endpoint.direct_calls && !tls_files.enabled()) {
    absl::StatusOr<std::unique_ptr<DirectEndpoint>> opened =
        DirectEndpoint::Open(system, endpoint.host, endpoint.direct_port);
    if (!opened.ok()) {
      caf::anon_send_exit(events, caf::exit_reason::user_shutdown);
      return opened.status();
    }
    direct = *std::move(opened);
    options.direct_port = direct->port();
  }
  CoordinatorActor coordinator = SpawnCoordinator(system, std::move(options));
  CoordinatorActor published = coordinator;
  if (!endpoint.token.empty() || bind_tasks) {
    published =
        SpawnTokenGate(system, coordinator,
                       {.token = endpoint.token, .bind_tasks = bind_tasks, .metrics = metrics});
  }
  if (bind_tasks) {
    // Weak: the multiplexer outlives the gate and must not keep it.
    mpx->SetPeerIdentityListener([gate = caf::actor_cast<caf::weak_actor_ptr>(published)](
                                     const caf::node_id& node, const CertificateIdentity& identity,
                                     bool connected) {
      if (auto strong = gate.lock()) {
        TellGatePeerIdentity(caf::actor_cast<CoordinatorActor>(strong), node, identity, connected);
      }
    });
  }
  absl::StatusOr<uint16_t> port = uint16_t{0};
  if (endpoint.publish) port = PublishCoordinator(system, published, endpoint.port, endpoint.host);
  if (!port.ok()) {
    caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(events, caf::exit_reason::user_shutdown);
    return port.status();
  }
  std::string host = endpoint.host.empty() ? "0.0.0.0" : endpoint.host;
  auto leader = std::unique_ptr<Leader>(new Leader(
      system, std::move(coordinator), std::move(published), std::move(host), *port, incarnation));
  leader->published_on_port_ = endpoint.publish;
  leader->recovery_ = std::move(recovery);
  leader->state_writer_ = std::move(writer);
  leader->events_ = std::move(events);
  leader->metrics_ = std::move(metrics);
  if (direct) {
    direct->Serve(leader->coordinator_, endpoint.token);
    leader->direct_ = std::move(direct);
  }
  if (endpoint.http) {
    HttpOptions http = *std::move(endpoint.http);
    http.token = endpoint.token;
    http.tls = tls_files;
    JobObserverActor observer = SpawnJobObserver(system, leader->coordinator_, std::move(observed));
    std::string shown = http.leader_address.empty() ? leader->address() : http.leader_address;
    auto started = HttpEndpoint::Start(system, std::move(observer), leader->metrics_,
                                       std::move(shown), std::move(http));
    if (!started.ok()) return started.status();  // the leader stops with its destructor
    leader->http_ = *std::move(started);
  }
  return leader;
}

Leader::Leader(caf::actor_system& system, CoordinatorActor coordinator, CoordinatorActor published,
               std::string host, uint16_t port, uint64_t incarnation)
    : system_(system),
      coordinator_(std::move(coordinator)),
      published_(std::move(published)),
      host_(std::move(host)),
      port_(port),
      incarnation_(incarnation) {}

Leader::~Leader() { Stop(); }

uint16_t Leader::direct_port() const { return direct_ ? direct_->port() : 0; }

std::string Leader::address() const {
  return absl::StrCat(host_ == "0.0.0.0" ? "127.0.0.1" : host_, ":", port_);
}

void Leader::Stop(absl::Duration timeout) {
  if (!running_) return;
  running_ = false;
  ThreadLoggerGuard logger_guard;
  if (http_) http_->Stop();  // its requests wait for the observer, which needs the coordinator
  if (published_on_port_) UnpublishCoordinator(system_, published_, port_);
  if (direct_) direct_->Stop();
  caf::scoped_actor self{system_};
  self->monitor(coordinator_);
  if (state_writer_) self->monitor(state_writer_);  // stopped with the coordinator's children
  caf::anon_send_exit(coordinator_, caf::exit_reason::user_shutdown);
  int waiting = state_writer_ ? 2 : 1;
  bool timed_out = false;
  self->receive_while([&] { return waiting > 0 && !timed_out; })(
      [&](caf::down_msg& msg) {
        if (msg.source == coordinator_.address() ||
            (state_writer_ && msg.source == state_writer_.address())) {
          --waiting;
        }
      },
      caf::after(absl::ToChronoNanoseconds(timeout)) >> [&] { timed_out = true; });
  state_writer_ = nullptr;
  // Last: the event log holds the coordinator's last events and writes out what it has.
  self->monitor(events_);
  caf::anon_send_exit(events_, caf::exit_reason::user_shutdown);
  bool events_down = timed_out;
  self->receive_while([&] { return !events_down; })(
      [&](caf::down_msg& msg) { events_down = msg.source == events_.address(); },
      caf::after(absl::ToChronoNanoseconds(timeout)) >> [&] { events_down = true; });
}

}  // namespace muster
