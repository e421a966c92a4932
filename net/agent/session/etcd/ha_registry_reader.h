// Reads an HA job's leaders from etcd for a leader session (leader_session_actor.h) that found
// none of the leaders it knows active: a leader may have started since the agent read them (one
// that replaced a lost host). Reading is an HTTP call that blocks (ReadHaLeadersThroughGateway),
// so a reader runs detached, on a thread of its own, for one read.
//
//   READY --(get, url, timeout)--> reads (blocking, at most `timeout`) --> answers, DONE (quits)
#pragma once

#include <memory>
#include <string>

#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

namespace muster {

struct EtcdSecurity;  // etcd_security.h

// Replies once with the leaders of the job at `url` ("etcd://ENDPOINTS/NAME"), the active one
// first, as "HOST:PORT,HOST:PORT", and quits. Possible errors: those of
// ReadHaLeadersThroughGateway (ha_leader_registry.h).
using HaRegistryReaderActor =
    caf::typed_actor<caf::replies_to<caf::get_atom, std::string, caf::timespan>::with<std::string>>;

// `security`: how to reach etcd (null: the environment's, read on the reader's thread).
HaRegistryReaderActor SpawnHaRegistryReader(caf::actor_system& system,
                                            std::shared_ptr<const EtcdSecurity> security);

}  // namespace muster
