// simgpu's MIG (docs/simgpu.md, "MIG"): the mode per GPU through NVML and `simgpu reset-gpu`, GPU
// and compute instances placed by src/mig's rules, MIG devices in NVML, and CUDA enumerating the
// MIG device a process is given.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "abi/cuda_driver.h"
#include "abi/nvml.h"
#include "mig/layout.h"
#include "mig/policy.h"
#include "mig/profiles.h"
#include "mig_state.h"
#include "sim_test_env.h"

namespace simgpu::testing {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

int Cli(const std::string& args) {
  return system((std::string(SIMGPU_CLI) + " " + args + " 2>/dev/null").c_str());
}

class SimgpuMig : public ::testing::Test {
 protected:
  explicit SimgpuMig(const std::string& devices = "count=2,model=H100") : state_(devices) {}
  void SetUp() override {
    // Makes the CUDA side register its fork handler, so that a forked child's cuInit starts a
    // driver of its own (driver_state.cc) rather than the parent's attachment.
    int count = 0;
    cuDeviceGetCount(&count);
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &gpu_), NVML_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }

  void EnableMig(nvmlDevice_t gpu) {
    nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
    ASSERT_EQ(nvmlDeviceSetMigMode(gpu, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
    ASSERT_EQ(activation, NVML_SUCCESS);
  }

  nvmlGpuInstance_t CreateGi(unsigned profile_id, unsigned start, unsigned size) {
    nvmlGpuInstancePlacement_t placement{start, size};
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(gpu_, profile_id, &placement, &gi),
              NVML_SUCCESS);
    return gi;
  }

  nvmlComputeInstance_t CreateCi(nvmlGpuInstance_t gi, unsigned profile) {
    nvmlComputeInstance_t ci = nullptr;
    EXPECT_EQ(nvmlGpuInstanceCreateComputeInstance(gi, profile, &ci), NVML_SUCCESS);
    return ci;
  }

  std::string Uuid(nvmlDevice_t device) {
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    EXPECT_EQ(nvmlDeviceGetUUID(device, uuid, sizeof(uuid)), NVML_SUCCESS);
    return uuid;
  }

  PrivateState state_;
  nvmlDevice_t gpu_ = nullptr;
};

TEST_F(SimgpuMig, KnownModelsHaveTheirNameMemoryAndSms) {
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetName(gpu_, name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3");
  nvmlMemory_t memory;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(gpu_, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 81559 * kMiB);
  nvmlDeviceAttributes_t attributes;
  ASSERT_EQ(nvmlDeviceGetAttributes_v2(gpu_, &attributes), NVML_SUCCESS);
  EXPECT_EQ(attributes.multiprocessorCount, 132u);
  unsigned current = 9, pending = 9;
  ASSERT_EQ(nvmlDeviceGetMigMode(gpu_, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
  EXPECT_EQ(pending, 0u);
  unsigned count = 9;
  ASSERT_EQ(nvmlDeviceGetMaxMigDeviceCount(gpu_, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);  // MIG not enabled
}

class SimgpuMigPlainGpu : public SimgpuMig {
 protected:
  SimgpuMigPlainGpu() : SimgpuMig("gpu=SimGPU:16GiB:108;gpu=A100-40GB") {}
};

TEST_F(SimgpuMigPlainGpu, GpusWithoutMigRefuseItAndOthersOnOneMachineHaveIt) {
  unsigned current, pending;
  EXPECT_EQ(nvmlDeviceGetMigMode(gpu_, &current, &pending), NVML_ERROR_NOT_SUPPORTED);
  nvmlReturn_t activation;
  EXPECT_EQ(nvmlDeviceSetMigMode(gpu_, NVML_DEVICE_MIG_ENABLE, &activation),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuInstanceProfileInfo_t info;
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(gpu_, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);
  unsigned count = 9;
  ASSERT_EQ(nvmlDeviceGetMaxMigDeviceCount(gpu_, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 0u);

  nvmlDevice_t a100;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &a100), NVML_SUCCESS);
  nvmlMemory_t memory;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(a100, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 40960 * kMiB);
  EnableMig(a100);
  ASSERT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(a100, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &info),
            NVML_SUCCESS);
  EXPECT_EQ(info.memorySizeMB, 4864u);  // 1g.5gb
  EXPECT_EQ(info.multiprocessorCount, 14u);
}

TEST_F(SimgpuMig, ModeTakesEffectOnAnIdleGpuAndEveryProcessSeesIt) {
  EnableMig(gpu_);
  unsigned current = 0, pending = 0;
  ASSERT_EQ(nvmlDeviceGetMigMode(gpu_, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 1u);
  EXPECT_EQ(pending, 1u);
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetMaxMigDeviceCount(gpu_, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 7u);
  pid_t child = Spawn([] {
    nvmlDevice_t dev0, dev1;
    unsigned c0 = 9, p0 = 9, c1 = 9, p1 = 9;
    if (nvmlShutdown() != NVML_SUCCESS || nvmlInit_v2() != NVML_SUCCESS) return 10;
    if (nvmlDeviceGetHandleByIndex_v2(0, &dev0) != NVML_SUCCESS) return 11;
    if (nvmlDeviceGetHandleByIndex_v2(1, &dev1) != NVML_SUCCESS) return 12;
    if (nvmlDeviceGetMigMode(dev0, &c0, &p0) != NVML_SUCCESS) return 13;
    if (nvmlDeviceGetMigMode(dev1, &c1, &p1) != NVML_SUCCESS) return 14;
    return c0 == 1 && p0 == 1 && c1 == 0 && p1 == 0 ? 0 : 20;
  });
  EXPECT_EQ(Wait(child), 0);
  nvmlReturn_t activation;
  EXPECT_EQ(nvmlDeviceSetMigMode(gpu_, 7, &activation), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(SimgpuMig, ModeStaysPendingWhileAProcessUsesTheGpuUntilItIsReset) {
  Handshake handshake;
  ChildGuard child(Spawn([&] {
    if (UseDevice(0) != 0) return 10;
    CUdeviceptr p;
    if (cuMemAlloc_v2(&p, 64 * kMiB) != CUDA_SUCCESS) return 11;
    handshake.SignalAndWait();
    return 0;
  }));
  ASSERT_TRUE(handshake.AwaitReady());
  nvmlReturn_t activation = NVML_SUCCESS;
  ASSERT_EQ(nvmlDeviceSetMigMode(gpu_, NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_IN_USE);
  unsigned current = 9, pending = 9;
  ASSERT_EQ(nvmlDeviceGetMigMode(gpu_, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 0u);
  EXPECT_EQ(pending, 1u);
  nvmlGpuInstance_t gi;
  EXPECT_EQ(nvmlDeviceCreateGpuInstance(gpu_, 19, &gi), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_NE(Cli("reset-gpu 0"), 0);  // in use
  handshake.Release();
  EXPECT_EQ(child.Reap(), 0);
  EXPECT_EQ(Cli("reset-gpu 0"), 0);
  ASSERT_EQ(nvmlDeviceGetMigMode(gpu_, &current, &pending), NVML_SUCCESS);
  EXPECT_EQ(current, 1u);
  EXPECT_EQ(pending, 1u);
  EXPECT_NE(Cli("reset-gpu 7"), 0);  // no such GPU
}

TEST_F(SimgpuMig, ProfileInfoAndPlacementsComeFromTheModelsTable) {
  nvmlGpuInstanceProfileInfo_t info;
  ASSERT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(gpu_, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &info),
            NVML_SUCCESS);
  EXPECT_EQ(info.id, 19u);
  EXPECT_EQ(info.sliceCount, 1u);
  EXPECT_EQ(info.instanceCount, 7u);
  EXPECT_EQ(info.multiprocessorCount, 16u);
  EXPECT_EQ(info.memorySizeMB, 9984u);
  ASSERT_EQ(
      nvmlDeviceGetGpuInstanceProfileInfo(gpu_, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, &info),
      NVML_SUCCESS);
  EXPECT_EQ(info.id, 15u);
  EXPECT_EQ(info.memorySizeMB, 20096u);
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(gpu_, NVML_GPU_INSTANCE_PROFILE_8_SLICE, &info),
            NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfo(gpu_, NVML_GPU_INSTANCE_PROFILE_COUNT, &info),
            NVML_ERROR_INVALID_ARGUMENT);

  nvmlGpuInstanceProfileInfo_v2_t v2{};
  v2.version = nvmlGpuInstanceProfileInfo_v2;
  ASSERT_EQ(nvmlDeviceGetGpuInstanceProfileInfoV(gpu_, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, &v2),
            NVML_SUCCESS);
  EXPECT_EQ(v2.id, 20u);
  EXPECT_EQ(v2.ofaCount, 1u);
  EXPECT_STREQ(v2.name, "MIG 1g.10gb+me");
  nvmlGpuInstanceProfileInfo_v3_t v3{};
  v3.version = nvmlGpuInstanceProfileInfo_v3;
  ASSERT_EQ(
      nvmlDeviceGetGpuInstanceProfileInfoV(gpu_, NVML_GPU_INSTANCE_PROFILE_7_SLICE,
                                           reinterpret_cast<nvmlGpuInstanceProfileInfo_v2_t*>(&v3)),
      NVML_SUCCESS);
  EXPECT_EQ(v3.id, 0u);
  EXPECT_EQ(v3.multiprocessorCount, 132u);
  EXPECT_EQ(v3.memorySizeMB, 81152u);
  EXPECT_STREQ(v3.name, "MIG 7g.80gb");
  v2.version = 7;
  EXPECT_EQ(nvmlDeviceGetGpuInstanceProfileInfoV(gpu_, 0, &v2),
            NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

  // 3g.40gb (ID 9): {0, 4}:4, whatever the mode.
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu_, 9, nullptr, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlGpuInstancePlacement_t placements[8];
  count = 1;
  EXPECT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu_, 9, placements, &count),
            NVML_ERROR_INSUFFICIENT_SIZE);
  count = 8;
  ASSERT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu_, 9, placements, &count),
            NVML_SUCCESS);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(placements[0].start, 0u);
  EXPECT_EQ(placements[1].start, 4u);
  EXPECT_EQ(placements[1].size, 4u);
  count = 8;
  ASSERT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu_, 19, placements, &count),
            NVML_SUCCESS);
  EXPECT_EQ(count, 7u);
  EXPECT_EQ(nvmlDeviceGetGpuInstancePossiblePlacements_v2(gpu_, 42, placements, &count),
            NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(SimgpuMig, GpuInstancesArePlacedByTheRulesAndSharedByProcesses) {
  nvmlGpuInstance_t gi;
  nvmlGpuInstancePlacement_t at4{4, 4};
  EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(gpu_, 9, &at4, &gi),
            NVML_ERROR_NOT_SUPPORTED);  // MIG off
  EnableMig(gpu_);
  nvmlGpuInstance_t g3 = CreateGi(9, 4, 4);
  nvmlGpuInstanceInfo_t info;
  ASSERT_EQ(nvmlGpuInstanceGetInfo(g3, &info), NVML_SUCCESS);
  EXPECT_EQ(info.id, 2u);  // the second half
  EXPECT_EQ(info.profileId, 9u);
  EXPECT_EQ(info.placement.start, 4u);
  EXPECT_EQ(info.placement.size, 4u);
  EXPECT_EQ(info.device, gpu_);

  nvmlGpuInstancePlacement_t bad{2, 4};
  EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(gpu_, 9, &bad, &gi),
            NVML_ERROR_INVALID_ARGUMENT);  // 3g starts at 0 or 4
  nvmlGpuInstancePlacement_t taken{4, 4};
  EXPECT_EQ(nvmlDeviceCreateGpuInstanceWithPlacement(gpu_, 9, &taken, &gi),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(nvmlDeviceCreateGpuInstance(gpu_, 0, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);  // 7g
  EXPECT_EQ(nvmlDeviceCreateGpuInstance(gpu_, 42, &gi), NVML_ERROR_INVALID_ARGUMENT);

  // Without a placement: where src/mig's policy puts it.
  const tessera::mig::GpuModel& model = *tessera::mig::FindModel("H100-SXM5-80GB");
  tessera::mig::Layout layout(model);
  ASSERT_TRUE(layout.Create("3g.40gb", 4).ok());
  int expected =
      tessera::mig::RankedStarts(layout, **tessera::mig::FindProfile(model, "1g.10gb")).front();
  nvmlGpuInstance_t g1;
  ASSERT_EQ(nvmlDeviceCreateGpuInstance(gpu_, 19, &g1), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpuInstanceGetInfo(g1, &info), NVML_SUCCESS);
  EXPECT_EQ(info.placement.start, static_cast<unsigned>(expected));
  EXPECT_EQ(info.id, 7u + static_cast<unsigned>(expected));

  nvmlGpuInstance_t list[7];
  unsigned count = 0;
  ASSERT_EQ(nvmlDeviceGetGpuInstances(gpu_, 9, list, &count), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(list[0], g3);
  ASSERT_EQ(nvmlDeviceGetGpuInstanceById(gpu_, 2, &gi), NVML_SUCCESS);
  EXPECT_EQ(gi, g3);
  EXPECT_EQ(nvmlDeviceGetGpuInstanceById(gpu_, 1, &gi), NVML_ERROR_NOT_FOUND);

  // Another process sees the instances and may destroy one.
  pid_t child = Spawn([] {
    nvmlDevice_t dev;
    nvmlGpuInstance_t found;
    nvmlGpuInstanceInfo_t seen;
    if (nvmlShutdown() != NVML_SUCCESS || nvmlInit_v2() != NVML_SUCCESS) return 10;
    if (nvmlDeviceGetHandleByIndex_v2(0, &dev) != NVML_SUCCESS) return 11;
    if (nvmlDeviceGetGpuInstanceById(dev, 2, &found) != NVML_SUCCESS) return 12;
    if (nvmlGpuInstanceGetInfo(found, &seen) != NVML_SUCCESS || seen.profileId != 9) return 13;
    return nvmlGpuInstanceDestroy(found) == NVML_SUCCESS ? 0 : 14;
  });
  EXPECT_EQ(Wait(child), 0);
  EXPECT_EQ(nvmlGpuInstanceGetInfo(g3, &info), NVML_ERROR_INVALID_ARGUMENT);  // destroyed
  EXPECT_EQ(nvmlDeviceGetGpuInstanceById(gpu_, 2, &gi), NVML_ERROR_NOT_FOUND);
  // The 4g now fits at 0 beside the 1g? Only if the 1g is not in slices 0-3.
  nvmlGpuInstancePlacement_t whole_half{0, 4};
  nvmlReturn_t four = nvmlDeviceCreateGpuInstanceWithPlacement(gpu_, 5, &whole_half, &gi);
  EXPECT_EQ(four, expected >= 4 ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_RESOURCES);
}

TEST_F(SimgpuMig, ComputeInstancesShareTheirGpuInstance) {
  EnableMig(gpu_);
  nvmlGpuInstance_t g3 = CreateGi(9, 0, 4);
  nvmlComputeInstanceProfileInfo_t info;
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                g3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
            NVML_SUCCESS);
  EXPECT_EQ(info.sliceCount, 1u);
  EXPECT_EQ(info.instanceCount, 3u);
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                g3, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
            NVML_SUCCESS);
  EXPECT_EQ(info.id, 2u);
  EXPECT_EQ(info.multiprocessorCount, 60u);  // the whole 3g.40gb
  EXPECT_EQ(nvmlGpuInstanceGetComputeInstanceProfileInfo(
                g3, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info),
            NVML_ERROR_NOT_SUPPORTED);
  nvmlComputeInstanceProfileInfo_v2_t v2{};
  v2.version = nvmlComputeInstanceProfileInfo_v2;
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceProfileInfoV(
                g3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &v2),
            NVML_SUCCESS);
  EXPECT_STREQ(v2.name, "MIG 1c.3g.40gb");

  nvmlComputeInstance_t c[3];
  for (int k = 0; k < 3; ++k) c[k] = CreateCi(g3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  nvmlComputeInstance_t extra;
  EXPECT_EQ(nvmlGpuInstanceCreateComputeInstance(g3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &extra),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(nvmlGpuInstanceCreateComputeInstance(g3, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, &extra),
            NVML_ERROR_NOT_SUPPORTED);
  for (int k = 0; k < 3; ++k) {
    nvmlComputeInstanceInfo_t ci;
    ASSERT_EQ(nvmlComputeInstanceGetInfo_v2(c[k], &ci), NVML_SUCCESS);
    EXPECT_EQ(ci.id, static_cast<unsigned>(k));
    EXPECT_EQ(ci.placement.start, static_cast<unsigned>(k));
    EXPECT_EQ(ci.placement.size, 1u);
    EXPECT_EQ(ci.gpuInstance, g3);
    EXPECT_EQ(ci.device, gpu_);
  }
  nvmlComputeInstance_t list[8];
  unsigned count = 0;
  ASSERT_EQ(
      nvmlGpuInstanceGetComputeInstances(g3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, list, &count),
      NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(nvmlGpuInstanceDestroy(g3), NVML_ERROR_IN_USE);

  // With one 1c left in the middle, a 2c finds no two free slices in a row until it goes.
  ASSERT_EQ(nvmlComputeInstanceDestroy(c[0]), NVML_SUCCESS);
  ASSERT_EQ(nvmlComputeInstanceDestroy(c[2]), NVML_SUCCESS);
  EXPECT_EQ(nvmlGpuInstanceCreateComputeInstance(g3, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, &extra),
            NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(nvmlComputeInstanceDestroy(c[0]), NVML_ERROR_INVALID_ARGUMENT);  // gone
  ASSERT_EQ(nvmlComputeInstanceDestroy(c[1]), NVML_SUCCESS);
  nvmlComputeInstance_t whole = CreateCi(g3, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  nvmlComputeInstance_t found;
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceById(g3, 0, &found), NVML_SUCCESS);
  EXPECT_EQ(found, whole);
  EXPECT_EQ(nvmlGpuInstanceGetComputeInstanceById(g3, 1, &found), NVML_ERROR_NOT_FOUND);
  ASSERT_EQ(nvmlComputeInstanceDestroy(whole), NVML_SUCCESS);
  EXPECT_EQ(nvmlGpuInstanceDestroy(g3), NVML_SUCCESS);

  // A reset destroys every instance.
  nvmlGpuInstance_t g7 = CreateGi(0, 0, 8);
  CreateCi(g7, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE);
  EXPECT_EQ(Cli("reset-gpu 0"), 0);
  nvmlGpuInstance_t gi;
  EXPECT_EQ(nvmlDeviceGetGpuInstanceById(gpu_, 0, &gi), NVML_ERROR_NOT_FOUND);
}

TEST_F(SimgpuMig, MigDevicesHaveTheirOwnUuidMemoryAndSms) {
  EnableMig(gpu_);
  nvmlGpuInstance_t g3 = CreateGi(9, 0, 4);   // id 1
  nvmlGpuInstance_t g1 = CreateGi(19, 6, 1);  // id 13
  CreateCi(g3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  CreateCi(g3, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
  CreateCi(g1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);

  nvmlDevice_t mig[3];
  for (unsigned k = 0; k < 3; ++k) {
    ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, k, &mig[k]), NVML_SUCCESS);
  }
  nvmlDevice_t none;
  EXPECT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 3, &none), NVML_ERROR_NOT_FOUND);
  unsigned ids[3][2] = {{1, 0}, {1, 1}, {13, 0}};
  for (int k = 0; k < 3; ++k) {
    unsigned is_mig = 0, gi = 99, ci = 99;
    ASSERT_EQ(nvmlDeviceIsMigDeviceHandle(mig[k], &is_mig), NVML_SUCCESS);
    EXPECT_EQ(is_mig, 1u);
    ASSERT_EQ(nvmlDeviceGetGpuInstanceId(mig[k], &gi), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetComputeInstanceId(mig[k], &ci), NVML_SUCCESS);
    EXPECT_EQ(gi, ids[k][0]);
    EXPECT_EQ(ci, ids[k][1]);
    nvmlDevice_t parent;
    ASSERT_EQ(nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig[k], &parent), NVML_SUCCESS);
    EXPECT_EQ(parent, gpu_);
  }
  unsigned is_mig = 1, id;
  ASSERT_EQ(nvmlDeviceIsMigDeviceHandle(gpu_, &is_mig), NVML_SUCCESS);
  EXPECT_EQ(is_mig, 0u);
  EXPECT_EQ(nvmlDeviceGetGpuInstanceId(gpu_, &id), NVML_ERROR_NOT_SUPPORTED);

  std::string u0 = Uuid(mig[0]), u1 = Uuid(mig[1]), u2 = Uuid(mig[2]);
  EXPECT_EQ(u0.rfind("MIG-", 0), 0u);
  EXPECT_EQ(u0.size(), std::string("MIG-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx").size());
  EXPECT_NE(u0, u1);
  EXPECT_NE(u0, u2);
  EXPECT_NE(u0, Uuid(gpu_));
  nvmlDevice_t by_uuid;
  ASSERT_EQ(nvmlDeviceGetHandleByUUID(u2.c_str(), &by_uuid), NVML_SUCCESS);
  EXPECT_EQ(by_uuid, mig[2]);

  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetName(mig[1], name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3 MIG 2c.3g.40gb");
  ASSERT_EQ(nvmlDeviceGetName(mig[2], name, sizeof(name)), NVML_SUCCESS);
  EXPECT_STREQ(name, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");

  nvmlMemory_t memory;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(mig[2], &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 9984 * kMiB);
  EXPECT_EQ(memory.free, 9984 * kMiB);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(mig[0], &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, 40448 * kMiB);

  nvmlDeviceAttributes_t attributes;
  ASSERT_EQ(nvmlDeviceGetAttributes_v2(mig[2], &attributes), NVML_SUCCESS);
  EXPECT_EQ(attributes.multiprocessorCount, 16u);
  EXPECT_EQ(attributes.gpuInstanceSliceCount, 1u);
  EXPECT_EQ(attributes.computeInstanceSliceCount, 1u);
  EXPECT_EQ(attributes.memorySizeMB, 9984u);
  ASSERT_EQ(nvmlDeviceGetAttributes_v2(mig[1], &attributes), NVML_SUCCESS);
  EXPECT_EQ(attributes.multiprocessorCount, 32u);  // 2c of an H100 3g: 2 x 16 (estimate)
  EXPECT_EQ(attributes.gpuInstanceSliceCount, 3u);
  EXPECT_EQ(attributes.computeInstanceSliceCount, 2u);
  EXPECT_EQ(attributes.memorySizeMB, 40448u);

  // The same instance ids give the same UUID after the instance is made again.
  nvmlComputeInstance_t ci;
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceById(g1, 0, &ci), NVML_SUCCESS);
  ASSERT_EQ(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetUUID(mig[2], name, sizeof(name)), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvmlGpuInstanceDestroy(g1), NVML_SUCCESS);
  g1 = CreateGi(19, 6, 1);
  CreateCi(g1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 2, &mig[2]), NVML_SUCCESS);
  EXPECT_EQ(Uuid(mig[2]), u2);
}

// CUDA in a child with CUDA_VISIBLE_DEVICES `visible`: the number of devices, the name, memory,
// SMs and free memory of device 0, or a failed step's code.
struct CudaView {
  int rc = 0;
  int count = 0;
  char name[128] = {};
  size_t total = 0;
  size_t free_bytes = 0;
  int sms = 0;
  CUuuid uuid{};
};

CudaView ViewInChild(const char* visible) {
  int fds[2];
  if (pipe(fds) != 0) return CudaView{-1};
  pid_t pid = Spawn([&] {
    CudaView v;
    if (visible != nullptr) {
      setenv("CUDA_VISIBLE_DEVICES", visible, 1);
    } else {
      unsetenv("CUDA_VISIBLE_DEVICES");
    }
    CUresult init = cuInit(0);
    if (init == CUDA_ERROR_NO_DEVICE) {
      v.rc = 1;
    } else if (init != CUDA_SUCCESS || cuDeviceGetCount(&v.count) != CUDA_SUCCESS ||
               cuDeviceGetName(v.name, sizeof(v.name), 0) != CUDA_SUCCESS ||
               cuDeviceTotalMem_v2(&v.total, 0) != CUDA_SUCCESS ||
               cuDeviceGetAttribute(&v.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0) !=
                   CUDA_SUCCESS ||
               cuDeviceGetUuid(&v.uuid, 0) != CUDA_SUCCESS || UseDevice(0) != 0 ||
               cuMemGetInfo_v2(&v.free_bytes, &v.total) != CUDA_SUCCESS) {
      v.rc = 2;
    }
    (void)!write(fds[1], &v, sizeof(v));
    return 0;
  });
  CudaView v{-1};
  if (read(fds[0], &v, sizeof(v)) != sizeof(v)) v.rc = -1;
  close(fds[0]);
  close(fds[1]);
  Wait(pid);
  return v;
}

class SimgpuMigCuda : public SimgpuMig {
 protected:
  SimgpuMigCuda() : SimgpuMig("gpu=H100;gpu=SimGPU:16GiB:108") {}
  void SetUp() override {
    SimgpuMig::SetUp();
    EnableMig(gpu_);
    nvmlGpuInstance_t g1 = CreateGi(19, 6, 1);  // id 13: 1g.10gb
    nvmlGpuInstance_t g3 = CreateGi(9, 0, 4);   // id 1: 3g.40gb
    CreateCi(g1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
    CreateCi(g3, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
    nvmlDevice_t mig;
    ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 0, &mig), NVML_SUCCESS);
    big_ = Uuid(mig);  // 3g.40gb, GPU instance 1
    ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 1, &mig), NVML_SUCCESS);
    small_ = Uuid(mig);  // 1g.10gb, GPU instance 13
    small_handle_ = mig;
  }
  std::string big_, small_;
  nvmlDevice_t small_handle_ = nullptr;
};

TEST_F(SimgpuMigCuda, AProcessSeesTheFirstMigDeviceNamedWithItsMemoryAndSms) {
  CudaView v = ViewInChild((small_ + "," + big_).c_str());
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.count, 1);  // one MIG device per process: the second is ignored
  EXPECT_STREQ(v.name, "NVIDIA H100 80GB HBM3 MIG 1g.10gb");
  EXPECT_EQ(v.total, 9984 * kMiB);
  EXPECT_EQ(v.free_bytes, 9984 * kMiB);
  EXPECT_EQ(v.sms, 16);

  // A unique prefix names it too; so does the MIG-GPU-<uuid>/<gi>/<ci> form.
  v = ViewInChild(big_.substr(0, 12).c_str());
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.total, 40448 * kMiB);
  EXPECT_EQ(v.sms, 60);
  v = ViewInChild(("MIG-" + Uuid(gpu_) + "/13/0").c_str());
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.total, 9984 * kMiB);
  // A MIG device and a GPU not in MIG mode.
  v = ViewInChild((big_ + ",1").c_str());
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.count, 2);
}

TEST_F(SimgpuMigCuda, AGpuInMigModeIsNoCudaDeviceItself) {
  EXPECT_EQ(ViewInChild("0").rc, 1);  // CUDA_ERROR_NO_DEVICE
  EXPECT_EQ(ViewInChild(Uuid(gpu_).c_str()).rc, 1);
  CudaView v = ViewInChild("0,1");
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.count, 1);
  EXPECT_STREQ(v.name, "SimGPU");
  // Unset: the GPU in MIG mode gives its first MIG device (GPU instance 1), then GPU 1.
  v = ViewInChild(nullptr);
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.count, 2);
  EXPECT_EQ(v.total, 40448 * kMiB);
  EXPECT_EQ(ViewInChild("MIG-ffffffff").rc, 1);  // names nothing: enumeration stops
}

TEST_F(SimgpuMigCuda, AllocationsBeyondTheInstanceFailAndItStaysInUse) {
  Handshake handshake;
  ChildGuard child(Spawn([&] {
    setenv("CUDA_VISIBLE_DEVICES", small_.c_str(), 1);
    if (UseDevice(0) != 0) return 10;
    CUdeviceptr p, q;
    if (cuMemAlloc_v2(&p, 8192 * kMiB) != CUDA_SUCCESS) return 11;
    if (cuMemAlloc_v2(&q, 2048 * kMiB) != CUDA_ERROR_OUT_OF_MEMORY) return 12;
    size_t free_bytes = 0, total = 0;
    if (cuMemGetInfo_v2(&free_bytes, &total) != CUDA_SUCCESS) return 13;
    if (free_bytes != (9984 - 8192) * kMiB) return 14;
    if (cuMemAlloc_v2(&q, free_bytes) != CUDA_SUCCESS) return 15;  // the exact rest fits
    handshake.SignalAndWait();
    return 0;
  }));
  ASSERT_TRUE(handshake.AwaitReady());
  nvmlMemory_t memory;
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(small_handle_, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 9984 * kMiB);
  EXPECT_EQ(memory.free, 0u);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(gpu_, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 9984 * kMiB);  // the GPU counts its instances' memory
  nvmlProcessInfo_t procs[4];
  unsigned count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(gpu_, &count, procs), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(procs[0].gpuInstanceId, 13u);
  EXPECT_EQ(procs[0].computeInstanceId, 0u);
  // `simgpu stat` shows the instances and their memory; a GPU without MIG has no "mig".
  nlohmann::json stat = state_.Stat();
  const nlohmann::json& mig = stat["devices"][0]["mig"];
  EXPECT_EQ(mig["mode"], 1);
  ASSERT_EQ(mig["gpu_instances"].size(), 2u);
  EXPECT_EQ(mig["gpu_instances"][1]["id"], 13);
  EXPECT_EQ(mig["gpu_instances"][1]["profile"], "1g.10gb");
  EXPECT_EQ(mig["gpu_instances"][1]["used_bytes"], 9984 * kMiB);
  EXPECT_EQ(mig["gpu_instances"][1]["compute_instances"][0]["uuid"], small_);
  EXPECT_FALSE(stat["devices"][1].contains("mig"));
  nvmlGpuInstance_t g1;
  nvmlComputeInstance_t ci;
  ASSERT_EQ(nvmlDeviceGetGpuInstanceById(gpu_, 13, &g1), NVML_SUCCESS);
  ASSERT_EQ(nvmlGpuInstanceGetComputeInstanceById(g1, 0, &ci), NVML_SUCCESS);
  EXPECT_EQ(nvmlComputeInstanceDestroy(ci), NVML_ERROR_IN_USE);
  EXPECT_NE(Cli("reset-gpu 0"), 0);
  handshake.Release();
  EXPECT_EQ(child.Reap(), 0);
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(small_handle_, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.used, 0u);
  EXPECT_EQ(nvmlComputeInstanceDestroy(ci), NVML_SUCCESS);
}

TEST_F(SimgpuMigCuda, ADeviceRootGivesTheMigDevicesWhoseCapabilityNodesItHas) {
  // GPU 0's device node and the capability nodes of GPU instance 13, compute instance 0 (the
  // 1g.10gb): that MIG device alone, though GPU instance 1 comes first.
  std::string root = state_.dir() + "/root";
  std::filesystem::create_directories(root + "/dev/nvidia-caps");
  auto touch = [](const std::string& path) { fclose(fopen(path.c_str(), "w")); };
  touch(root + "/dev/nvidia0");
  setenv("SIMGPU_DEV_ROOT", root.c_str(), 1);
  EXPECT_EQ(ViewInChild(nullptr).rc, 1);  // no capability nodes: no device
  std::string caps = root + "/dev/nvidia-caps/nvidia-cap";
  touch(caps + std::to_string(MigCapMinor(0, 13, -1)));
  EXPECT_EQ(ViewInChild(nullptr).rc, 1);  // the compute instance's node is missing
  touch(caps + std::to_string(MigCapMinor(0, 13, 0)));
  CudaView v = ViewInChild(nullptr);
  EXPECT_EQ(ViewInChild(big_.c_str()).rc, 1);  // named but not accessible: enumeration stops
  unsetenv("SIMGPU_DEV_ROOT");
  ASSERT_EQ(v.rc, 0);
  EXPECT_EQ(v.count, 1);
  EXPECT_EQ(v.total, 9984 * kMiB);
}

class SimgpuMigIdeal : public SimgpuMig {
 protected:
  SimgpuMigIdeal() : SimgpuMig("gpu=H100;profile=ideal") {}
};

TEST_F(SimgpuMigIdeal, AGridRunsInWavesAsWideAsTheComputeInstance) {
  EnableMig(gpu_);
  CreateCi(CreateGi(19, 6, 1), NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);  // 16 SMs
  nvmlDevice_t mig;
  ASSERT_EQ(nvmlDeviceGetMigDeviceHandleByIndex(gpu_, 0, &mig), NVML_SUCCESS);
  std::string uuid = Uuid(mig);
  // 160 blocks of grid_1000ns: 10 waves of 16 on the 1g.10gb (10 us), 2 of 132 on the GPU.
  pid_t child = Spawn([&] {
    setenv("CUDA_VISIBLE_DEVICES", uuid.c_str(), 1);
    CUmodule mod;
    CUfunction f;
    if (UseDevice(0) != 0) return 10;
    if (cuModuleLoadData(&mod, "image") != CUDA_SUCCESS) return 11;
    if (cuModuleGetFunction(&f, mod, "grid_1000ns") != CUDA_SUCCESS) return 12;
    if (cuLaunchKernel(f, 160, 1, 1, 128, 1, 1, 0, nullptr, nullptr, nullptr) != CUDA_SUCCESS) {
      return 13;
    }
    return cuCtxSynchronize() == CUDA_SUCCESS ? 0 : 14;
  });
  ASSERT_EQ(Wait(child), 0);
  EXPECT_EQ(state_.Stat()["devices"][0]["busy_ns"], 10'000);
}

TEST(SimgpuMigMinors, TheTableNumbersEveryInstanceOfEveryGpu) {
  EXPECT_EQ(MigCapMinor(0, 0, -1), 3);
  EXPECT_EQ(MigCapMinor(0, 0, 0), 4);
  EXPECT_EQ(MigCapMinor(0, 1, -1), 12);
  EXPECT_EQ(MigCapMinor(1, 0, -1), 3 + 15 * 9);
  std::string table = MigMinorsTable(2);
  EXPECT_EQ(table.rfind("config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n", 0), 0u);
  EXPECT_NE(table.find("gpu1/gi14/ci7/access " + std::to_string(MigCapMinor(1, 14, 7)) + "\n"),
            std::string::npos);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 2 * 15 * 9);
}

}  // namespace
}  // namespace simgpu::testing
