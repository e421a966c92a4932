// Checks the frames of CAF's network protocol (BASP) on a connection before CAF sees them, and
// refuses (the connection is then closed):
//  - a header that announces a payload over the limit, before anything is allocated for it;
//  - a first frame that is not the handshake, or a handshake without payload.
// From a peer that connected to us, also:
//  - a routed message, which could claim any sender;
//  - a direct message that CAF would handle as a control message of the actor system instead
//    of passing it to the receiver's behaviour: an exit (with reason kill, it ends the receiver
//    before any handler of its own runs), a down message, a link or unlink, a receive timeout,
//    a stream message, an error that answers no request. Muster's nodes never send these to
//    each other: CAF reports a remote actor's death in a frame of its own, not as a message;
//  - a message with a forwarding stack (its result would go on to other actors), or with a
//    stream message id (CAF would read it as a stream message), or whose payload the guard
//    cannot read;
//  - a handshake that claims this node's own id (CAF takes a peer's node id from its handshake),
//    and monitor or down frames about another node than the peer's or this one (else it could
//    end the proxies of another node's actors, as if that node's agent had died);
//  - on a node that published its actors through PublishedActors (the leader), a message to
//    any other actor, unless it answers a request: CAF 0.17 delivers a message by id to any
//    local actor that ever sent one to another node (the coordinator behind the token gate, a
//    task actor), and to the actor system's named actors (its config server).
// Pure logic; GuardedMultiplexer applies it to every connection.
//
// A BASP frame is a 32-byte header (operation at byte 0, payload length big-endian at bytes
// 4-7) followed by the payload it announces; CAF reads exactly one of the two at a time, so
// each chunk the guard sees is one header or one payload.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include <absl/status/status.h>
#include <absl/synchronization/mutex.h>
#include <absl/types/span.h>

namespace muster {

// What a message's frame adds around a request (CAF's header, the message's type names, the
// request's envelope), at most: a request may be the frame limit less this.
inline constexpr size_t kFrameEnvelopeBytes = 4096;

struct WireLimits {
  // The largest payload a peer may announce once connected. The default leaves room for a
  // 4 MiB value plus its request around it. 0: no limit.
  uint32_t max_frame_bytes = 8u << 20;
  // The largest handshake a peer may announce before it has completed one.
  uint32_t max_handshake_bytes = 64u << 10;
  // A peer that has not completed its handshake after this many milliseconds is disconnected.
  int64_t handshake_timeout_ms = 10'000;
  // The rest apply to the connections a node accepts. A large payload is read as its bytes
  // arrive (net/transport/wire/frame_assembler.h); the bytes held for payloads still arriving,
  // summed over every connection, may not pass this: the chunk that would is refused and its
  // connection closed. 0: no limit.
  uint64_t max_unfinished_frame_bytes = uint64_t{256} << 20;
  // Once a large payload is announced, each chunk of it (at most 64 KiB) must arrive within
  // this many milliseconds of the last, or the connection is closed: a peer that trickles a
  // frame does not keep it open forever. 0: no deadline.
  int64_t frame_progress_timeout_ms = 10'000;
  // The most connections one peer address may hold open at once; further ones are closed as
  // they are accepted. 0: no limit.
  uint32_t max_connections_per_host = 2048;
};

// The ids of the actors a node published (the leader's coordinator or its token gate): what
// its peers may send messages to. Shared by a node's connections: added to under a lock, read
// without one on every message.
class PublishedActors {
 public:
  // Published at once. A leader that stops (an HA leader's front, replaced at each step down)
  // retires its id: still accepted (a message already on its way is bounced by CAF, not a
  // reason to close the connection it shares with other leaders' agents), and its place is
  // taken by the next one added when no other is free.
  static constexpr int kCapacity = 64;

  // False when kCapacity actors are published and none retired.
  bool Add(uint64_t actor_id) {
    absl::MutexLock lock(&add_mutex_);
    const int n = count_.load(std::memory_order_relaxed);
    int at = n;
    if (n == kCapacity) {
      at = FindRetired();
      if (at < 0) return false;
    }
    // A reader sees the retired id or the new one in that place; the others never move.
    ids_[at].store(actor_id, std::memory_order_release);
    retired_[at] = false;
    restricted_.store(true, std::memory_order_relaxed);
    if (at == n) count_.store(n + 1, std::memory_order_release);
    return true;
  }
  // Retires `actor_id` (unpublished). False when it is not published.
  bool Remove(uint64_t actor_id) {
    absl::MutexLock lock(&add_mutex_);
    const int at = FindPublished(actor_id);
    if (at < 0) return false;
    retired_[at] = true;
    return true;
  }
  // Takes `actor_id` out for good (it was never reachable: its port did not open), its place
  // free. False when it is not published.
  bool Forget(uint64_t actor_id) {
    absl::MutexLock lock(&add_mutex_);
    const int at = FindPublished(actor_id);
    if (at < 0) return false;
    ids_[at].store(kNoActor, std::memory_order_release);
    retired_[at] = true;
    return true;
  }
  // Before any was added, every actor may receive (CAF's own rule), so a node that publishes
  // only through CAF keeps working; once one was, only those published or retired.
  bool MayReceive(uint64_t actor_id) const {
    const int n = count_.load(std::memory_order_acquire);
    if (n == 0) return !restricted_.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      if (ids_[i].load(std::memory_order_acquire) == actor_id) return true;
    }
    return false;
  }

 private:
  static constexpr uint64_t kNoActor = ~uint64_t{0};  // an id CAF never gives

  // The place of published (not retired) `actor_id`; -1 when none. Under the mutex.
  int FindPublished(uint64_t actor_id) const {
    const int n = count_.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      if (!retired_[i] && ids_[i].load(std::memory_order_relaxed) == actor_id) return i;
    }
    return -1;
  }
  // The place of the retired id to give away (the lowest); -1 when none. Under the mutex.
  int FindRetired() const {
    for (int i = 0; i < kCapacity; ++i) {
      if (retired_[i]) return i;
    }
    return -1;
  }

  absl::Mutex add_mutex_;
  std::array<std::atomic<uint64_t>, kCapacity> ids_{};
  std::array<bool, kCapacity> retired_{};  // guarded by add_mutex_
  std::atomic<int> count_{0};
  std::atomic<bool> restricted_{false};  // an actor was added once
};

class FrameGuard {
 public:
  static constexpr size_t kHeaderSize = 32;

  // `inbound`: the peer connected to us, so its first frame must be its client handshake.
  // `published`: for an inbound connection, the actors its messages may go to (null: any).
  // `own_node`: this node's id as CAF serializes it (empty: not checked). A peer may not claim
  // it in its handshake, and its monitor and down frames must be about itself and this node.
  FrameGuard(const WireLimits& limits, bool inbound, const PublishedActors* published = nullptr,
             std::string own_node = {})
      : limits_(limits), inbound_(inbound), published_(published), own_node_(std::move(own_node)) {}

  // Checks one chunk as CAF is about to receive it. OK: pass it on. Otherwise the reason to
  // close the connection (the chunk must not reach CAF).
  absl::Status Check(absl::Span<const char> chunk);

  // The peer completed its handshake (its handshake frame and payload passed the checks).
  bool handshake_done() const { return handshake_done_; }
  // The last chunk checked was a header that announced a payload: the payload comes next.
  bool awaiting_payload() const { return in_payload_; }

  // The node id the peer gave in its handshake, as CAF serializes it (empty: not checked). On a
  // connection this node dialed: the server handshake's whole payload, which begins with it.
  const std::string& peer_node() const { return peer_node_; }

 private:
  absl::Status CheckHeader(absl::Span<const char> header);
  // The payload of a direct message from an inbound peer: its forwarding stack (empty), then
  // the message's type names (caf::message::save), read without allocating the message.
  absl::Status CheckDirectMessage(absl::Span<const char> payload) const;
  // A payload of an inbound connection that names nodes: the client handshake (the peer's own
  // id), a monitor or down frame (the peer's id, then this node's).
  absl::Status CheckNodes(absl::Span<const char> payload);

  WireLimits limits_;
  bool inbound_;
  const PublishedActors* published_;
  std::string own_node_;
  std::string peer_node_;  // the id the peer gave in its handshake
  bool handshake_done_ = false;
  bool in_payload_ = false;
  uint8_t payload_operation_ = 0;
  uint64_t payload_message_id_ = 0;  // bytes 8-15 of a direct message's header
  uint8_t payload_flags_ = 0;        // byte 3 (0x01: the receiver is named, not numbered)
  uint64_t payload_receiver_ = 0;    // bytes 24-31: the receiving actor's id (or name)
};

}  // namespace muster
