#include "common/status.h"

#include <gtest/gtest.h>

namespace tessera {
namespace {

Result<int> Half(int n) {
  if (n % 2) return InvalidArgument("odd number " + std::to_string(n));
  return n / 2;
}

Result<int> Quarter(int n) {
  ASSIGN_OR_RETURN(int half, Half(n));
  return Half(half);
}

TEST(Status, ResultCarriesValueOrError) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().ToString(), "InvalidArgument: odd number 3");
  EXPECT_EQ(bad.status().WithContext("quarter").message(), "quarter: odd number 3");
}

TEST(Status, ErrnoNamesPathAndOperation) {
  Status s = ErrnoStatus("open", "/nope", ENOENT);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "open /nope: No such file or directory");
}

}  // namespace
}  // namespace tessera
