// The protobuf bridge: every message kind survives CAF's serializer, inside and outside a
// caf::message, and corrupted bytes are rejected with an error that names the message type.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/message.hpp>

#include "muster/messages/task_name.h"
#include "muster/messages/vocabulary/message_types.h"
#include "muster/messages/vocabulary/proto_inspect.h"
#include "muster/proto/coordination_config.pb.h"
#include "muster/proto/coordination_service.pb.h"
#include "muster/proto/topology.pb.h"

namespace muster {
namespace {

class ProtoBridgeTest : public ::testing::Test {
 protected:
  ProtoBridgeTest() : system_(Init(config_)) {}

  static caf::actor_system_config& Init(caf::actor_system_config& cfg) {
    AddMessageTypes(cfg);
    return cfg;
  }

  // Serializes `in` alone, deserializes it into a fresh message, and compares the bytes.
  template <class Message>
  void ExpectRoundTrip(Message in) {
    std::vector<char> buffer;
    caf::binary_serializer sink{system_, buffer};
    ASSERT_FALSE(sink(in)) << Message::descriptor()->full_name();
    Message out;
    caf::binary_deserializer source{system_, buffer};
    ASSERT_FALSE(source(out)) << Message::descriptor()->full_name();
    EXPECT_EQ(out.SerializeAsString(), in.SerializeAsString())
        << Message::descriptor()->full_name();
  }

  // Same, inside a caf::message: this needs the type registered under its proto name.
  template <class Message>
  void ExpectMessageRoundTrip(Message in) {
    std::vector<char> buffer;
    caf::binary_serializer sink{system_, buffer};
    caf::message msg = caf::make_message(in);
    ASSERT_FALSE(sink(msg)) << Message::descriptor()->full_name();
    caf::message out;
    caf::binary_deserializer source{system_, buffer};
    ASSERT_FALSE(source(out)) << Message::descriptor()->full_name();
    ASSERT_TRUE(out.match_elements<Message>()) << caf::to_string(out);
    EXPECT_EQ(out.get_as<Message>(0).SerializeAsString(), in.SerializeAsString());
  }

  caf::actor_system_config config_;
  caf::actor_system system_;
};

proto::CoordinatedTask Worker(int id) { return MakeTask("worker", id); }

TEST_F(ProtoBridgeTest, TaskLifecycleMessages_RoundTrip) {
  proto::RegisterTaskRequest reg;
  reg.set_incarnation(0xfeedfacecafebeefULL);
  *reg.mutable_source_task() = Worker(3);
  ExpectRoundTrip(reg);
  ExpectMessageRoundTrip(reg);
  proto::RegisterTaskResponse reg_reply;
  reg_reply.set_leader_incarnation(~0ULL);
  ExpectMessageRoundTrip(reg_reply);
  proto::HeartbeatRequest beat;
  beat.set_incarnation(7);
  *beat.mutable_source_task() = Worker(1);
  ExpectMessageRoundTrip(beat);
  proto::ReportErrorToTaskRequest report;
  report.set_error_code(14);
  report.set_error_message("task /job:worker/task:2 heartbeat timeout");
  *report.mutable_error_payload()->mutable_source_task() = Worker(2);
  ExpectMessageRoundTrip(report);
  proto::GetTaskStateResponse states;
  auto* info = states.add_task_state();
  *info->mutable_task() = Worker(0);
  info->set_state(proto::TASKSTATE_ERROR);
  info->set_incarnation(42);
  ExpectMessageRoundTrip(states);
}

TEST_F(ProtoBridgeTest, DeviceMessages_RoundTrip) {
  proto::WaitForAllTasksRequest wait;
  auto* node = wait.mutable_local_device_info()->mutable_xla()->mutable_devices()->add_nodes();
  node->set_node_id(1);
  auto* device = node->add_devices();
  device->set_name("gpu:0");
  device->set_global_device_id(5);
  ExpectMessageRoundTrip(wait);
  proto::WaitForAllTasksResponse reply;
  auto* tf = reply.mutable_cluster_device_info()->mutable_tf()->add_devices();
  tf->set_name("/job:worker/replica:0/task:0/device:CPU:0");
  tf->set_memory_limit(1 << 30);
  ExpectMessageRoundTrip(reply);
}

TEST_F(ProtoBridgeTest, KeyValueAndBarrierMessages_RoundTrip) {
  proto::InsertKeyValueRequest insert;
  insert.mutable_kv()->set_key("nccl/unique_id");
  insert.mutable_kv()->set_value(std::string("\0\xff\x01 binary", 10));
  insert.set_allow_overwrite(true);
  ExpectMessageRoundTrip(insert);
  proto::GetKeyValueDirResponse dir;
  for (int i = 0; i < 100; ++i) dir.add_kv()->set_key("dir/k" + std::to_string(i));
  ExpectMessageRoundTrip(dir);
  proto::KeyValueChangeEvent event;
  event.set_kind(proto::KeyValueChangeEvent::DELETED);
  event.set_revision(9);
  ExpectMessageRoundTrip(event);
  proto::BarrierRequest barrier;
  barrier.set_barrier_id("step_10");
  barrier.set_barrier_timeout_in_ms(5000);
  barrier.set_counter(3);
  *barrier.add_tasks() = Worker(0);
  *barrier.mutable_source_task() = Worker(0);
  ExpectMessageRoundTrip(barrier);
  ExpectMessageRoundTrip(proto::CancelBarrierResponse{});
}

TEST_F(ProtoBridgeTest, ConfigMessage_RoundTrip) {
  proto::CoordinationServiceConfig config;
  auto* job = config.add_coordinated_job_list();
  job->set_name("worker");
  job->set_num_tasks(1024);
  config.add_recoverable_jobs("ps");
  config.set_heartbeat_timeout_in_ms(10000);
  ExpectMessageRoundTrip(config);
}

TEST_F(ProtoBridgeTest, CorruptedBytes_RejectedWithErrorNamingTheType) {
  proto::KeyValueEntry entry;
  entry.set_key("a");
  entry.set_value("b");
  std::vector<char> buffer;
  caf::binary_serializer sink{system_, buffer};
  ASSERT_FALSE(sink(entry));
  // The last bytes are the protobuf encoding; a field header with wire type 7 is invalid.
  buffer.back() = static_cast<char>(0x0f);
  buffer[buffer.size() - 2] = static_cast<char>(0x0f);
  proto::KeyValueEntry out;
  caf::binary_deserializer source{system_, buffer};
  caf::error error = source(out);
  ASSERT_TRUE(error);
  EXPECT_EQ(error.category(), caf::atom("system"));
  EXPECT_EQ(error.code(), static_cast<uint8_t>(caf::sec::invalid_argument));
  EXPECT_NE(caf::to_string(error).find("malformed muster.proto.KeyValueEntry payload"),
            std::string::npos)
      << caf::to_string(error);
}

TEST_F(ProtoBridgeTest, TruncatedBuffer_RejectedWithoutCrash) {
  proto::BarrierRequest barrier;
  barrier.set_barrier_id(std::string(300, 'x'));
  std::vector<char> buffer;
  caf::binary_serializer sink{system_, buffer};
  ASSERT_FALSE(sink(barrier));
  buffer.resize(buffer.size() / 2);
  proto::BarrierRequest out;
  caf::binary_deserializer source{system_, buffer};
  EXPECT_TRUE(source(out));
}

TEST_F(ProtoBridgeTest, ToString_UsesProtobufTextForm) {
  proto::CoordinatedTask task = Worker(4);
  std::string text = caf::deep_to_string(task);
  EXPECT_EQ(text.rfind("muster.proto.CoordinatedTask(", 0), 0u) << text;
  EXPECT_NE(text.find("task_id: 4"), std::string::npos) << text;
}

}  // namespace
}  // namespace muster
