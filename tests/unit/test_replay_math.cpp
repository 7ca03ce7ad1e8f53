// Replay distances and thresholds on hand-computed cases (docs/replay.md).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "wit/base/error.h"
#include "wit/run/replay_math.h"

using namespace wit;

namespace {

TensorView view(const std::string& name, const std::vector<float>& v) {
  return {name, DType::kF32, {int64_t(v.size())}, ByteView(reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4)};
}

}  // namespace

TEST_CASE("replay math: tensor distances, floors and fields", "[replay_math]") {
  // before (0, 0), logged after (3, 4): update norm 5, state norm 5.
  const std::vector<float> s0{0, 0}, s1{3, 4}, same{3, 4}, off{3, 4.5f}, m0{1, 1}, m1{1, 1};
  const uint8_t step[8] = {7};
  const TensorView st{"wit.step", DType::kI64, {1}, ByteView(step, 8)};
  const std::vector<TensorView> before{view("adam.m.w", m0), view("w", s0), st};
  const std::vector<TensorView> logged{view("adam.m.w", m1), view("w", s1), st};

  SECTION("an exact replay is at distance 0") {
    const auto d = compare_states(before, logged, {view("adam.m.w", m1), view("w", same), st});
    REQUIRE(d.size() == 2);  // the step counter is compared exactly elsewhere
    for (const auto& t : d) CHECK(t.floors == 0);
    CHECK(d[1].name == "w");
    CHECK(d[1].floor == Approx(kRoundingEps));  // eps * |S| / |S - S0| = eps * 5 / 5
  }
  SECTION("a replay off by 0.5 in one element") {
    const auto d = compare_states(before, logged, {view("adam.m.w", m1), view("w", off), st});
    CHECK(d[1].field == std::string("weights"));
    CHECK(d[1].distance == Approx(0.1));                       // 0.5 / 5
    CHECK(d[1].floors == Approx(0.5 / (kRoundingEps * 5)));   // in rounding floors of |S| = 5
    // A moment that did not move but differs in the replay: infinite distance, finite floors.
    const std::vector<float> m_off{1, 1.5f};
    const auto e = compare_states(before, logged, {view("adam.m.w", m_off), view("w", same), st});
    CHECK(e[0].field == std::string("adam_m"));
    CHECK(std::isinf(e[0].distance));
    CHECK(e[0].floors == Approx(0.5 / (kRoundingEps * std::sqrt(2.0))));
    const auto w = worst_by_field(e);
    CHECK(w.at("adam_m").tensor == "adam.m.w");
    CHECK(w.at("weights").floors == 0);
  }
  SECTION("the worst tensor of a field decides") {
    const std::vector<float> a0{0}, a1{1}, a_r{1.001f}, b0{0}, b1{100}, b_r{100.001f};
    const auto d = compare_states({view("a", a0), view("b", b0)}, {view("a", a1), view("b", b1)},
                                  {view("a", a_r), view("b", b_r)});
    const auto w = worst_by_field(d);
    // The same absolute error is 100 times more rounding floors on the smaller tensor.
    CHECK(w.at("weights").tensor == "a");
    CHECK(w.at("weights").floors == Approx(d[0].floors));
    CHECK(d[0].floors == Approx(100 * d[1].floors).epsilon(1e-3));
  }
  SECTION("mismatched states are refused, naming the tensor") {
    CHECK_THROWS_WITH(compare_states(before, logged, {view("adam.m.w", m1), view("x", same), st}),
                      Catch::Contains("tensor 'w'"));
    CHECK_THROWS(compare_states(before, logged, {view("adam.m.w", m1)}));
  }
}

TEST_CASE("replay math: scalar distances and thresholds", "[replay_math]") {
  CHECK(losses_distance({1.0f, 2.2f}, {1.0f, 2.0f}) == Approx(0.1));
  CHECK(std::isinf(losses_distance({1.0f}, {1.0f, 2.0f})));
  CHECK(scalar_distance(1.5, 1.0) == Approx(0.5));
  CHECK(scalar_distance(0.0, 0.0) == 0);
  CHECK(std::isinf(scalar_distance(1.0, 0.0)));
  CHECK(vector_distance({3, 4.5f}, {3, 4}) == Approx(0.1));
  CHECK(threshold_floors(10, 0.2) == 10);   // noise below one floor counts as one
  CHECK(threshold_floors(10, 37) == 370);
  CHECK(within(370, 370));
  CHECK_FALSE(within(370.5, 370));
  CHECK_FALSE(within(INFINITY, 370));
  CHECK_FALSE(within(NAN, 370));
}

TEST_CASE("replay math: a verify margin is finite and above 0", "[replay_math]") {
  CHECK_NOTHROW(check_margin(10));
  CHECK_NOTHROW(check_margin(1e-4));
  CHECK_THROWS_WITH(check_margin(INFINITY), "--margin must be a finite number above 0: inf");
  CHECK_THROWS_WITH(check_margin(0), "--margin must be a finite number above 0: 0");
  CHECK_THROWS_WITH(check_margin(-3), "--margin must be a finite number above 0: -3");
  CHECK_THROWS_AS(check_margin(NAN), Error);
}
