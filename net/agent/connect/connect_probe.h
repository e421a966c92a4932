// Why a TCP connection to HOST:PORT fails, for the leader connector after the middleman's
// connect failed (which tries the host's first address, and IPv4 after IPv6: DialTcp). A probe
// makes a connection of its own to every address and looks at the outcome without ever blocking:
// names are resolved with getaddrinfo_a, the socket is non-blocking, and Check() polls with a zero
// timeout. Each resolved address is tried in turn; when every one refuses the connection
// (ECONNREFUSED), nothing listens at HOST:PORT.
//
//   RESOLVING --addresses--> CONNECTING(address i) --refused--> CONNECTING(i + 1) ...
//       |                        |         \--refused by the last--> kRefused
//       \--no address-----> kFailed        |--connected--> kReached (the socket is closed)
//                                          \--another error--> kFailed (detail() says which)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/socket.h>

namespace muster {

class ConnectProbe {
 public:
  enum class Outcome { kPending, kRefused, kReached, kFailed };

  // Starts resolving `host` (a name, an IPv4 or IPv6 address, with or without [brackets]).
  ConnectProbe(std::string host, uint16_t port);
  ~ConnectProbe();
  ConnectProbe(const ConnectProbe&) = delete;
  ConnectProbe& operator=(const ConnectProbe&) = delete;

  // Advances the probe as far as it can without waiting; kPending until it knows.
  Outcome Check();
  // What failed, for kFailed: "connect: No route to host", "cannot resolve: ...".
  const std::string& detail() const { return detail_; }

 private:
  struct Lookup;
  Outcome Resolved();
  Outcome ConnectNext();
  Outcome Finish(Outcome outcome, std::string detail = "");
  void CloseSocket();

  std::string host_;
  uint16_t port_;
  std::unique_ptr<Lookup> lookup_;  // while a name is being resolved
  std::vector<sockaddr_storage> addresses_;
  size_t next_ = 0;  // the address to try after the current one
  int fd_ = -1;      // the connection under way
  Outcome outcome_ = Outcome::kPending;
  std::string detail_;
};

}  // namespace muster
