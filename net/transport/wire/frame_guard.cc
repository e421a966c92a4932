#include "muster/net/transport/wire/frame_guard.h"

#include <deque>
#include <utility>

#include <absl/container/flat_hash_set.h>
#include <absl/hash/hash.h>
#include <absl/strings/escaping.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <absl/strings/string_view.h>
#include <absl/strings/strip.h>
#include <caf/atom.hpp>

namespace muster {
namespace {

// BASP operations (caf/io/basp/message_type.hpp).
constexpr uint8_t kServerHandshake = 0x00;
constexpr uint8_t kClientHandshake = 0x01;
constexpr uint8_t kDirectMessage = 0x02;
constexpr uint8_t kRoutedMessage = 0x03;
constexpr uint8_t kMonitorMessage = 0x04;
constexpr uint8_t kDownMessage = 0x05;
constexpr uint8_t kLastOperation = 0x06;  // heartbeat

uint32_t PayloadLength(absl::Span<const char> header) {
  auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<uint8_t>(header[i])); };
  return byte(4) << 24 | byte(5) << 16 | byte(6) << 8 | byte(7);
}

// Eight bytes from `at`, big-endian as CAF writes integers: in a header, the operation data (a
// direct message's id, caf::message_id) at 8 and the receiving actor at 24; an atom's value.
uint64_t BigEndian64(absl::Span<const char> bytes, int at) {
  uint64_t value = 0;
  for (int i = at; i < at + 8; ++i) value = value << 8 | static_cast<uint8_t>(bytes[i]);
  return value;
}

constexpr uint8_t kNamedReceiverFlag = 0x01;
constexpr uint64_t kResponseFlag = uint64_t{1} << 63;  // caf::message_id::response_flag_mask
// caf::message_id's category (bits 60-61): 2 and 3 are stream messages.
constexpr uint64_t kFirstStreamCategory = 2;

// A size as CAF's binary serializer writes it (begin_sequence): 7 bits a byte, lowest first,
// the high bit set on every byte but the last; at most 5 bytes (a uint32).
bool ReadSize(absl::string_view& in, size_t& size) {
  size = 0;
  for (int shift = 0; shift < 35 && !in.empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in.front());
    in.remove_prefix(1);
    size |= size_t{byte & 0x7fu} << shift;
    if ((byte & 0x80u) == 0) return true;
  }
  return false;
}

// The message types (caf::message's type names, joined by '+' after "@<>") that CAF's actors
// handle themselves instead of passing them to their behaviour.
constexpr absl::string_view kControlTypes[] = {
    "@exit", "@down", "@timeout", "@open_stream_msg", "@upstream_msg", "@downstream_msg",
};
// (link_atom or unlink_atom, actor): CAF's network layer links the receiver to that actor.
constexpr absl::string_view kLinkMessage = "@<>+@atom+@strong_actor_ptr";
constexpr absl::string_view kErrorMessage = "@<>+@error";
// What CAF's network layer sends a node it connects to, to its named spawn server: (sys_atom,
// get_atom, "info"); and the reply its helper actor gets back (ok_atom, "info", actor, name).
constexpr absl::string_view kNodeInfoRequest = "@<>+@atom+@atom+@str";
constexpr absl::string_view kNodeInfoReply = "@<>+@atom+@str+@strong_actor_ptr+@str";
constexpr uint64_t kOkAtom = caf::ok_atom::uint_value();
// The name CAF 0.17's spawn server gives in that reply (spawn_serv_state::name).
constexpr absl::string_view kSpawnServerName = "spawn_server";
// caf::message_id::default_async_value: CAF's helper sends its node-info request as an
// ordinary one-way message, and the reply comes back as one.
constexpr uint64_t kOneWayMessageId = uint64_t{1} << 60;

// The values of a node-info reply as the peer's spawn server sends it: ok_atom, "info", the
// spawn server itself (its actor id, then its node: the peer's, as in its handshake) and its
// name, nothing else. The text a receiving actor could print is CAF's own.
bool IsPeersNodeInfoReply(absl::string_view values, absl::string_view peer_node) {
  size_t size = 0;
  if (peer_node.empty() || values.size() < 8 ||
      BigEndian64(absl::MakeConstSpan(values.data(), 8), 0) != kOkAtom) {
    return false;
  }
  values.remove_prefix(8);
  if (!ReadSize(values, size) || size != 4 || !absl::ConsumePrefix(&values, "info")) return false;
  if (values.size() < 8 || BigEndian64(absl::MakeConstSpan(values.data(), 8), 0) == 0) {
    return false;  // no actor
  }
  values.remove_prefix(8);
  if (!absl::ConsumePrefix(&values, peer_node)) return false;
  return ReadSize(values, size) && size == kSpawnServerName.size() && values == kSpawnServerName;
}

// The pairs of nodes (this node, a peer) from which a node-info reply passed, for the whole
// process (a node's connections have guards of their own; the reply comes on one of them).
// CAF asks each node once per actor system (basp_broker_state::learned_new_node keeps its
// helper per node id for the system's life, and asks no more when the node reconnects), so
// a second reply from a node is a peer's own. Bounded: past kCapacity pairs the oldest is
// forgotten (it could then pass once more).
class NodeInfoReplies {
 public:
  // True the first time for this pair.
  bool First(absl::string_view own_node, absl::string_view peer_node) {
    const uint64_t key = absl::Hash<std::pair<absl::string_view, absl::string_view>>()(
        std::make_pair(own_node, peer_node));
    absl::MutexLock lock(&mutex_);
    if (!seen_.insert(key).second) return false;
    order_.push_back(key);
    if (order_.size() > kCapacity) {
      seen_.erase(order_.front());
      order_.pop_front();
    }
    return true;
  }

 private:
  static constexpr size_t kCapacity = size_t{1} << 16;
  absl::Mutex mutex_;
  absl::flat_hash_set<uint64_t> seen_;
  std::deque<uint64_t> order_;
};

NodeInfoReplies& AcceptedNodeInfoReplies() {
  static auto* replies = new NodeInfoReplies();
  return *replies;
}

}  // namespace

absl::Status FrameGuard::Check(absl::Span<const char> chunk) {
  if (!in_payload_) return CheckHeader(chunk);
  in_payload_ = false;
  if (inbound_ && payload_operation_ == kDirectMessage) {
    if (absl::Status status = CheckDirectMessage(chunk); !status.ok()) return status;
  }
  if (inbound_ && !own_node_.empty()) {
    if (absl::Status status = CheckNodes(chunk); !status.ok()) return status;
  }
  uint8_t expected_handshake = inbound_ ? kClientHandshake : kServerHandshake;
  if (payload_operation_ == expected_handshake) {
    // The server's handshake begins with its node id (then its application identifiers and
    // published actor): kept whole, for a reader of the id at its start.
    if (!inbound_ && peer_node_.empty()) peer_node_.assign(chunk.data(), chunk.size());
    handshake_done_ = true;
  }
  return absl::OkStatus();
}

absl::Status FrameGuard::CheckHeader(absl::Span<const char> header) {
  if (header.size() != kHeaderSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("a frame header of ", header.size(), " bytes; expected ", kHeaderSize));
  }
  const uint8_t operation = static_cast<uint8_t>(header[0]);
  const uint32_t length = PayloadLength(header);
  if (operation > kLastOperation) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown frame operation ", static_cast<int>(operation)));
  }
  // A routed message names its source node in its payload, and CAF takes that node at its word
  // (a source on this node is looked up in the local registry): a peer could send as any actor.
  // Muster's nodes talk to each other directly, so a peer that connected to us may only send
  // as itself (direct messages, whose source node is the connection's).
  if (inbound_ && operation == kRoutedMessage) {
    return absl::PermissionDeniedError(
        "a routed message (a sender on another node than the peer's): a peer may only send as "
        "itself");
  }
  const bool handshake = operation == kServerHandshake || operation == kClientHandshake;
  if (handshake && length == 0) {
    return absl::InvalidArgumentError("a handshake frame without payload");
  }
  if (!handshake_done_) {
    uint8_t expected = inbound_ ? kClientHandshake : kServerHandshake;
    if (operation != expected) {
      return absl::InvalidArgumentError(
          absl::StrCat("frame operation ", static_cast<int>(operation), " before the handshake"));
    }
    if (inbound_ && length > limits_.max_handshake_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "a handshake of ", length, " bytes; the limit is ", limits_.max_handshake_bytes));
    }
  }
  if (limits_.max_frame_bytes != 0 && length > limits_.max_frame_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("a frame of ", length, " bytes; the limit is ",
                                                     limits_.max_frame_bytes,
                                                     " (--max-frame-size)"));
  }
  if (length > 0) {
    in_payload_ = true;
    payload_operation_ = operation;
    payload_message_id_ = BigEndian64(header, 8);
    payload_flags_ = static_cast<uint8_t>(header[3]);
    payload_receiver_ = BigEndian64(header, 24);
  } else if (inbound_ && operation == kDirectMessage) {
    return absl::InvalidArgumentError("a direct message without payload");
  }
  return absl::OkStatus();
}

absl::Status FrameGuard::CheckNodes(absl::Span<const char> payload) {
  absl::string_view bytes(payload.data(), payload.size());
  if (payload_operation_ == kClientHandshake) {  // its payload is the peer's node id
    if (bytes == own_node_) {
      return absl::PermissionDeniedError(
          "a handshake claiming this node's own id: a peer may only connect as itself");
    }
    // CAF repeats the handshake on a connection at times; the node stays the same.
    if (handshake_done_ && bytes != peer_node_) {
      return absl::PermissionDeniedError(
          "a second handshake naming another node: a peer may only connect as itself");
    }
    peer_node_ = std::string(bytes);
  } else if (payload_operation_ == kMonitorMessage || payload_operation_ == kDownMessage) {
    if (!absl::StartsWith(bytes, peer_node_) ||
        !absl::StartsWith(bytes.substr(peer_node_.size()), own_node_)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "a ", payload_operation_ == kDownMessage ? "down" : "monitor",
          " frame naming another node than the peer's, or than this one: a peer may only "
          "report its own actors' ends, and only to this node"));
    }
  }
  return absl::OkStatus();
}

absl::Status FrameGuard::CheckDirectMessage(absl::Span<const char> payload) const {
  auto unreadable = [](absl::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("a direct message whose ", what, " cannot be read"));
  };
  if (((payload_message_id_ >> 60) & 3) >= kFirstStreamCategory) {
    return absl::PermissionDeniedError(
        "a message with a stream message id: a peer may only send requests, answers and "
        "Muster's own messages");
  }
  absl::string_view in(payload.data(), payload.size());
  size_t stages = 0;
  if (!ReadSize(in, stages)) return unreadable("forwarding stack");
  // The actors a message's result is to be forwarded to, in the receiver's name: a peer could
  // have the coordinator answer (an error, say) to any actor of this node. Muster sends none.
  if (stages > 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        "a message with a forwarding stack of ", stages,
        " actors (its result would go to them in the receiver's name): a peer may only send "
        "requests, answers and Muster's own messages"));
  }
  // The message: a uint16 zero, then its type names as a string (caf::message::save).
  size_t names_size = 0;
  if (in.size() < 2) return unreadable("type names");
  in.remove_prefix(2);
  if (!ReadSize(in, names_size) || names_size > in.size()) return unreadable("type names");
  absl::string_view names = in.substr(0, names_size);
  const bool answer = (payload_message_id_ & kResponseFlag) != 0;
  bool control = false;
  if (absl::StrContains(names, "+@")) {  // one of CAF's own types (Muster's are "muster.…")
    control = names == kLinkMessage || (names == kErrorMessage && !answer);
    for (absl::string_view name : absl::StrSplit(names, '+')) {
      for (absl::string_view type : kControlTypes) control = control || name == type;
    }
  }
  if (control) {
    return absl::PermissionDeniedError(absl::StrCat(
        "a message of the types ", absl::CHexEscape(names.substr(0, 80)),
        " (a control message of CAF's actors: exit, down, link, timeout, stream, or an error "
        "that answers no request): a peer may only send requests, answers and Muster's own "
        "messages"));
  }
  if (published_ == nullptr || answer) return absl::OkStatus();
  if ((payload_flags_ & kNamedReceiverFlag) != 0) {
    if (names == kNodeInfoRequest) return absl::OkStatus();
    return absl::PermissionDeniedError(
        "a message to a named actor of the actor system (its config or spawn server): a peer may "
        "only send to the actors this node published");
  }
  if (published_->MayReceive(payload_receiver_)) return absl::OkStatus();
  // The reply to CAF's node-info request goes to the helper actor that asked, which CAF spawns
  // when it reads the peer's handshake and names only in the request it sends the peer: that
  // id never crosses this guard (it sees what arrives, not what leaves, and knows no actor
  // system), so it cannot tell the helper from any other actor that once sent to another node
  // (a key-value directory: such actors receive by id). The reply is bounded instead to what
  // CAF sends: a one-way message, from the peer's own spawn server with CAF's values (no text
  // of the peer's), once per peer node and this node. A forged one reaches one actor: Muster's
  // actors drop it (actors/caf/hardening.h); one of CAF's own that receives by id (the spawn
  // server, once it answered a node) prints it, CAF's values only, once per new peer node.
  if (names == kNodeInfoReply && payload_message_id_ == kOneWayMessageId &&
      IsPeersNodeInfoReply(in.substr(names_size), peer_node_) &&
      AcceptedNodeInfoReplies().First(own_node_, peer_node_)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("a message to actor ", payload_receiver_,
                   ", which this node did not publish: a peer may only send to the actors this "
                   "node published, and answer requests"));
}

}  // namespace muster
