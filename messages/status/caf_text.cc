#include "muster/messages/status/caf_text.h"

#include <string>

#include <absl/container/flat_hash_map.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_replace.h>
#include <absl/synchronization/mutex.h>
#include <caf/exit_reason.hpp>
#include <caf/sec.hpp>

#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

// A CAF enumerator's name as words: "remote_linking_failed" -> "remote linking failed".
std::string Words(const std::string& name) { return absl::StrReplaceAll(name, {{"_", " "}}); }

std::string DescribeSystemError(caf::sec code) {
  switch (code) {
    case caf::sec::request_timeout:
      return "the request timed out";
    case caf::sec::request_receiver_down:
      return "the receiver is gone";
    case caf::sec::disconnect_during_handshake:
      return "the peer closed the connection during the handshake";
    case caf::sec::cannot_connect_to_node:
      return "cannot connect to the peer";
    case caf::sec::connection_timeout:
      return "connecting to the peer timed out";
    case caf::sec::remote_linking_failed:
      return "cannot watch the peer";
    case caf::sec::no_route_to_receiving_node:
      return "no connection to the receiver's node";
    case caf::sec::unexpected_message:
      return "the receiver does not take this message";
    case caf::sec::cannot_open_port:
      return "cannot open the port";
    case caf::sec::network_syscall_failed:
      return "a network call failed";
    default:
      return Words(caf::to_string(code));
  }
}

std::string DescribeExitReason(caf::exit_reason reason) {
  switch (reason) {
    case caf::exit_reason::remote_link_unreachable:
      return "the connection to the peer closed";
    case caf::exit_reason::user_shutdown:
      return "it was shut down";
    case caf::exit_reason::kill:
      return "it was killed";
    case caf::exit_reason::normal:
      return "it finished";
    case caf::exit_reason::unreachable:
      return "it became unreachable";
    default:
      return Words(caf::to_string(reason));
  }
}

constexpr size_t kMaxRememberedPeers = 65536;

struct PeerHosts {
  absl::Mutex mutex;
  absl::flat_hash_map<caf::node_id, std::string, std::hash<caf::node_id>> hosts
      ABSL_GUARDED_BY(mutex);
};

PeerHosts& Hosts() {
  static PeerHosts* hosts = new PeerHosts();  // never destroyed: used until the process ends
  return *hosts;
}

}  // namespace

std::string DescribeCafError(const caf::error& error) {
  if (!error) return "";
  if (error.category() == kStatusCategory) return std::string(ToStatus(error).message());
  if (error.category() == caf::atom("system")) {
    return DescribeSystemError(static_cast<caf::sec>(error.code()));
  }
  if (error.category() == caf::atom("exit")) {
    return DescribeExitReason(static_cast<caf::exit_reason>(error.code()));
  }
  return absl::StrCat("error ", static_cast<int>(error.code()), " of ",
                      caf::to_string(error.category()));
}

void RememberPeerHost(const caf::node_id& node, const std::string& host) {
  if (node == caf::node_id{} || host.empty()) return;
  PeerHosts& peers = Hosts();
  absl::MutexLock lock(&peers.mutex);
  // Peers choose their node ids: a bounded table, so that handshakes with ever new ids cost
  // nothing lasting (a forgotten peer is named "pid P (address unknown)").
  if (peers.hosts.size() >= kMaxRememberedPeers && !peers.hosts.contains(node)) {
    peers.hosts.erase(peers.hosts.begin());
  }
  peers.hosts[node] = host;
}

std::string PeerName(const caf::node_id& node) {
  if (node == caf::node_id{} || node->implementation_id() != caf::node_id::default_data::class_id) {
    return node == caf::node_id{} ? "an unknown node" : caf::to_string(node);
  }
  uint32_t pid = static_cast<const caf::node_id::default_data&>(*node.operator->()).process_id();
  PeerHosts& peers = Hosts();
  absl::MutexLock lock(&peers.mutex);
  auto it = peers.hosts.find(node);
  if (it == peers.hosts.end()) return absl::StrCat("pid ", pid, " (address unknown)");
  return absl::StrCat("host ", it->second, " pid ", pid);
}

}  // namespace muster
