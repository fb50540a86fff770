// The op-level profiler (ops/profile.h): what dispatch and backward record while it is on.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include "test_util.h"
#include "vkml/ops/profile.h"

namespace vk {
namespace {

const profile::Event* find(const std::vector<profile::Event>& events, const std::string& name) {
  auto it = std::find_if(events.begin(), events.end(),
                         [&](const profile::Event& e) { return e.name == name; });
  return it == events.end() ? nullptr : &*it;
}

TEST(Profile, RecordsOpsWithShapesAndBackwardRulesAsRanges) {
  Tensor x = test::leaf({3});
  profile::start(/*record_shapes=*/true);
  Tensor y = sum(x * x);
  autograd::backward(y);
  const std::vector<profile::Event> events = profile::stop();
  const profile::Event* mul = find(events, "mul");
  ASSERT_NE(mul, nullptr);
  EXPECT_FALSE(mul->range);
  EXPECT_EQ(mul->shapes, (std::vector<Shape>{{3}, {3}}));
  EXPECT_LE(mul->start_ns, mul->end_ns);
  const profile::Event* rule = find(events, "backward: mul");
  ASSERT_NE(rule, nullptr);
  EXPECT_TRUE(rule->range);
  EXPECT_TRUE(rule->shapes.empty());
  // the rule's own ops (g * x, twice) ran inside its range, on its thread
  int inside = 0;
  for (const auto& e : events)
    if (!e.range && e.name == "mul" && e.thread == rule->thread && e.start_ns >= rule->start_ns &&
        e.end_ns <= rule->end_ns)
      ++inside;
  EXPECT_EQ(inside, 2);
  EXPECT_NE(find(events, "backward: sum"), nullptr);
}

TEST(Profile, OffRecordsNothingAndShapesOnlyWhenAsked) {
  Tensor a = test::leaf({2, 2});
  (void)(a + a);
  profile::start(false);
  (void)(a + a);
  const auto events = profile::stop();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, "add");
  EXPECT_TRUE(events[0].shapes.empty());
  (void)(a + a);
  profile::start(false);
  EXPECT_TRUE(profile::stop().empty());  // nothing from before or between
}

TEST(Profile, StartingTwiceRaises) {
  profile::start(false);
  EXPECT_THROW(profile::start(false), RuntimeError);
  profile::stop();
}

TEST(Profile, OpsOnOtherThreadsGoToTheSameList) {
  Tensor a = test::leaf({8});
  profile::start(false);
  std::thread t1([&] {
    for (int i = 0; i < 50; ++i) (void)exp(a);
  });
  std::thread t2([&] {
    for (int i = 0; i < 50; ++i) (void)neg(a);
  });
  t1.join();
  t2.join();
  const auto events = profile::stop();
  std::set<uint32_t> exp_threads, neg_threads;
  for (const auto& e : events) (e.name == "exp" ? exp_threads : neg_threads).insert(e.thread);
  EXPECT_EQ(events.size(), 100u);
  EXPECT_EQ(exp_threads.size(), 1u);
  EXPECT_EQ(neg_threads.size(), 1u);
  EXPECT_NE(*exp_threads.begin(), *neg_threads.begin());
}

}  // namespace
}  // namespace vk
