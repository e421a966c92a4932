// The agent's heartbeats: one every heartbeat_timeout/2 from an actor timer while RUNNING,
// carrying the task's last step. The timeout is the agent's own, or the one the leader sent
// with its register response. A reply with another leader incarnation, an error of the
// leader, or silence for a whole heartbeat timeout puts the agent in ERROR. With
// one_way_heartbeats the beats are not requests: the leader pushes an error instead of
// answering (a pushed error puts the agent in ERROR), and CAF's connection timeout detects a
// silent leader (a lost leader puts the agent in ERROR).
#include <chrono>
#include <string>

#include <absl/strings/str_cat.h>
#include <caf/send.hpp>

#include "muster/messages/status/status_codec.h"
#include "muster/net/agent/actor/agent_state.h"
#include "muster/net/agent/agent.h"
#include "muster/net/transport/wire/guarded_multiplexer.h"

namespace muster {
namespace {

void ScheduleBeat(AgentPointer self) {
  auto& st = self->state;
  self->delayed_send(self, st.heartbeat_timeout / 2, beat_atom::value, st.beat_generation);
}

std::string Millis(caf::timespan span) {
  return absl::StrCat(std::chrono::duration_cast<std::chrono::milliseconds>(span).count(), " ms");
}

}  // namespace

absl::Status AdoptHeartbeatTimeout(AgentPointer self, const proto::RegisterTaskResponse& response) {
  auto& st = self->state;
  const caf::timespan own = st.config.heartbeat_timeout;
  const caf::timespan leaders = std::chrono::milliseconds(response.heartbeat_timeout_ms());
  if (own > caf::timespan{0}) {
    if (leaders > caf::timespan{0} && own > leaders) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Connect() of ", TaskName(st.config.task), ": the agent's heartbeat timeout (",
          Millis(own), ") is longer than the heartbeat timeout of the leader at ",
          LeaderAddress(self), " (", Millis(leaders),
          "): it would beat too rarely and the leader would judge the task stale. Leave the "
          "agent's heartbeat_timeout unset to use the leader's, set it to at most ",
          Millis(leaders), ", or start the leader with a longer --heartbeat-timeout."));
    }
    st.heartbeat_timeout = own;
    st.one_way_heartbeats = st.config.one_way_heartbeats;
    return absl::OkStatus();
  }
  st.heartbeat_timeout = leaders > caf::timespan{0} ? leaders : std::chrono::seconds(10);
  // CAF's connection timeout was set before the leader's timeout was known: beat one-way only
  // when it still detects a silent leader in time.
  st.one_way_heartbeats =
      st.config.one_way_heartbeats && MayBeatOneWay(self->system().config(), st.heartbeat_timeout);
  return absl::OkStatus();
}

void StopHeartbeats(AgentPointer self) { ++self->state.beat_generation; }

void StartHeartbeats(AgentPointer self) {
  self->state.last_heartbeat_ok = self->clock().now();
  if (self->state.leader) {
    self->state.leader_bytes_seen =
        GuardedMultiplexer::BytesReadFrom(self->home_system(), self->state.leader.node());
  }
  StopHeartbeats(self);
  ScheduleBeat(self);
}

void HandleBeat(AgentPointer self, uint64_t generation) {
  auto& st = self->state;
  if (generation != st.beat_generation || !st.leader) return;  // only RUNNING takes beats
  proto::HeartbeatRequest beat;
  *beat.mutable_source_task() = st.config.task;
  beat.set_incarnation(st.config.incarnation);
  if (int64_t step = st.config.progress->step.load(); step != AgentProgress::kNoStep) {
    beat.set_step(step);
  }
  if (st.one_way_heartbeats && !st.config.heartbeat_batcher) {
    // Through untyped handles: the leader answers a one-way beat with nothing (its typed
    // interface names the reply of the request).
    caf::send_as(caf::actor_cast<caf::actor>(self), caf::actor_cast<caf::actor>(st.leader),
                 std::move(beat));
    ScheduleBeat(self);
    return;
  }
  // Answers about a leader that is gone (lost, or replaced after a reconnect) are ignored.
  CoordinatorActor leader = st.leader;
  auto current = [self, leader] { return self->state.leader == leader; };
  auto on_reply = [self, current](const proto::HeartbeatResponse& response) {
    auto& st = self->state;
    if (!current()) return;
    st.last_heartbeat_ok = self->clock().now();
    if (response.leader_incarnation() != st.leader_incarnation) {
      SetError(self, absl::AbortedError(
                         absl::StrCat("Leader incarnation ID mismatch: the Muster leader at ",
                                      LeaderAddress(self), " has restarted; restart this task.")));
    }
  };
  auto on_error = [self, current, leader](caf::error& error) {
    if (!current()) return;
    auto& st = self->state;
    absl::Status status = ToStatus(error);
    if (GetCoordinationError(status)) return SetError(self, status);
    // An unanswered beat is no verdict while a large frame from the leader still arrives: the
    // answer waits behind it on a slow link.
    const uint64_t heard = GuardedMultiplexer::BytesReadFrom(self->home_system(), leader.node());
    if (heard != st.leader_bytes_seen) {
      st.leader_bytes_seen = heard;
      st.last_heartbeat_ok = self->clock().now();
      return;
    }
    if (self->clock().now() - st.last_heartbeat_ok >= st.heartbeat_timeout) SetError(self, status);
  };
  auto timeout = st.heartbeat_timeout / 2;
  if (st.config.heartbeat_batcher) {
    self->request(st.config.heartbeat_batcher, timeout, beat, st.leader).then(on_reply, on_error);
  } else {
    self->request(st.leader, timeout, beat).then(on_reply, on_error);
  }
  ScheduleBeat(self);
}

}  // namespace muster
