#include "muster/net/agent/direct/direct_channel.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <utility>

#include <absl/strings/str_cat.h>
#include <absl/time/clock.h>

#include "muster/messages/direct/direct_frames.h"
#include "muster/net/transport/wire/tcp_dial.h"

namespace muster {
namespace {

// The longest a dial may take: a leader that does not accept within it is reached through the
// agent actor instead.
constexpr absl::Duration kDialTimeout = absl::Seconds(2);
// The largest answer read (a key listing may be large; the leader bounds what it stores).
constexpr uint32_t kMaxAnswerBytes = 1u << 30;
// A connection that carried a request or an answer larger than this is not kept: the leader
// closes it too (its buffers grew to the frame's size).
constexpr size_t kPooledFrameBytes = 64u << 10;
// A dial that failed keeps the route from dialling again for this long: a blocked port costs
// one dial, not one per call.
constexpr absl::Duration kDialBackoff = absl::Seconds(30);
// A call that is not a blocking get, sent before the agent left RUNNING, waits this much longer
// for its answer (a Shutdown's calls still get theirs; a lost leader's give up).
constexpr absl::Duration kRetireGrace = absl::Seconds(1);

// How often a waiting call asks whether it was interrupted.
constexpr int kInterruptSliceMs = 50;

enum class Io { kDone, kLost, kTimedOut, kInterrupted };

// What a call waits with: the route's retirement (a blocking get gives up at once; another
// call waits kRetireGrace more), its deadline, and who may interrupt it.
struct Wait {
  const DirectRoute* route;
  int retired_fd;
  absl::Time deadline;
  const std::function<bool()>* interrupted;
  bool get = false;
  bool retiring = false;  // the route retired while this call waited: its grace runs
};

// Waits until `fd` is ready for `events`, the route retires, the deadline passes or the caller
// is interrupted.
Io Await(int fd, short events, Wait& wait) {
  const bool interruptible = wait.interrupted != nullptr && *wait.interrupted;
  for (;;) {
    int timeout_ms = -1;
    if (wait.deadline != absl::InfiniteFuture()) {
      absl::Duration left = wait.deadline - absl::Now();
      if (left <= absl::ZeroDuration()) return wait.retiring ? Io::kLost : Io::kTimedOut;
      timeout_ms = static_cast<int>(std::min<int64_t>(
          absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), 1 << 30));
    }
    if (interruptible && (timeout_ms < 0 || timeout_ms > kInterruptSliceMs)) {
      timeout_ms = kInterruptSliceMs;
    }
    pollfd fds[2] = {{fd, events, 0}, {wait.retired_fd, POLLIN, 0}};
    int ready = ::poll(fds, wait.retired_fd >= 0 ? 2 : 1, timeout_ms);
    if (ready < 0 && errno != EINTR) return Io::kLost;
    if (ready > 0 && wait.retired_fd >= 0 && fds[1].revents != 0) {
      if (wait.get) return Io::kLost;
      wait.retired_fd = -1;
      if (absl::Now() + kRetireGrace < wait.deadline) {
        wait.deadline = absl::Now() + kRetireGrace;
        wait.retiring = true;
      }
      continue;
    }
    if (ready > 0 && fds[0].revents != 0) return Io::kDone;
    if (interruptible && (*wait.interrupted)()) return Io::kInterrupted;
  }
}

// `any`: some of the bytes left.
Io WriteAll(int fd, const std::string& bytes, Wait& wait, bool* any) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      *any = true;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (Io io = Await(fd, POLLOUT, wait); io != Io::kDone) return io;
      continue;
    }
    return Io::kLost;
  }
  return Io::kDone;
}

// Receives into `out` what the socket holds, up to `size` bytes: kDone with `*got` > 0, kLost
// when the connection ended, and kTimedOut (`*got` 0) when nothing is there yet.
Io ReceiveSome(int fd, char* out, size_t size, size_t* got) {
  for (;;) {
    ssize_t n = ::recv(fd, out, size, MSG_DONTWAIT);
    if (n > 0) {
      *got = static_cast<size_t>(n);
      return Io::kDone;
    }
    if (n == 0) return Io::kLost;
    if (errno == EINTR) continue;
    *got = 0;
    return errno == EAGAIN || errno == EWOULDBLOCK ? Io::kTimedOut : Io::kLost;
  }
}

// Reads one frame into `frame` (its header, then its payload): waits first (an answer is never
// there the moment its request left), then takes what the socket holds, usually the whole frame
// in one recv; a larger payload then goes straight into the frame, sized once.
Io ReadFrame(int fd, Wait& wait, std::string* frame, size_t* payload_bytes) {
  constexpr size_t kFirstRead = 16u << 10;
  char first[kFirstRead];
  size_t got = 0;
  while (got < kDirectHeaderBytes) {
    if (Io io = Await(fd, POLLIN, wait); io != Io::kDone) return io;
    size_t n = 0;
    Io io = ReceiveSome(fd, first + got, kFirstRead - got, &n);
    if (io == Io::kLost) return io;
    got += n;
  }
  const uint32_t length = DirectFrameLength({first, kDirectHeaderBytes});
  const size_t want = kDirectHeaderBytes + size_t{length};
  if (length > kMaxAnswerBytes || got > want) return Io::kLost;  // nothing may follow an answer
  *payload_bytes = length;
  frame->resize(want);
  std::memcpy(frame->data(), first, got);
  while (got < want) {
    size_t n = 0;
    Io io = ReceiveSome(fd, frame->data() + got, want - got, &n);
    if (io == Io::kLost) return io;
    if (n == 0) {
      if (Io waited = Await(fd, POLLIN, wait); waited != Io::kDone) return waited;
      continue;
    }
    got += n;
  }
  return Io::kDone;
}

// One request and its answer on `fd`. `sent`: the request left (wholly or in part);
// `answer_bytes`: the answer's size.
Io Exchange(int fd, const std::string& frame, Wait& wait, proto::DirectResponse* response,
            bool* sent, size_t* answer_bytes = nullptr) {
  *sent = false;
  if (wait.route->retired()) return Io::kLost;
  if (Io io = WriteAll(fd, frame, wait, sent); io != Io::kDone) return io;
  std::string answer;
  size_t length = 0;
  if (Io io = ReadFrame(fd, wait, &answer, &length); io != Io::kDone) return io;
  if (answer_bytes != nullptr) *answer_bytes = length;
  if (!response->ParseFromArray(answer.data() + kDirectHeaderBytes, static_cast<int>(length))) {
    return Io::kLost;
  }
  return Io::kDone;
}

// True when an idle connection is still fit for a call: nothing to read (an answer it should not
// have, or the leader's close) and no error.
bool StillOpen(int fd) {
  pollfd pfd{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&pfd, 1, 0) == 0;
}

void Configure(int fd) {
  KeepTcpAlive(fd);  // a get that waits without a timeout does not wait on a dead connection
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

}  // namespace

DirectRoute::DirectRoute(std::string host, uint16_t port, std::string token)
    : host_(std::move(host)),
      port_(port),
      token_(std::move(token)),
      retired_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

DirectRoute::~DirectRoute() {
  absl::MutexLock lock(&mutex_);
  for (int fd : idle_) ::close(fd);
  if (retired_fd_ >= 0) ::close(retired_fd_);
}

void DirectRoute::Retire() {
  if (retired_.exchange(true, std::memory_order_acq_rel)) return;
  uint64_t one = 1;
  if (retired_fd_ >= 0) (void)!::write(retired_fd_, &one, sizeof one);
}

void DirectChannel::SetRoute(std::shared_ptr<DirectRoute> route) {
  std::shared_ptr<DirectRoute> before = route_.exchange(std::move(route));
  if (before) before->Retire();
}

std::shared_ptr<DirectRoute> DirectChannel::Route() const { return route_.load(); }

DirectChannel::Result DirectChannel::Call(const proto::DirectRequest& request,
                                          const std::string& key, absl::Time deadline,
                                          const std::function<bool()>& interrupted, uint64_t hold) {
  Result result;
  std::shared_ptr<DirectRoute> route = Route();
  if (!route || route->retired() || route->retired_fd_ < 0) {
    result.detail = "no direct route to the leader";
    return result;
  }
  if (absl::Now() < absl::FromUnixNanos(route->dial_refused_until_.load())) {
    result.detail = "the leader's direct port could not be reached lately";
    return result;
  }
  uint64_t id = 0;
  int fd = -1;
  {
    absl::MutexLock lock(&route->mutex_);
    while (fd < 0 && !route->idle_.empty()) {
      fd = route->idle_.back();
      route->idle_.pop_back();
      if (!StillOpen(fd)) {
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0 && route->in_call_.size() >= DirectRoute::kMaxConnections) {
      result.detail = "every direct connection is in a call";
      return result;
    }
    id = ++route->next_call_;
    route->in_call_[id] = {.fd = fd, .key = key};
  }
  // Ends the call: the connection goes back to the pool when it is fit for another call.
  auto finish = [&](bool keep) {
    absl::MutexLock lock(&route->mutex_);
    auto it = route->in_call_.find(id);
    bool cancelled = it->second.cancelled;
    if (cancelled) result.detail = std::move(it->second.why);
    route->in_call_.erase(it);
    if (keep && !cancelled && !route->retired()) {
      route->idle_.push_back(fd);
    } else if (fd >= 0) {
      ::close(fd);
    }
    return cancelled;
  };
  // Registered first, then the hold asked: a cancel either marked the hold before (seen here)
  // or finds the call registered (CancelIf marks holds, then calls).
  if (std::optional<std::string> why = hold != 0 ? HoldCancelled(hold) : std::nullopt) {
    finish(/*keep=*/fd >= 0);  // an idle connection taken goes back
    result.outcome = Outcome::kCancelled;
    result.detail = *std::move(why);
    return result;
  }
  Wait wait{route.get(), route->retired_fd_, deadline, &interrupted, /*get=*/!key.empty()};
  if (fd < 0) {
    absl::Duration dial =
        std::min(kDialTimeout, std::max(deadline - absl::Now(), absl::Milliseconds(1)));
    auto dialled = DialTcp(route->host(), route->port(),
                           std::chrono::milliseconds(absl::ToInt64Milliseconds(dial)));
    if (!dialled) {
      // Not after a dial the call's own deadline cut short: the port may be fine.
      if (dial == kDialTimeout) {
        route->dial_refused_until_.store(absl::ToUnixNanos(absl::Now() + kDialBackoff));
      }
    } else {
      fd = *dialled;
      Configure(fd);
      absl::MutexLock lock(&route->mutex_);
      route->in_call_[id].fd = fd;
      if (route->in_call_[id].cancelled) ::shutdown(fd, SHUT_RDWR);
    }
    bool admitted = fd >= 0;
    Io io = Io::kDone;
    if (admitted && !route->token_.empty()) {
      proto::DirectRequest authenticate;
      authenticate.mutable_authenticate()->set_token(route->token_);
      proto::DirectResponse answer;
      bool sent = false;
      io = Exchange(fd, EncodeDirectFrame(authenticate), wait, &answer, &sent);
      admitted = io == Io::kDone && answer.code() == 0;
    }
    if (!admitted) {
      if (finish(false)) {
        result.outcome = Outcome::kCancelled;
      } else if (io == Io::kInterrupted) {
        result.outcome = Outcome::kCancelled;
        result.interrupted = true;
      } else {
        result.detail = absl::StrCat("no direct connection to ", route->host(), ":", route->port());
      }
      return result;
    }
  }
  bool sent = false;
  size_t answer_bytes = 0;
  const std::string frame = EncodeDirectFrame(request);
  Io io = Exchange(fd, frame, wait, &result.response, &sent, &answer_bytes);
  const bool small = frame.size() <= kPooledFrameBytes && answer_bytes <= kPooledFrameBytes;
  if (finish(io == Io::kDone && small)) {
    result.outcome = Outcome::kCancelled;
  } else if (io == Io::kInterrupted) {
    result.outcome = Outcome::kCancelled;
    result.interrupted = true;
  } else if (io == Io::kDone) {
    result.outcome = Outcome::kAnswered;
    answered_.fetch_add(1, std::memory_order_relaxed);
  } else if (io == Io::kTimedOut) {
    result.outcome = Outcome::kTimedOut;
  } else {
    result.outcome = sent ? Outcome::kLost : Outcome::kNotSent;
    result.detail = route->retired() ? "the agent left its leader"
                                     : "the direct connection to the leader was lost";
  }
  return result;
}

uint64_t DirectChannel::HoldGet(const std::string& key) {
  absl::MutexLock lock(&holds_mutex_);
  uint64_t hold = ++next_hold_;
  holds_[hold] = {.key = key};
  return hold;
}

bool DirectChannel::ReleaseGet(uint64_t hold) {
  absl::MutexLock lock(&holds_mutex_);
  auto it = holds_.find(hold);
  if (it == holds_.end()) return false;
  bool cancelled = it->second.cancelled;
  holds_.erase(it);
  return cancelled;
}

std::optional<std::string> DirectChannel::HoldCancelled(uint64_t hold) {
  absl::MutexLock lock(&holds_mutex_);
  auto it = holds_.find(hold);
  if (it == holds_.end() || !it->second.cancelled) return std::nullopt;
  return it->second.why;
}

void DirectChannel::CancelIf(const std::string* key, const std::string& why) {
  if (key != nullptr) {  // CancelAll: the agent leaves, and ends the gets the actor has itself
    absl::MutexLock lock(&holds_mutex_);
    for (auto& [id, held] : holds_) {
      if (held.key != *key) continue;
      if (!held.cancelled) held.why = why;
      held.cancelled = true;
    }
  }
  std::shared_ptr<DirectRoute> route = Route();
  if (!route) return;
  absl::MutexLock lock(&route->mutex_);
  for (auto& [id, call] : route->in_call_) {
    if (call.key.empty() || (key != nullptr && call.key != *key)) continue;
    if (!call.cancelled) call.why = why;
    call.cancelled = true;
    if (call.fd >= 0) ::shutdown(call.fd, SHUT_RDWR);
  }
}

void DirectChannel::Cancel(const std::string& key, const std::string& why) { CancelIf(&key, why); }

void DirectChannel::CancelAll(const std::string& why) {
  CancelIf(nullptr, why);
  SetRoute(nullptr);
}

}  // namespace muster
