#include "muster/net/agent/session/etcd/ha_registry_reader.h"

#include <memory>
#include <utility>
#include <vector>

#include <absl/strings/str_join.h>
#include <absl/time/time.h>
#include <caf/typed_event_based_actor.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/session/etcd/etcd_security.h"
#include "muster/net/agent/session/etcd/ha_leader_registry.h"

namespace muster {
namespace {

HaRegistryReaderActor::behavior_type Reader(HaRegistryReaderActor::pointer self,
                                            std::shared_ptr<const EtcdSecurity> security) {
  return {[self, security](caf::get_atom, const std::string& url,
                           caf::timespan timeout) -> caf::result<std::string> {
    absl::StatusOr<std::vector<std::string>> read =
        security != nullptr ? ReadHaLeadersThroughGateway(url, absl::FromChrono(timeout), *security)
                            : ReadHaLeadersThroughGateway(url, absl::FromChrono(timeout));
    auto promise = self->make_response_promise<std::string>();
    if (read.ok()) {
      promise.deliver(absl::StrJoin(*read, ","));
    } else {
      promise.deliver(ToError(read.status()));
    }
    self->quit();  // one read each
    return promise;
  }};
}

}  // namespace

HaRegistryReaderActor SpawnHaRegistryReader(caf::actor_system& system,
                                            std::shared_ptr<const EtcdSecurity> security) {
  return system.spawn<caf::detached>(Reader, std::move(security));
}

}  // namespace muster
