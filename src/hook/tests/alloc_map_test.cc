// Unit tests of the allocation table (alloc_map.c): growth past many entries, deletion and reuse
// of slots, replacement of a reused handle, release of everything a context owned, and any order of
// puts and takes against a model (deleted entries turned empty again must not hide an entry).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <utility>

extern "C" {
#include "hook/alloc_map.h"
}

namespace {

class AllocMapTest : public ::testing::Test {
 protected:
  void SetUp() override { alloc_map_reset_in_child(); }  // a fresh, empty table per test
};

TEST_F(AllocMapTest, KeepsManyEntriesAndFindsEachOnce) {
  constexpr uint64_t kCount = 100000;
  for (uint64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(alloc_map_put(ALLOC_POINTER, 0x7f0000000000ull + i * 4096, int(i % 3), i, 0, nullptr),
              0);
  }
  for (uint64_t i = 0; i < kCount; i += 2) {
    int device = -1;
    uint64_t bytes = 0;
    ASSERT_EQ(alloc_map_take(ALLOC_POINTER, 0x7f0000000000ull + i * 4096, &device, &bytes, nullptr),
              0);
    EXPECT_EQ(device, int(i % 3));
    EXPECT_EQ(bytes, i);
  }
  for (uint64_t i = 0; i < kCount; ++i) {
    EXPECT_EQ(alloc_map_contains(ALLOC_POINTER, 0x7f0000000000ull + i * 4096), i % 2 == 1) << i;
  }
  int device;
  uint64_t bytes;
  EXPECT_EQ(alloc_map_take(ALLOC_POINTER, 0x7f0000000000ull, &device, &bytes, nullptr), -1)
      << "taken twice";
}

TEST_F(AllocMapTest, PutNewKeepsTheFirstEntry) {
  ASSERT_EQ(alloc_map_put_new(ALLOC_PRIMARY, 0, 0, 100, 0xc1), 0);
  EXPECT_EQ(alloc_map_put_new(ALLOC_PRIMARY, 0, 0, 0, 0xc1), 1);
  int device;
  uint64_t bytes;
  ASSERT_EQ(alloc_map_take(ALLOC_PRIMARY, 0, &device, &bytes, nullptr), 0);
  EXPECT_EQ(bytes, 100u);
}

// Regression (issue 15): replacing a key used to drop the old entry's charge silently.
TEST_F(AllocMapTest, KindsAreSeparateAndAReusedHandleReplacesItsEntry) {
  ASSERT_EQ(alloc_map_put(ALLOC_POINTER, 42, 0, 100, 0, nullptr), 0);
  ASSERT_EQ(alloc_map_put(ALLOC_ARRAY, 42, 1, 200, 0, nullptr), 0);
  // The driver reused the pointer: the old entry comes back, for its charge to be released.
  alloc_record old{};
  ASSERT_EQ(alloc_map_put(ALLOC_POINTER, 42, 2, 300, 0, &old), 1);
  EXPECT_EQ(old.device, 0);
  EXPECT_EQ(old.bytes, 100u);
  int device;
  uint64_t bytes;
  ASSERT_EQ(alloc_map_take(ALLOC_POINTER, 42, &device, &bytes, nullptr), 0);
  EXPECT_EQ(device, 2);
  EXPECT_EQ(bytes, 300u);
  EXPECT_EQ(alloc_map_take(ALLOC_POINTER, 42, &device, &bytes, nullptr), -1);
  ASSERT_EQ(alloc_map_take(ALLOC_ARRAY, 42, &device, &bytes, nullptr), 0);
  EXPECT_EQ(bytes, 200u);
}

TEST_F(AllocMapTest, TakeContextReleasesExactlyWhatTheContextOwned) {
  for (uint64_t i = 1; i <= 10; ++i) {
    ASSERT_EQ(alloc_map_put(ALLOC_POINTER, i, int(i % 2), 1000 * i, i <= 6 ? 0xc1 : 0xc2, nullptr),
              0);
  }
  ASSERT_EQ(alloc_map_put(ALLOC_ARRAY, 99, 0, 5, 0, nullptr), 0);  // owned by no context
  uint64_t bytes[4] = {0, 0, 0, 0};
  EXPECT_EQ(alloc_map_take_context(0xc1, bytes, 4), 6);
  EXPECT_EQ(bytes[0], 2000u + 4000u + 6000u);
  EXPECT_EQ(bytes[1], 1000u + 3000u + 5000u);
  EXPECT_EQ(alloc_map_take_context(0xc1, bytes, 4), 0) << "nothing left of that context";
  EXPECT_FALSE(alloc_map_contains(ALLOC_POINTER, 3));
  EXPECT_TRUE(alloc_map_contains(ALLOC_POINTER, 7));
  EXPECT_TRUE(alloc_map_contains(ALLOC_ARRAY, 99));
  EXPECT_EQ(alloc_map_take_context(0, bytes, 4), 0) << "context 0 means none";
}

TEST_F(AllocMapTest, PutsAndTakesInAnyOrderMatchAModel) {
  // Few distinct keys against a table of 256+ entries: long probe runs of live, deleted and empty
  // entries, taken in every order, with whole contexts released now and then.
  std::mt19937_64 random(7);
  std::map<std::pair<int, uint64_t>, std::pair<uint64_t, uint64_t>> model;  // -> bytes, context
  for (int step = 0; step < 200000; ++step) {
    int kind = random() % 4 == 0 ? ALLOC_ARRAY : ALLOC_POINTER;
    uint64_t key = 0x7f0000000000ull + (random() % 300) * (2 << 20);
    auto it = model.find({kind, key});
    switch (random() % 16) {
      case 0: {  // a context goes, with what it owned
        uint64_t context = 1 + random() % 4;
        uint64_t bytes[1] = {0}, expected = 0;
        int count = 0;
        for (auto m = model.begin(); m != model.end();) {
          if (m->second.second != context) {
            ++m;
            continue;
          }
          expected += m->second.first;
          ++count;
          m = model.erase(m);
        }
        ASSERT_EQ(alloc_map_take_context(context, bytes, 1), count) << step;
        ASSERT_EQ(bytes[0], expected) << step;
        break;
      }
      case 1:
        ASSERT_EQ(alloc_map_contains(kind, key), it != model.end()) << step;
        break;
      default:
        if (it == model.end() || random() % 8 == 0) {  // a new allocation, or a reused handle
          uint64_t bytes = 1 + random() % 1000, context = 1 + random() % 4;
          ASSERT_EQ(alloc_map_put(kind, key, 0, bytes, context, nullptr), it == model.end() ? 0 : 1)
              << step;
          model[{kind, key}] = {bytes, context};
        } else {
          int device = -1;
          uint64_t bytes = 0, context = 0;
          ASSERT_EQ(alloc_map_take(kind, key, &device, &bytes, &context), 0) << step;
          ASSERT_EQ(bytes, it->second.first) << step;
          ASSERT_EQ(context, it->second.second) << step;
          model.erase(it);
        }
    }
  }
  for (const auto& [entry, value] : model) {
    int device;
    uint64_t bytes;
    ASSERT_EQ(alloc_map_take(entry.first, entry.second, &device, &bytes, nullptr), 0);
    EXPECT_EQ(bytes, value.first);
  }
}

}  // namespace
