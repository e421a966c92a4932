#include "muster/net/leader/leader.h"

#include <absl/strings/str_cat.h>
#include <caf/io/middleman.hpp>
#include <caf/scoped_actor.hpp>

#include "muster/messages/incarnation.h"
#include "muster/net/leader/leader_endpoint.h"
#include "muster/net/leader/token_gate_actor.h"
#include "muster/net/process/thread_logger_guard.h"
#include "muster/net/transport/guarded_multiplexer.h"

namespace muster {

absl::StatusOr<std::unique_ptr<Leader>> Leader::Start(caf::actor_system& system,
                                                      CoordinatorOptions options,
                                                      LeaderEndpoint endpoint) {
  ThreadLoggerGuard logger_guard;
  if (absl::Status tls = CheckTlsFiles(TlsFilesOf(system.config())); !tls.ok()) return tls;
  if (options.incarnation == 0) options.incarnation = NewIncarnation();
  uint64_t incarnation = options.incarnation;
  CoordinatorActor coordinator = SpawnCoordinator(system, std::move(options));
  CoordinatorActor published = coordinator;
  if (!endpoint.token.empty()) {
    published = SpawnTokenGate(system, coordinator, std::move(endpoint.token));
  }
  auto port = PublishCoordinator(system, published, endpoint.port, endpoint.host);
  if (!port.ok()) {
    caf::anon_send_exit(coordinator, caf::exit_reason::user_shutdown);
    return port.status();
  }
  std::string host = endpoint.host.empty() ? "0.0.0.0" : endpoint.host;
  return std::unique_ptr<Leader>(new Leader(system, std::move(coordinator), std::move(published),
                                            std::move(host), *port, incarnation));
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

std::string Leader::address() const {
  return absl::StrCat(host_ == "0.0.0.0" ? "127.0.0.1" : host_, ":", port_);
}

void Leader::Stop(absl::Duration timeout) {
  if (!running_) return;
  running_ = false;
  ThreadLoggerGuard logger_guard;
  system_.middleman().unpublish(published_, port_);
  caf::scoped_actor self{system_};
  self->monitor(coordinator_);
  caf::anon_send_exit(coordinator_, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive_while([&] { return !down; })(
      [&](caf::down_msg& msg) { down = msg.source == coordinator_.address(); },
      caf::after(absl::ToChronoNanoseconds(timeout)) >> [&] { down = true; });
}

}  // namespace muster
