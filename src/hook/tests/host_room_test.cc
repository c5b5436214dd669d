// Unit tests of the host memory check before a spill (host_room.c): cgroup v2 and v1 figures and
// the node's MemAvailable, read from a folder that stands for /.
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

extern "C" {
#include "hook/host_room.h"
}

namespace {

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kGiB = 1ull << 30;

class HookHostRoom : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tessera-host-room-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    std::filesystem::path full = root_ + path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full) << text;
  }
  void MemAvailable(uint64_t bytes) {
    Write("/proc/meminfo",
          "MemTotal:       65536000 kB\nMemFree:         1000 kB\nMemAvailable:   " +
              std::to_string(bytes >> 10) + " kB\nBuffers:  12 kB\n");
  }
  host_room Read() {
    host_room room;
    host_room_read(root_.c_str(), &room);
    return room;
  }
  // host_room_check's answer for `bytes`, and its reason in *why.
  int Check(uint64_t bytes, std::string* why) {
    host_room room = Read();
    char text[256] = "";
    int rc = host_room_check(&room, bytes, text, sizeof(text));
    *why = text;
    return rc;
  }

  std::string root_;
};

TEST_F(HookHostRoom, CgroupV2TakesTheSmallestRoomOfTheContainerAndItsPod) {
  Write("/proc/self/cgroup", "0::/kubepods/pod1/c1\n");
  Write("/sys/fs/cgroup/kubepods/pod1/c1/memory.max", std::to_string(4 * kGiB) + "\n");
  Write("/sys/fs/cgroup/kubepods/pod1/c1/memory.current", std::to_string(1 * kGiB) + "\n");
  Write("/sys/fs/cgroup/kubepods/pod1/memory.max", std::to_string(2 * kGiB) + "\n");
  Write("/sys/fs/cgroup/kubepods/pod1/memory.current",
        std::to_string(1 * kGiB + 700 * kMiB) + "\n");
  Write("/sys/fs/cgroup/kubepods/memory.max", "max\n");
  Write("/sys/fs/cgroup/kubepods/memory.current", "123\n");
  MemAvailable(64 * kGiB);
  host_room room = Read();
  EXPECT_TRUE(room.cgroup_limited);
  EXPECT_EQ(room.cgroup_free, 324 * kMiB) << "the pod's limit is the tighter one";
  EXPECT_TRUE(room.node_known);
  EXPECT_EQ(room.node_available, 64 * kGiB);
  std::string why;
  EXPECT_EQ(Check(64 * kMiB, &why), 0) << why;  // 324 - 64 leaves the 256 MiB margin
  EXPECT_EQ(Check(100 * kMiB, &why), -1);
  EXPECT_NE(why.find("the container's memory cgroup has 324 MiB free"), std::string::npos) << why;
  EXPECT_NE(why.find("short by 32 MiB"), std::string::npos) << why;
}

TEST_F(HookHostRoom, TheNodeMustKeepItsMargin) {
  Write("/proc/self/cgroup", "0::/\n");
  Write("/sys/fs/cgroup/memory.max", "max\n");
  Write("/sys/fs/cgroup/memory.current", "4096\n");
  MemAvailable(1 * kGiB + 512 * kMiB);
  host_room room = Read();
  EXPECT_FALSE(room.cgroup_limited) << "no limit at any level";
  std::string why;
  EXPECT_EQ(Check(512 * kMiB, &why), 0) << why;
  EXPECT_EQ(Check(600 * kMiB, &why), -1);
  EXPECT_NE(why.find("the node has 1536 MiB free"), std::string::npos) << why;
  EXPECT_NE(why.find("short by 88 MiB"), std::string::npos) << why;
}

TEST_F(HookHostRoom, AMountOfTheContainersOwnCgroupIsReadAtItsRoot) {
  // No cgroup namespace: /proc/self/cgroup names the host's path, the mount shows the
  // container's cgroup at its root.
  Write("/proc/self/cgroup", "0::/kubepods.slice/kubepods-pod9.slice/cri-containerd-ab.scope\n");
  Write("/sys/fs/cgroup/memory.max", std::to_string(3 * kGiB) + "\n");
  Write("/sys/fs/cgroup/memory.current", std::to_string(2 * kGiB) + "\n");
  MemAvailable(64 * kGiB);
  host_room room = Read();
  EXPECT_TRUE(room.cgroup_limited);
  EXPECT_EQ(room.cgroup_free, 1 * kGiB);
}

TEST_F(HookHostRoom, CgroupV1IsTheFallback) {
  // Hybrid: the unified line is there, the memory controller is on v1.
  Write("/proc/self/cgroup", "12:cpu,cpuacct:/docker/ab\n5:memory:/docker/ab\n0::/docker/ab\n");
  Write("/sys/fs/cgroup/memory/docker/ab/memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  Write("/sys/fs/cgroup/memory/docker/ab/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  Write("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  Write("/sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(40 * kGiB) + "\n");
  MemAvailable(64 * kGiB);
  host_room room = Read();
  EXPECT_TRUE(room.cgroup_limited);
  EXPECT_EQ(room.cgroup_free, 1 * kGiB) << "v1's page-counter maximum is no limit";
  std::string why;
  EXPECT_EQ(Check(768 * kMiB, &why), 0) << why;
  EXPECT_EQ(Check(769 * kMiB, &why), -1);
}

TEST_F(HookHostRoom, AnUnreadableNodeFigureRefuses) {
  Write("/proc/self/cgroup", "0::/\n");
  host_room room = Read();
  EXPECT_FALSE(room.node_known);
  std::string why;
  EXPECT_EQ(Check(kMiB, &why), -1);
  EXPECT_NE(why.find("/proc/meminfo"), std::string::npos) << why;
}

TEST_F(HookHostRoom, AUsageAboveTheLimitLeavesNoRoom) {
  Write("/proc/self/cgroup", "0::/c\n");
  Write("/sys/fs/cgroup/c/memory.max", std::to_string(kGiB) + "\n");
  Write("/sys/fs/cgroup/c/memory.current", std::to_string(2 * kGiB) + "\n");
  MemAvailable(64 * kGiB);
  EXPECT_EQ(Read().cgroup_free, 0u);
  std::string why;
  EXPECT_EQ(Check(0, &why), -1) << "the margin is already gone";
}

}  // namespace
