#include "muster/tools/serve/serve_ha.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>

#include <absl/flags/flag.h>
#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>
#include <caf/scoped_actor.hpp>

#include "muster/net/ha/etcd/etcd_grpc_member.h"
#include "muster/net/ha/ha_leader.h"
#include "muster/net/process/shutdown_signals.h"
#include "muster/tools/common/cli_common.h"
#include "muster/tools/serve/serve_command.h"

ABSL_FLAG(std::string, ha_etcd, "",
          "Run as one leader of an HA job on etcd: its members' HOST:PORT,HOST:PORT. Every leader "
          "given the same --ha-name campaigns; one serves, the others stand by and take over "
          "when it is lost. The job's state lives in etcd (docs/operations.md, High availability). "
          "https:// endpoints, or MUSTER_ETCD_CACERT, turn TLS on; MUSTER_ETCD_CERT and "
          "MUSTER_ETCD_KEY give a client certificate, MUSTER_ETCD_USER and MUSTER_ETCD_PASSWORD "
          "(or MUSTER_ETCD_PASSWORD_FILE) etcd's user");
ABSL_FLAG(std::string, ha_name, "", "With --ha-etcd: the HA job's name, the same on every leader");
ABSL_FLAG(absl::Duration, ha_lease_ttl, absl::Seconds(2),
          "With --ha-etcd: a lost active leader is replaced after about this long");
ABSL_FLAG(std::string, ha_advertise, "",
          "With --ha-etcd: HOST:PORT the agents reach this leader at, as etcd names the active "
          "leader (default: --host:--port; with --host 0.0.0.0, this host's name)");

namespace muster::cli {
namespace {

constexpr char kCommand[] = "serve";

}  // namespace

bool HaRequested() { return !absl::GetFlag(FLAGS_ha_etcd).empty(); }

int ServeHa(caf::actor_system& system, const CoordinatorOptions& options, LeaderEndpoint endpoint,
            const std::string& description) {
  const std::string host = endpoint.host;
  HaOptions ha{.etcd = absl::GetFlag(FLAGS_ha_etcd),
               .name = absl::GetFlag(FLAGS_ha_name),
               .lease_ttl = absl::GetFlag(FLAGS_ha_lease_ttl),
               .advertise = absl::GetFlag(FLAGS_ha_advertise),
               .on_role = PrintLine};
  ha.etcd_member = NewEtcdGrpcMember;  // gRPC: the command links it anyway (muster_ha_grpc)
  // A leader that stopped campaigning on its own ends the process, with a failure.
  static std::atomic<bool> stopped_on_its_own{false};
  ha.on_stopped = [](const absl::Status&) {
    stopped_on_its_own = true;
    kill(getpid(), SIGTERM);  // the shutdown path below, through the signal forwarder
  };
  if (ha.name.empty()) {
    return ReportUsageError(
        kCommand, absl::InvalidArgumentError("--ha-etcd needs --ha-name: the HA job's name, the "
                                             "same on every leader of the job"));
  }
  auto leader = HaLeader::Start(system, options, std::move(endpoint), std::move(ha));
  if (!leader.ok()) return ReportFailure(kCommand, leader.status());
  std::printf("muster leader ready at %s:%u ha=%s address=%s\n", host.c_str(), (*leader)->port(),
              (*leader)->name().c_str(), (*leader)->address().c_str());
  std::fflush(stdout);
  PrintLine(description);
  {
    caf::scoped_actor self{system};
    ShutdownSignalForwarder forwarder{caf::actor_cast<caf::actor>(self)};
    self->receive([&](shutdown_atom, int signal) {
      PrintLine(absl::StrCat("muster leader shutting down (signal ", signal, ")"));
    });
  }
  (*leader)->Stop();
  return stopped_on_its_own ? kExitFailed : kExitOk;
}

}  // namespace muster::cli
