// The decision vocabulary: one table, every code named, described and parsed back, values stable.
#include "graphsplit/sdk/reason.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace graphsplit::sdk {
namespace {

TEST(ReasonCodeTest, EveryCodeHasAUniqueNameAMeaningAndParsesBack) {
  std::set<std::string> names;
  size_t codes = 0;
#define GS_CHECK_REASON(e, v, name, meaning)                        \
  ++codes;                                                          \
  EXPECT_EQ(static_cast<int>(ReasonCode::e), v);                    \
  EXPECT_EQ(to_string(ReasonCode::e), name);                        \
  EXPECT_EQ(reason_meaning(ReasonCode::e), meaning);                \
  EXPECT_FALSE(std::string_view(meaning).empty()) << name;          \
  EXPECT_EQ(parse_reason_code(name), std::optional(ReasonCode::e)); \
  EXPECT_TRUE(names.insert(name).second) << name << " appears twice";
  GS_REASON_CODES(GS_CHECK_REASON)
#undef GS_CHECK_REASON
  EXPECT_EQ(names.size(), codes);
}

TEST(ReasonCodeTest, UnknownValuesAndNamesAreSaidSo) {
  EXPECT_EQ(to_string(static_cast<ReasonCode>(999)), "UNKNOWN");
  EXPECT_EQ(reason_meaning(static_cast<ReasonCode>(999)), "");
  EXPECT_FALSE(parse_reason_code("NO_SUCH_CODE").has_value());
  EXPECT_FALSE(parse_reason_code("ok").has_value());  // names are case-sensitive
}

// Engines built against SDK ABI 1.0 return these values in SupportVerdict; they must never move.
TEST(ReasonCodeTest, EngineVerdictValuesKeepTheirAbi10Numbers) {
  EXPECT_EQ(static_cast<int>(ReasonCode::kOk), 0);
  EXPECT_EQ(static_cast<int>(ReasonCode::kEngineUnsupportedOp), 1);
  EXPECT_EQ(static_cast<int>(ReasonCode::kEngineUnsupportedDtype), 2);
  EXPECT_EQ(static_cast<int>(ReasonCode::kEngineUnsupportedFormat), 3);
  EXPECT_EQ(static_cast<int>(ReasonCode::kEngineNoDynamicShape), 4);
  EXPECT_EQ(static_cast<int>(ReasonCode::kEngineCheckFailed), 5);
  EXPECT_EQ(static_cast<int>(ReasonCode::kEngineDisabled), 6);
  EXPECT_EQ(static_cast<int>(ReasonCode::kShapeUnknown), 8);
}

}  // namespace
}  // namespace graphsplit::sdk
