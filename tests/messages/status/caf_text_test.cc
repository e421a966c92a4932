// Plain words for CAF's errors and nodes: no "system_error(...)", "exit_reason(...)" or 40-digit
// host hashes reach a message; a peer is named by the address of its connection and its pid.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <caf/exit_reason.hpp>
#include <caf/node_id.hpp>
#include <caf/sec.hpp>

#include "muster/messages/status/caf_text.h"
#include "muster/messages/status/status_codec.h"

namespace muster {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

caf::node_id Node(uint32_t pid, uint8_t host_byte) {
  caf::node_id::default_data::host_id_type host{};
  host.fill(host_byte);
  return caf::make_node_id(pid, host);
}

TEST(CafTextTest, SystemErrors_InPlainWords) {
  EXPECT_EQ(DescribeCafError(caf::make_error(caf::sec::request_timeout)), "the request timed out");
  EXPECT_EQ(DescribeCafError(caf::make_error(caf::sec::disconnect_during_handshake)),
            "the peer closed the connection during the handshake");
  EXPECT_EQ(DescribeCafError(caf::make_error(caf::sec::cannot_connect_to_node)),
            "cannot connect to the peer");
  // One without its own words: its name, spelled out.
  EXPECT_EQ(DescribeCafError(caf::make_error(caf::sec::no_such_group_module)),
            "no such group module");
}

TEST(CafTextTest, ExitReasons_InPlainWords) {
  EXPECT_EQ(DescribeCafError(caf::make_error(caf::exit_reason::remote_link_unreachable)),
            "the connection to the peer closed");
  EXPECT_EQ(DescribeCafError(caf::make_error(caf::exit_reason::user_shutdown)), "it was shut down");
  EXPECT_EQ(DescribeCafError(caf::error{}), "");
}

TEST(CafTextTest, StatusErrors_GiveTheirMessage) {
  EXPECT_EQ(DescribeCafError(ToError(absl::NotFoundError("no key x"))), "no key x");
}

TEST(CafTextTest, TransportStatuses_CarryNoCafNotation) {
  for (const caf::error& error : {caf::make_error(caf::sec::request_timeout),
                                  caf::make_error(caf::sec::cannot_connect_to_node),
                                  caf::make_error(caf::exit_reason::remote_link_unreachable),
                                  caf::make_error(caf::exit_reason::kill)}) {
    std::string text(ToStatus(error).message());
    EXPECT_THAT(text, AllOf(Not(HasSubstr("system_error(")), Not(HasSubstr("exit_reason(")),
                            Not(HasSubstr("_"))));
  }
  EXPECT_EQ(ToStatus(caf::make_error(caf::sec::request_timeout)).message(),
            "the request timed out");
  EXPECT_EQ(ToStatus(caf::make_error(caf::exit_reason::remote_link_unreachable)).message(),
            "the connection to the peer closed");
}

TEST(CafTextTest, PeerName_HostAndPidOnceItsConnectionIsKnown) {
  caf::node_id node = Node(4242, 0xAB);
  EXPECT_EQ(PeerName(node), "pid 4242 (address unknown)");
  RememberPeerHost(node, "10.0.0.5");
  EXPECT_EQ(PeerName(node), "host 10.0.0.5 pid 4242");
  EXPECT_EQ(PeerName(Node(4242, 0xCD)), "pid 4242 (address unknown)");  // another host
  EXPECT_THAT(PeerName(node), Not(ContainsRegex("[0-9A-Fa-f]{8}")));
  EXPECT_EQ(PeerName(caf::node_id{}), "an unknown node");
}

}  // namespace
}  // namespace muster
