// CAF's network backend with Muster's guards in front of the protocol (CAF 0.17 has no limits of
// its own on what a peer may send):
//  - every frame is checked by a FrameGuard before CAF reads it: a header that announces a
//    payload over WireLimits::max_frame_bytes (or a handshake over max_handshake_bytes, or
//    anything but a handshake first) closes the connection before its payload is allocated;
//  - an accepted connection that has not completed its handshake within
//    WireLimits::handshake_timeout_ms is closed (half a header, one byte a second, idle);
//  - on an accepted connection, a large payload is read as its bytes arrive (FrameAssembler),
//    within a budget for all connections together (WireLimits::max_unfinished_frame_bytes) and
//    a deadline for each chunk (frame_progress_timeout_ms); one peer address may hold at most
//    max_connections_per_host connections;
//  - when the process is out of file descriptors, new connections are accepted and closed at
//    once (a spare descriptor is kept for it) instead of spinning the network thread, and the
//    existing ones keep being served.
//  - with TLS files configured (NodeOptions::tls), every connection is mutual TLS (see
//    net/transport/tls/tls_context.h): the guards read the decrypted frames; a peer that fails the
//    TLS handshake (plain TCP, a certificate of another CA, none) gets a closed connection.
//  - an actor marked network-hosted (actors/caf/placement.h) that is woken on the network thread is
//    run there, in the same turn of the event loop, instead of waking a scheduler thread.
// Each refusal is logged to stderr, at most one line a second. ConfigureNode installs it; the
// limits come from the configuration keys set there (see NodeOptions::wire_limits).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <absl/base/thread_annotations.h>
#include <absl/container/flat_hash_map.h>
#include <absl/synchronization/mutex.h>
#include <caf/actor_system.hpp>
#include <caf/io/network/default_multiplexer.hpp>

#include "muster/actors/observe/leader_metrics.h"
#include "muster/net/transport/tls/tls_context.h"
#include "muster/net/transport/tls/tls_session.h"
#include "muster/net/transport/wire/frame_guard.h"

namespace muster {

class GuardedScribe;
class HandshakeSweeper;

// What a node's wire guard counted (GuardedMultiplexer::Stats).
struct WireStats {
  int64_t open_inbound = 0;  // accepted connections open now
  std::array<uint64_t, static_cast<size_t>(Refusal::kCount)> refused{};  // by Refusal
};

// The TLS files of a node's connections, kept in its configuration (muster.tls-cert, -key,
// -ca) between ConfigureNode and the multiplexer.
void SetTlsFiles(caf::actor_system_config& cfg, const TlsFiles& files);
TlsFiles TlsFilesOf(const caf::actor_system_config& cfg);

// The scheduler of a node configured by ConfigureNode: CAF's own, as `scheduler.policy` says
// (work sharing, work stealing, or the test coordinator), except that a network-hosted actor
// handed to it on the network thread stays on that thread (GuardedMultiplexer::
// AdoptOnNetworkThread).
caf::actor_system::module* MakeNodeScheduler(caf::actor_system& system);

class GuardedMultiplexer : public caf::io::network::default_multiplexer {
 public:
  explicit GuardedMultiplexer(caf::actor_system* system);
  ~GuardedMultiplexer() override;

  // Outgoing connections (this node dialed): frames are checked, without a size limit.
  caf::io::scribe_ptr new_scribe(caf::io::network::native_socket fd) override;
  // Dials with DialTcp, waiting at most NodeOptions::connect_timeout (CAF's own connect blocks
  // its caller for as long as the kernel retries a SYN).
  caf::expected<caf::io::scribe_ptr> new_tcp_scribe(const std::string& host,
                                                    uint16_t port) override;
  // Listening sockets: connections they accept get the full guard.
  caf::io::doorman_ptr new_doorman(caf::io::network::native_socket fd) override;
  caf::expected<caf::io::doorman_ptr> new_tcp_doorman(uint16_t port, const char* in,
                                                      bool reuse_addr) override;

  // On the network thread: hosted actors (actors/caf/placement.h), brokers and posted functions go
  // to the loop's local queue; everything else as CAF does.
  void exec_later(caf::resumable* job) override;
  // The node's scheduler calls this first: true if `job` is a hosted actor and the caller is
  // the network thread, in which case the job (and the caller's reference) joined the loop's
  // queue. CAF hands actors to the scheduler without an execution unit when, for example, the
  // proxy of a remote actor dies with its connection.
  static bool AdoptOnNetworkThread(caf::resumable* job);
  // Then this, off the actor's own network thread: true if `job` is a pinned actor
  // (actors/caf/placement.h) of a system whose loop is serving, in which case the job (and the
  // caller's reference) was posted to that loop through its wake-up pipe.
  static bool PostToNetworkThread(caf::resumable* job);
  // CAF's event loop, plus: each turn drains the local queue completely, then the writes that
  // connections deferred during the turn go out, each connection's in one system call.
  void run() override;

  const WireLimits& limits() const { return limits_; }
  std::chrono::milliseconds connect_timeout() const { return connect_timeout_; }
  // The actors this node published (PublishCoordinator adds them): what a peer that connected to
  // this node may send messages to (FrameGuard).
  PublishedActors& published() { return published_; }
  // This node's id as CAF serializes it in handshakes (FrameGuard's own_node).
  const std::string& own_node() const { return own_node_; }
  // A TLS session for a new connection on `fd`; null when this node does not use TLS.
  std::unique_ptr<TlsSession> NewTlsSession(caf::io::network::native_socket fd,
                                            TlsSession::Role role);

  // Internal. The deadlines of accepted connections (their handshake, a payload's next chunk).
  // Watch and SweepDeadlines run on the multiplexer's thread; a scribe may be destroyed on any
  // thread, so it unregisters itself (Unwatch) under the lock. No reference is held: a watched
  // connection never keeps its broker alive. Watch registers `scribe` (when `*id` is 0) and has
  // the sweeper look at it at `deadline`; the sweep asks the scribe for its deadline then
  // (GuardedScribe::Deadline), closes it when that has passed, looks again later when it moved,
  // and forgets it when it has none.
  void Watch(GuardedScribe* scribe, std::chrono::steady_clock::time_point deadline, uint64_t* id);
  void Unwatch(uint64_t id);
  void SweepDeadlines();
  // The budget of bytes held for payloads still arriving, over every connection
  // (WireLimits::max_unfinished_frame_bytes). False, and nothing taken, when `bytes` more would
  // pass it.
  bool ReserveFrameBytes(size_t bytes);
  void ReleaseFrameBytes(size_t bytes);
  // The connections of each peer address (WireLimits::max_connections_per_host). False, and
  // nothing counted, when `host` holds the limit already.
  bool AdmitHost(const std::string& host);
  void ReleaseHost(const std::string& host);
  // Logs `what` (at most a line a second); with a reason, also counts the refusal (Stats).
  void Report(const std::string& what);
  void Report(Refusal why, const std::string& what);
  // The accepted connections open now and the refusals so far of `system`'s multiplexer (all
  // zero when it has none): the leader's metrics.
  static WireStats Stats(caf::actor_system& system);
  // Binding peers to their certificates (per-task certificates, net/leader/auth/peer_identities.h).
  // With a listener set, each accepted TLS connection holds its peer node's identity (who its
  // certificate names; Kind::kUnknown when it names nobody usable) once the node's handshake
  // passed the guard, before CAF reads it (so before any message of the connection), and the
  // listener hears of it (`connected`), and again when the connection is gone. A node is held
  // under one identity at a time: a connection whose handshake names a node that connections of
  // another certificate hold, or a node beyond kMaxHeldNodes, is refused (HoldPeerIdentity
  // false), so no connection can speak for a node the listener knows as someone else. Called on
  // the network thread, and on any thread for a connection that is gone. Set the listener before
  // publishing; without one nothing is held.
  // The bytes of large frames read so far from the connections this node dialed to `node`, as
  // they arrive (never CAF's keep-alives, which its network thread sends even when the node's
  // actors are stuck): a peer that is sending a large frame is alive even while the frame keeps
  // its replies queued behind it. Grows while a connection to the node is open; 0 when there is
  // none, or `system` has no GuardedMultiplexer.
  static uint64_t BytesReadFrom(caf::actor_system& system, const caf::node_id& node);
  // A connection to `node` opens (its counter, shared by the node's connections) and closes.
  std::shared_ptr<std::atomic<uint64_t>> OpenBytesFrom(const caf::node_id& node);
  void CloseBytesFrom(const caf::node_id& node);

  static constexpr size_t kMaxHeldNodes = 1 << 17;
  using PeerIdentityListener = std::function<void(
      const caf::node_id& node, const CertificateIdentity& identity, bool connected)>;
  void SetPeerIdentityListener(PeerIdentityListener listener);
  bool HoldPeerIdentity(const caf::node_id& node, const CertificateIdentity& identity);
  void ReleasePeerIdentity(const caf::node_id& node, const CertificateIdentity& identity);
  // True on the network thread while run() serves the loop: a flush may wait for the turn's end.
  bool DefersFlushes() const;
  void DeferFlush(GuardedScribe* scribe);

 private:
  // Takes `job` into the local queue if this is the network thread and the job belongs there.
  bool Adopt(caf::resumable* job, bool any_kind);
  // Runs the network thread's queue of hosted actors, brokers and posted functions.
  void DrainLocal();
  void FlushDeferredWrites();
  void DropDeferredWrites();

  WireLimits limits_;
  std::chrono::milliseconds connect_timeout_{2000};
  PublishedActors published_;
  std::string own_node_;
  std::unique_ptr<TlsContext> tls_;
  // Before the members that hold scribes: a scribe destroyed with them releases its identity.
  struct HeldIdentity {
    CertificateIdentity identity;
    int connections = 0;
  };
  absl::Mutex identities_mutex_;
  std::shared_ptr<const PeerIdentityListener> identity_listener_ ABSL_GUARDED_BY(identities_mutex_);
  absl::flat_hash_map<caf::node_id, HeldIdentity> held_identities_
      ABSL_GUARDED_BY(identities_mutex_);
  absl::Mutex bytes_mutex_;
  struct BytesFrom {
    std::shared_ptr<std::atomic<uint64_t>> counter;
    int connections = 0;
  };
  absl::flat_hash_map<caf::node_id, BytesFrom> bytes_from_ ABSL_GUARDED_BY(bytes_mutex_);
  absl::Mutex watch_mutex_;
  absl::flat_hash_map<uint64_t, GuardedScribe*> watched_ ABSL_GUARDED_BY(watch_mutex_);
  // When to look at which watched connection, earliest first; ids no longer watched are skipped.
  using Deadline = std::pair<std::chrono::steady_clock::time_point, uint64_t>;
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> deadlines_;
  std::atomic<uint64_t> unfinished_frame_bytes_{0};
  absl::Mutex hosts_mutex_;
  absl::flat_hash_map<std::string, uint32_t> connections_per_host_ ABSL_GUARDED_BY(hosts_mutex_);
  uint64_t next_watch_id_ = 1;
  std::unique_ptr<HandshakeSweeper> sweeper_;
  std::deque<caf::intrusive_ptr<caf::resumable>> local_;
  std::atomic<bool> serving_{false};  // run() serves the loop (PostToNetworkThread may post)
  std::vector<caf::intrusive_ptr<GuardedScribe>> deferred_flushes_;
  std::atomic<int64_t> open_inbound_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Refusal::kCount)> refused_{};
  absl::Mutex report_mutex_;
  std::chrono::steady_clock::time_point last_report_ ABSL_GUARDED_BY(report_mutex_){};
  int suppressed_reports_ ABSL_GUARDED_BY(report_mutex_) = 0;
};

}  // namespace muster
