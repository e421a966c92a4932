// TaskStateListeners and EphemeralOwners: listeners hear a change in the order they were
// registered; an incarnation's end reports its keys once.
#include "muster/actors/cluster/task_state_listeners.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "muster/actors/kv/store/ephemeral_owners.h"

namespace muster {
namespace {

TEST(TaskStateListenersTest, Publish_InRegistrationOrder) {
  TaskStateListeners listeners;
  std::vector<std::string> heard;
  listeners.Add([&](const TaskStateChange& change) {
    heard.push_back("health:" + std::to_string(change.ended_incarnation));
  });
  listeners.Add([&](const TaskStateChange& change) {
    heard.push_back(change.connected() ? "barriers:connected" : "barriers:other");
  });
  proto::CoordinatedTaskStateInfo info;
  info.set_state(proto::TASKSTATE_ERROR);
  TaskSlot slot;
  listeners.Publish(TaskStateChange{.info = info, .slot = slot, .ended_incarnation = 3});
  EXPECT_EQ(listeners.size(), 2u);
  EXPECT_EQ(heard, (std::vector<std::string>{"health:3", "barriers:other"}));
}

TEST(EphemeralOwnersTest, Ended_ReportsKeysOnce) {
  EphemeralOwners owners(2);
  EXPECT_FALSE(owners.Ended(0));
  owners.Mark(1);
  EXPECT_TRUE(owners.Owns(1));
  EXPECT_TRUE(owners.Ended(1));
  EXPECT_FALSE(owners.Ended(1));
  EXPECT_FALSE(owners.Owns(0));
}

}  // namespace
}  // namespace muster
