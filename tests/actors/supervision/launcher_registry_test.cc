// LauncherRegistry: launchers added once and forgotten with their tasks, generations per task,
// rounds for all.
#include "muster/actors/supervision/launcher_registry.h"

#include <gtest/gtest.h>

#include "tests/testing/deterministic_fixture.h"

namespace muster {
namespace {

class LauncherRegistryTest : public testing::DeterministicTest {
 protected:
  LauncherActor Launcher() {
    return caf::actor_cast<LauncherActor>(
        Keep(system_.spawn([]() -> caf::behavior { return {[](int) {}}; })));
  }
};

TEST_F(LauncherRegistryTest, Add_IsNewOnlyOnce) {
  LauncherRegistry registry(2);
  LauncherActor launcher = Launcher();
  EXPECT_TRUE(registry.empty());
  EXPECT_TRUE(registry.Add(launcher));
  EXPECT_FALSE(registry.Add(launcher));
  EXPECT_EQ(registry.launchers().size(), 1u);
}

TEST_F(LauncherRegistryTest, Forget_LeavesItsTasksWithoutLauncher) {
  LauncherRegistry registry(3);
  LauncherActor one = Launcher();
  LauncherActor two = Launcher();
  registry.Add(one);
  registry.Add(two);
  registry.Assign(0, one);
  registry.Assign(1, two);
  registry.Assign(2, one);
  EXPECT_FALSE(registry.Forget(Launcher().address()));
  EXPECT_TRUE(registry.Forget(one.address()));
  EXPECT_FALSE(registry.LauncherOf(0));
  EXPECT_EQ(registry.LauncherOf(1), two);
  EXPECT_FALSE(registry.LauncherOf(2));
  EXPECT_EQ(registry.launchers().size(), 1u);
  EXPECT_FALSE(registry.Forget(one.address()));
}

TEST_F(LauncherRegistryTest, RestartAndNewRound_CountGenerations) {
  LauncherRegistry registry(2);
  registry.set_generation(1, 4);
  registry.Restart(0);
  EXPECT_EQ(registry.generation(0), 1);
  EXPECT_EQ(registry.generation(1), 4);
  EXPECT_EQ(registry.round(), 0);
  registry.NewRound();
  EXPECT_EQ(registry.round(), 1);
  EXPECT_EQ(registry.generation(0), 2);
  EXPECT_EQ(registry.generation(1), 5);
}

}  // namespace
}  // namespace muster
