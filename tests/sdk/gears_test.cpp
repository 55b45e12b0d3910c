// Gear options (reference 6.1-6.3): every validation rule with its GE code, and GE's distribution of a gear
// over several inputs.
#include "graphsplit/sdk/gears.h"

#include <gtest/gtest.h>

namespace graphsplit::sdk {
namespace {

std::string error(const GearOptionText& t) {
  GearRequest r;
  const Status s = parse_gear_options(t, &r);
  return s.is_ok() ? "ok" : s.message();
}

bool starts(const std::string& s, const std::string& code) {
  return s.rfind(code + ": ", 0) == 0;
}

TEST(GearOptionsTest, EachRuleGivesItsGeCode) {
  struct Case {
    GearOptionText text;
    const char* code;
  };
  const Case cases[] = {
      {{"x:-1,3", "1,2", "", "1;2", ""}, "E10009"},                // two gear options
      {{"", "1,2", "", "", ""}, "E10004"},                         // no --input_shape
      {{"x:1,-1", "1,2", "", "", ""}, "E10018"},                   // batch: -1 not at dim 0
      {{"x:-1,-1", "1,2", "", "", ""}, "E10018"},                  // batch: a later -1
      {{"x:1,3", "1,2", "", "", ""}, "E10031"},                    // batch: no -1 at all
      {{"x:-1,3", "1,a", "", "", ""}, "E10003"},                   // batch: a letter
      {{"x:-1,3", "1", "", "", ""}, "E10035"},                     // one gear
      {{"x:-1,3", "1,1", "", "", ""}, "E10039"},                   // a duplicate gear
      {{"x:1,3,-1,-1", "", "2,2;4,4", "", ""}, "E10003"},          // image: no --input_format
      {{"x:1,3,-1,-1", "", "2,2;4,4", "", "NC"}, "E10003"},        // image: bad format
      {{"x:1,-1,-1,3", "", "2,2;4,4", "", "NCHW"}, "E10019"},      // image: -1 not at H, W
      {{"x:-1,3", "", "2,2;4,4", "", "NCHW"}, "E10019"},           // image: not 4-D
      {{"x:1,3,-1,-1", "", "2,2,2;4,4,4", "", "NCHW"}, "E10020"},  // image: three values
      {{"x:1,3,-1,-1", "", "2,x;4,4", "", "NCHW"}, "E10003"},      // image: a letter
      {{"x:1,3", "", "", "1;2", ""}, "E10001"},                    // dims: no -1
      {{"x:-1,3", "", "", ";", ""}, "E10058"},                     // dims: empty
      {{"x:-1,-1", "", "", "1;2", ""}, "E10003"},                  // dims: one value for two -1s
      {{"x:-1,3", "", "", "1;b", ""}, "E10001"},                   // dims: not a number
      {{"x:-1,3", "", "", "1;-2", ""}, "E10038"},                  // dims: negative
      {{"x:-1,3;y:-1", "", "", "1,2;3", ""}, "E10003"},            // dims: unequal lengths
      {{"x:-1~3,3", "", "", "1;2", ""}, "E10040"},                 // a range with gears
      {{"x:1.5,3", "", "", "", ""}, "E10002"},                     // a '.' in a value
      {{"x:a,3", "", "", "", ""}, "E10014"},                       // not a number
      {{"x:99999999999999999999,3", "", "", "", ""}, "E10013"},    // out of int64
      {{"x:0,3", "", "", "", ""}, "E10011"},                       // 0 without gears
      {{"nocolon", "", "", "1;2", ""}, "E10002"},                  // no ':'
      {{"x:-1,3", "", "", "", "NCWH"}, "E10003"},                  // --input_format
  };
  for (const Case& c : cases) {
    const std::string e = error(c.text);
    EXPECT_TRUE(starts(e, c.code)) << "input_shape=" << c.text.input_shape
                                   << " batch=" << c.text.dynamic_batch_size
                                   << " image=" << c.text.dynamic_image_size
                                   << " dims=" << c.text.dynamic_dims << ": expected " << c.code << ", got "
                                   << e;
  }
  // 101 gears: E10036 (the reference follows GE's docs: at most 100).
  std::string many;
  for (int i = 1; i <= 101; ++i) many += (i > 1 ? "," : "") + std::to_string(i);
  EXPECT_TRUE(starts(error({"x:-1,3", many, "", "", ""}), "E10036"));
  many = many.substr(0, many.rfind(','));
  EXPECT_EQ(error({"x:-1,3", many, "", "", ""}), "ok");
}

TEST(GearOptionsTest, SyntaxDetails) {
  GearRequest r;
  // The name is everything before the last ':'; an empty value is a scalar; empty gear tokens are skipped.
  ASSERT_TRUE(parse_gear_options({"ns:x:-1,3;sr:", "", "", "1;;2;", ""}, &r).is_ok());
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].name, "ns:x");
  EXPECT_EQ(r.inputs[1].name, "sr");
  EXPECT_TRUE(r.inputs[1].dims.empty());
  EXPECT_EQ(r.kind, GearKind::kDims);
  EXPECT_EQ(r.gears, (std::vector<std::vector<int64_t>>{{1}, {2}}));
  // A trailing ',' in batch gears is stripped.
  ASSERT_TRUE(parse_gear_options({"x:-1,3", "1,4,", "", "", ""}, &r).is_ok());
  EXPECT_EQ(r.gears, (std::vector<std::vector<int64_t>>{{1}, {4}}));
  EXPECT_STREQ(gear_kind_name(r.kind), "DYNAMIC_BATCH");
  // No gear option: nothing to do, and --input_shape is still checked.
  ASSERT_TRUE(parse_gear_options({"x:1,3", "", "", "", ""}, &r).is_ok());
  EXPECT_EQ(r.kind, GearKind::kNone);
}

TEST(GearOptionsTest, DistributionFollowsGe) {
  // Reference 6.3: apple[-1], bed[-1,-1,224,224], cat[-1,3,224,224], ear[3]; gear 1,3,3,1 gives apple=1,
  // bed=(3,3), cat=1.
  GearRequest r;
  ASSERT_TRUE(parse_gear_options(
                  {"apple:-1;bed:-1,-1,224,224;cat:-1,3,224,224;ear:3", "", "", "1,3,3,1;2,6,6,4", ""}, &r)
                  .is_ok());
  std::vector<std::vector<std::vector<int64_t>>> per_gear;
  ASSERT_TRUE(distribute_gears(r, &per_gear).is_ok());
  ASSERT_EQ(per_gear.size(), 2u);
  EXPECT_EQ(per_gear[0], (std::vector<std::vector<int64_t>>{{1}, {3, 3, 224, 224}, {1, 3, 224, 224}, {3}}));
  EXPECT_EQ(per_gear[1], (std::vector<std::vector<int64_t>>{{2}, {6, 6, 224, 224}, {4, 3, 224, 224}, {3}}));
  // Batch: every input with -1 at dimension 0 takes the whole one-value gear.
  ASSERT_TRUE(parse_gear_options({"a:-1,3;b:-1,5", "2,8", "", "", ""}, &r).is_ok());
  ASSERT_TRUE(distribute_gears(r, &per_gear).is_ok());
  EXPECT_EQ(per_gear[1], (std::vector<std::vector<int64_t>>{{8, 3}, {8, 5}}));
  // A request assembled without the CLI checks: a gear too short (E10046) or overrun (E10045).
  GearRequest raw;
  raw.kind = GearKind::kDims;
  raw.inputs = {{"a", {-1, -1, -1}}};
  raw.gears = {{1, 2}, {3, 4}};
  Status s = distribute_gears(raw, &per_gear);
  EXPECT_TRUE(starts(s.message(), "E10046")) << s.message();
  raw.inputs = {{"a", {-1, -1}}, {"b", {-1, -1}}};
  raw.gears = {{1, 2, 3}, {4, 5, 6}};
  s = distribute_gears(raw, &per_gear);
  EXPECT_TRUE(starts(s.message(), "E10045")) << s.message();
}

}  // namespace
}  // namespace graphsplit::sdk
