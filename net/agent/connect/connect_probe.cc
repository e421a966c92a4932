#include "muster/net/agent/connect/connect_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <absl/strings/str_cat.h>
#include <absl/strings/strip.h>

#include "muster/net/transport/wire/tcp_dial.h"

namespace muster {

// One getaddrinfo_a request: glibc resolves it on a thread of its own; gai_error says when it is
// done. The strings and hints must outlive the request.
//
// A ThreadSanitizer build (make tsan) resolves with getaddrinfo instead, at once: glibc starts
// getaddrinfo_a's thread without the pthread_create that ThreadSanitizer intercepts, so the
// thread has no sanitizer state and its first malloc crashes.
struct ConnectProbe::Lookup {
  std::string name;
  std::string service;
  addrinfo hints{};
  gaicb request{};
  int resolved = EAI_INPROGRESS;  // the outcome of a synchronous lookup
};

namespace {

#ifdef MUSTER_THREAD_SANITIZER
constexpr bool kSynchronousLookup = true;
#else
constexpr bool kSynchronousLookup = false;
#endif

// Starts the lookup; 0 or a getaddrinfo error.
int StartLookup(gaicb* request, int* resolved) {
  if (kSynchronousLookup) {
    *resolved = getaddrinfo(request->ar_name, request->ar_service, request->ar_request,
                            &request->ar_result);
    return 0;
  }
  gaicb* list[] = {request};
  return getaddrinfo_a(GAI_NOWAIT, list, 1, nullptr);
}

// EAI_INPROGRESS, 0 once resolved, or the lookup's error.
int LookupState(gaicb* request, int resolved) {
  return kSynchronousLookup ? resolved : gai_error(request);
}

std::string ErrnoText(const char* what, int error) {
  return absl::StrCat(what, ": ", std::strerror(error));
}

}  // namespace

ConnectProbe::ConnectProbe(std::string host, uint16_t port) : port_(port) {
  absl::string_view bare = host;
  if (absl::ConsumePrefix(&bare, "[")) absl::ConsumeSuffix(&bare, "]");  // [::1]
  host_ = std::string(bare);
  sockaddr_storage numeric;
  if (NumericAddress(host_, port_, &numeric)) {
    addresses_.push_back(numeric);
    return;
  }
  lookup_ = std::make_unique<Lookup>();
  lookup_->name = host_;
  lookup_->service = std::to_string(port_);
  lookup_->hints.ai_family = AF_UNSPEC;
  lookup_->hints.ai_socktype = SOCK_STREAM;
  lookup_->hints.ai_flags = AI_NUMERICSERV;
  lookup_->request.ar_name = lookup_->name.c_str();
  lookup_->request.ar_service = lookup_->service.c_str();
  lookup_->request.ar_request = &lookup_->hints;
  if (int error = StartLookup(&lookup_->request, &lookup_->resolved); error != 0) {
    lookup_.reset();
    Finish(Outcome::kFailed, absl::StrCat("cannot resolve ", host_, ": ", gai_strerror(error)));
  }
}

ConnectProbe::~ConnectProbe() {
  CloseSocket();
  if (lookup_ == nullptr) return;
  int state = LookupState(&lookup_->request, lookup_->resolved);
  if (state == EAI_INPROGRESS && gai_cancel(&lookup_->request) == EAI_NOTCANCELED) {
    // glibc's thread still writes into the request: it keeps it, a few bytes, for good.
    (void)lookup_.release();
    return;
  }
  if (lookup_->request.ar_result != nullptr) freeaddrinfo(lookup_->request.ar_result);
}

ConnectProbe::Outcome ConnectProbe::Check() {
  if (outcome_ != Outcome::kPending) return outcome_;
  if (lookup_ != nullptr) {
    int state = LookupState(&lookup_->request, lookup_->resolved);
    if (state == EAI_INPROGRESS) return Outcome::kPending;
    return Resolved();
  }
  if (fd_ < 0) return ConnectNext();
  pollfd watched{.fd = fd_, .events = POLLOUT, .revents = 0};
  if (poll(&watched, 1, 0) == 0) return Outcome::kPending;  // zero timeout: never waits
  int error = 0;
  socklen_t size = sizeof(error);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &error, &size) != 0) error = errno;
  CloseSocket();
  if (error == 0) return Finish(Outcome::kReached);
  if (error == ECONNREFUSED) return ConnectNext();
  return Finish(Outcome::kFailed, ErrnoText("connect", error));
}

ConnectProbe::Outcome ConnectProbe::Resolved() {
  std::unique_ptr<Lookup> lookup = std::move(lookup_);
  int state = LookupState(&lookup->request, lookup->resolved);
  addrinfo* result = lookup->request.ar_result;
  if (state != 0) {
    if (result != nullptr) freeaddrinfo(result);
    return Finish(Outcome::kFailed,
                  absl::StrCat("cannot resolve ", host_, ": ", gai_strerror(state)));
  }
  for (addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
    sockaddr_storage address{};
    std::memcpy(&address, ai->ai_addr, ai->ai_addrlen);
    addresses_.push_back(address);
  }
  if (result != nullptr) freeaddrinfo(result);
  if (addresses_.empty()) {
    return Finish(Outcome::kFailed, absl::StrCat("cannot resolve ", host_, ": no address"));
  }
  return ConnectNext();
}

ConnectProbe::Outcome ConnectProbe::ConnectNext() {
  // Every address so far refused: with none left, nothing listens at HOST:PORT.
  if (next_ == addresses_.size()) return Finish(Outcome::kRefused);
  const sockaddr_storage& address = addresses_[next_++];
  fd_ = socket(address.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Finish(Outcome::kFailed, ErrnoText("socket", errno));
  if (connect(fd_, reinterpret_cast<const sockaddr*>(&address), LengthOf(address)) == 0) {
    CloseSocket();
    return Finish(Outcome::kReached);
  }
  int error = errno;
  if (error == EINPROGRESS) return Outcome::kPending;
  CloseSocket();
  if (error == ECONNREFUSED) return ConnectNext();
  return Finish(Outcome::kFailed, ErrnoText("connect", error));
}

ConnectProbe::Outcome ConnectProbe::Finish(Outcome outcome, std::string detail) {
  outcome_ = outcome;
  detail_ = std::move(detail);
  return outcome_;
}

void ConnectProbe::CloseSocket() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace muster
