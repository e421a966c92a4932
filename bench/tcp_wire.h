// The raw TCP floor's wire format: a 4-byte length, then a 64-byte body of the size of a
// key-value request (op, two arguments, padding). Blocking helpers for the client side.
#pragma once

#include <cstdint>
#include <cstring>

namespace muster::bench {

enum TcpOp : uint8_t {
  kEcho = 0,     // answered at once with the same body
  kBarrier = 1,  // a = participants, b = round: answered when a calls of round b arrived
  kWatch = 2,    // answered at once; the connection is told when another watcher disconnects
  kNotify = 3,   // server -> watchers: a watcher's connection closed
  kBeat = 4,     // not answered: a one-way heartbeat (the floor of a frame per process)
};

inline constexpr size_t kTcpBodyBytes = 64;

struct TcpFrame {
  uint32_t length = kTcpBodyBytes;
  uint8_t op = kEcho;
  uint8_t pad0[3] = {};
  uint32_t a = 0;
  uint32_t b = 0;
  uint8_t pad1[kTcpBodyBytes - 12] = {};
};
static_assert(sizeof(TcpFrame) == 4 + kTcpBodyBytes);

// Connects to 127.0.0.1:port with TCP_NODELAY; -1 on failure. Non-blocking when `nonblocking`.
int TcpConnect(int port, bool nonblocking = false);
// Sends one frame / receives one frame on a blocking socket; false on error or end of stream.
bool TcpSend(int fd, const TcpFrame& frame);
bool TcpReceive(int fd, TcpFrame* frame);

// Runs the server role of tcp_pingpong: accepts connections on a free port and serves frames
// until SIGTERM; `heartbeat_baseline` emits the "baseline" record first (driver.h).
int RunTcpServer(bool heartbeat_baseline);

}  // namespace muster::bench
