// Suite files: the shipped ones load, and every malformed one gets an error naming row and field.
#include <gtest/gtest.h>

#include "scangrade/suite.h"

namespace scangrade {
namespace {

const std::string kSource = SCANGRADE_SOURCE_DIR;

TEST(Suite, PublicSuiteLoadsAndEveryCaseSaysWhy) {
  const Suite s = load_suite(kSource + "/testcases/public.json");
  EXPECT_EQ(s.name, "public");
  ASSERT_GT(s.cases.size(), 100u);
  for (const Case& c : s.cases) {
    EXPECT_FALSE(c.why.empty()) << c.id;
    EXPECT_LE(c.n, max_n(c.slot)) << c.id;
  }
}

TEST(Suite, PublicSuiteCoversTheEdgesOfEverySlot) {
  const Suite s = load_suite(kSource + "/testcases/public.json");
  const auto has = [&](Slot slot, DType dtype, std::size_t n) {
    for (const Case& c : s.cases)
      if (c.slot == slot && c.dtype == dtype && c.n == n) return true;
    return false;
  };
  for (Slot slot : kAllSlots)
    for (DType dtype : kAllDTypes)
      for (std::size_t n : {0u, 1u, 2u, 3u, 31u, 32u, 33u, 1023u, 1024u})
        EXPECT_TRUE(has(slot, dtype, n)) << name(slot) << " " << name(dtype) << " n=" << n;
  for (std::size_t n : {1000u, 1500u, 2047u, 2048u}) EXPECT_TRUE(has(Slot::Blelloch, DType::Int32, n)) << n;
  for (std::size_t n : {2049ul, 4194303ul, 4194305ul, 1ul << 26}) EXPECT_TRUE(has(Slot::Hierarchical, DType::Int32, n)) << n;
}

TEST(Suite, HiddenExampleLoads) {
  const Suite s = load_suite(kSource + "/testcases/hidden.example.json");
  ASSERT_FALSE(s.cases.empty());
  for (const Case& c : s.cases) EXPECT_NE(c.visibility, Visibility::Visible) << c.id;
}

TEST(Suite, DefaultsFillMissingFields) {
  const Suite s = parse_suite(R"({"defaults": {"points": 3, "seed": 9, "values": "ones"}, "cases": [
      {"id": "a", "slot": "hierarchical", "dtype": "float32", "kind": "exclusive", "n": 5, "why": "w"}]})",
                              "t.json");
  ASSERT_EQ(s.cases.size(), 1u);
  EXPECT_EQ(s.cases[0].points, 3);
  EXPECT_EQ(s.cases[0].seed, 9u);
  EXPECT_EQ(s.cases[0].values, ValueKind::Ones);
  EXPECT_EQ(s.cases[0].kind, ScanKind::Exclusive);
}

std::string error_of(const std::string& text) {
  try {
    parse_suite(text, "bad.json");
  } catch (const SuiteError& e) {
    return e.what();
  }
  return "(no error)";
}

/// A valid row with one field replaced ("" removes it).
std::string row_with(const std::string& field, const std::string& value) {
  std::string row = R"({"id": "x1", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 10, )"
                    R"("values": "random", "seed": 1, "why": "w"})";
  const std::string key = "\"" + field + "\": ";
  const auto at = row.find(key);
  if (at == std::string::npos) return row.substr(0, row.size() - 1) + ", " + key + value + "}";
  const auto end = row.find_first_of(",}", at + key.size());
  if (value.empty() && row[end] == ',') return row.substr(0, at) + row.substr(end + 2);
  if (value.empty()) return row.substr(0, at - 2) + row.substr(end);  // the last field: drop ", " before it
  return row.substr(0, at + key.size()) + value + row.substr(end);
}

std::string one_case(const std::string& row) { return R"({"cases": [)" + row + "]}"; }

struct Malformed {
  std::string label, text, expected;
};

class MalformedSuite : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedSuite, ErrorNamesTheRowAndField) {
  const std::string message = error_of(GetParam().text);
  EXPECT_NE(message.find(GetParam().expected), std::string::npos) << "message: " << message;
  EXPECT_NE(message.find("bad.json"), std::string::npos) << message;
}

INSTANTIATE_TEST_SUITE_P(
    Suite, MalformedSuite,
    ::testing::Values(
        Malformed{"not_json", "{\"cases\": [", "not valid JSON"},
        Malformed{"no_cases", "{}", "field 'cases': missing"},
        Malformed{"unknown_top", R"({"cases": [], "extra": 1})", "unknown top-level field 'extra'"},
        Malformed{"bad_version", R"({"version": 2, "cases": []})", "format version 1"},
        Malformed{"row_not_object", R"({"cases": [3]})", "cases[0]: expected an object"},
        Malformed{"missing_n", one_case(row_with("n", "")), "cases[0] (id 'x1'): field 'n': missing"},
        Malformed{"negative_n", one_case(row_with("n", "-4")), "field 'n': expected a non-negative integer"},
        Malformed{"string_n", one_case(row_with("n", "\"10\"")), "field 'n': expected a non-negative integer"},
        Malformed{"n_over_limit", one_case(row_with("n", "1025")), "above the hillis_steele slot's limit of 1024"},
        Malformed{"bad_slot", one_case(row_with("slot", "\"kogge\"")), "field 'slot': 'kogge' is not one of"},
        Malformed{"bad_dtype", one_case(row_with("dtype", "\"int64\"")), "field 'dtype': 'int64' is not one of"},
        Malformed{"wrong_kind", one_case(row_with("kind", "\"exclusive\"")), "computes only the inclusive scan"},
        Malformed{"real_int", one_case(row_with("values", "\"real\"")), "'real' values need dtype float32"},
        Malformed{"unknown_field", one_case(row_with("colour", "1")), "field 'colour': unknown field"},
        Malformed{"bad_points", one_case(row_with("points", "-1")), "field 'points': expected a non-negative"},
        Malformed{"bad_perf", one_case(row_with("perf", "\"yes\"")), "field 'perf': expected true or false"},
        Malformed{"bad_id", one_case(row_with("id", "\"a b\"")), "field 'id'"},
        Malformed{"missing_why", one_case(row_with("why", "")), "field 'why': missing"},
        Malformed{"sanitize_not_list", one_case(row_with("sanitize", "\"racecheck\"")),
                  "cases[0] (id 'x1'): field 'sanitize': expected a list"},
        Malformed{"sanitize_unknown_tool", one_case(row_with("sanitize", R"(["racecheck", "initcheck"])")),
                  "cases[0] (id 'x1'): field 'sanitize': \"initcheck\" is not one of: racecheck, memcheck, synccheck"},
        Malformed{"sanitize_twice", one_case(row_with("sanitize", R"(["memcheck", "memcheck"])")),
                  "field 'sanitize': 'memcheck' is listed twice"},
        Malformed{"performance_not_object", R"({"performance": 5, "cases": []})",
                  "field 'performance': expected an object"},
        Malformed{"performance_unknown_field", R"({"performance": {"bonus": 1}, "cases": []})",
                  "field 'performance': unknown field 'bonus'"},
        Malformed{"performance_bad_slot", R"({"performance": {"points": {"kogge": 1}}, "cases": []})",
                  "field 'performance'.points: 'kogge' is not one of"},
        Malformed{"performance_negative", R"({"performance": {"points": {"hierarchical": -1}}, "cases": []})",
                  "field 'performance'.points.hierarchical: expected a non-negative number"},
        Malformed{"duplicate_id", R"({"cases": [)" + row_with("seed", "1") + ", " + row_with("seed", "2") + "]}",
                  "cases[1] (id 'x1'): field 'id': duplicate id"}),
    [](const ::testing::TestParamInfo<Malformed>& info) { return info.param.label; });

TEST(Suite, SanitizeAndPerformanceAreRead) {
  const Suite s = parse_suite(R"({"performance": {"points": {"hierarchical": 5, "single_pass": 2.5}}, "cases": [
      {"id": "a", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 5, "values": "ones",
       "seed": 1, "why": "w", "sanitize": ["racecheck", "synccheck"]},
      {"id": "b", "slot": "hillis_steele", "dtype": "int32", "kind": "inclusive", "n": 5, "values": "ones",
       "seed": 1, "why": "w"}]})",
                              "t.json");
  ASSERT_EQ(s.cases.size(), 2u);
  EXPECT_EQ(s.cases[0].sanitize, (std::vector<std::string>{"racecheck", "synccheck"}));
  EXPECT_TRUE(s.cases[1].sanitize.empty());
  ASSERT_EQ(s.performance_points.size(), 2u);
  EXPECT_EQ(s.performance_points.at(Slot::Hierarchical), 5);
  EXPECT_EQ(s.performance_points.at(Slot::SinglePass), 2.5);
  EXPECT_TRUE(parse_suite(R"({"cases": []})", "t.json").performance_points.empty());
}

TEST(Suite, MissingFileIsReported) {
  try {
    load_suite("/nonexistent/suite.json");
    FAIL() << "no error";
  } catch (const SuiteError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos);
  }
}

TEST(Suite, CaseLabelsAreTestNameSafe) {
  Case c;
  c.id = "hierarchical.int32.n2049.random.exclusive";
  c.slot = Slot::Hierarchical;
  EXPECT_EQ(case_label(c), "int32_n2049_random_exclusive");
}

}  // namespace
}  // namespace scangrade
