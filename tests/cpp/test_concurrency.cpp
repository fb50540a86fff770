// Regression tests for issue #12's concurrency and teardown defects, at the C++ layer. These are
// the tests `make test-tsan` runs under ThreadSanitizer (with test_kernel_threads.cpp and the
// determinism tests): they exercise the thread pool, the grad locks and the hook list from
// several threads at once.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "test_util.h"

namespace vk {
namespace {

using test::values;

TEST(Concurrency, BackwardFromManyThreadsIntoSharedLeafAddsEveryUpdate) {
  Tensor w = values(std::vector<double>(64, 0.0), {8, 8});
  Tensor x = ones({4, 8}, DType::Float64);
  constexpr int kThreads = 4, kSteps = 100;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      for (int s = 0; s < kSteps; ++s) autograd::backward(sum(matmul(x, w)));
    });
  for (auto& t : threads) t.join();
  // d/dW sum(x @ W) = x^T 1: 4 in every element, per call
  for (double v : to_vector(w.grad())) EXPECT_EQ(v, 4.0 * kThreads * kSteps);
}

// The same race without the rest of backward around it, so that the threads overlap in the
// accumulation itself on every run (the test above mostly waits in matmul and the allocator).
TEST(Concurrency, AccumulateGradFromManyThreadsAddsEverything) {
  Tensor w = values(std::vector<double>(1024, 0.0), {1024});
  const Tensor g = ones({1024}, DType::Float64);
  constexpr int kThreads = 4, kSteps = 2000;
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) {
      }
      for (int s = 0; s < kSteps; ++s) autograd::accumulate_grad(w, g);
    });
  for (auto& t : threads) t.join();
  for (double v : to_vector(w.grad())) EXPECT_EQ(v, 1.0 * kThreads * kSteps);
}

TEST(Concurrency, CreateGraphAccumulationFromManyThreads) {
  Tensor w = values({1.0, 2.0}, {2});
  constexpr int kThreads = 4, kSteps = 50;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      for (int s = 0; s < kSteps; ++s) autograd::backward(sum(w * w), {}, std::nullopt, true);
    });
  for (auto& t : threads) t.join();
  test::expect_values(w.grad(), {2.0 * kThreads * kSteps, 4.0 * kThreads * kSteps}, 1e-9);
  // w.grad's graph saves w: the reference cycle PyTorch also warns about under create_graph.
  w.set_grad(Tensor());
}

TEST(Concurrency, HookRegisteringHooksDuringBackward) {
  Tensor x = values({1.0, 2.0}, {2});
  Tensor y = x * 1.0;
  int calls = 0;
  y.register_hook([&](const Tensor&) {
    ++calls;
    for (int i = 0; i < 100; ++i)  // the list the walk reads reallocates many times over
      y.register_hook([](const Tensor&) { return Tensor(); });
    return Tensor();
  });
  autograd::backward(sum(y * 2.0));
  EXPECT_EQ(calls, 1);
  test::expect_values(x.grad(), {2.0, 2.0});
}

TEST(Concurrency, RegisterHookFromAnotherThreadDuringBackward) {
  Tensor w = values(std::vector<double>(16, 0.5), {4, 4});
  Tensor x = ones({3, 4}, DType::Float64);
  std::atomic<bool> stop{false};
  std::atomic<int> hook_calls{0};
  std::thread registrar([&] {
    while (!stop.load()) {
      uint64_t id = w.register_hook([&](const Tensor&) {
        hook_calls.fetch_add(1);
        return Tensor();
      });
      w.remove_hook(id);
    }
  });
  for (int s = 0; s < 100; ++s) {
    w.set_grad(Tensor());
    autograd::backward(sum(matmul(x, w)));
    test::expect_values(w.grad(), std::vector<double>(16, 3.0));
  }
  stop = true;
  registrar.join();
  EXPECT_TRUE(w.hooks().empty());
}

TEST(Concurrency, RemovedHooksAreGone) {
  Tensor w = values({1.0}, {1});
  for (int i = 0; i < 10000; ++i) w.remove_hook(w.register_hook([](const Tensor& g) { return g; }));
  EXPECT_TRUE(w.hooks().empty());
  const uint64_t kept = w.register_hook([](const Tensor& g) { return g * 3.0; });
  w.remove_hook(kept + 1000);  // an id it never had: nothing happens
  autograd::backward(sum(w * 2.0));
  test::expect_values(w.grad(), {6.0});
}

TEST(Concurrency, ReadingGradWhileAnotherThreadAccumulates) {
  Tensor w = values(std::vector<double>(1024, 0.0), {1024});
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) {
      Tensor g = w.grad();
      if (g.defined()) {
        EXPECT_EQ(g.numel(), 1024);
      }
    }
  });
  for (int s = 0; s < 200; ++s) autograd::backward(sum(w * 3.0));
  stop = true;
  reader.join();
  for (double v : to_vector(w.grad())) EXPECT_EQ(v, 600.0);
}

TEST(Teardown, ChainThroughGradIsFreedWithoutRecursion) {
  // t.grad = previous, 200,000 deep: each tensor's .grad is the only owner of the next one.
  Tensor prev;
  for (int i = 0; i < 200000; ++i) {
    Tensor t = zeros({1}, DType::Float32);
    if (prev.defined()) t.set_grad(prev);
    prev = t;
  }
  prev = Tensor();  // must not overflow the stack
  SUCCEED();
}

TEST(Fork, ChildRunsParallelOpsAfterThePoolStarted) {
  cpu::set_num_threads(2);
  Tensor a = ones({1 << 20}, DType::Float32);
  EXPECT_EQ(sum(a * 2.0).item(), 2.0 * (1 << 20));  // the workers exist now
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(30);  // a hang in the child ends it with SIGALRM instead of stalling the suite
    Tensor b = ones({1 << 20}, DType::Float32);
    const double s = sum(b * 2.0).item();
    _exit(s == 2.0 * (1 << 20) && cpu::num_threads() == 2 ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // the parent's pool still works
  EXPECT_EQ(sum(a * 3.0).item(), 3.0 * (1 << 20));
}

TEST(Checkpoint, ClosedOverLeafGetsTheUncheckpointedGradient) {
  Tensor w = test::leaf({3, 3});
  Tensor x = test::leaf({2, 3});
  auto block = [&](const std::vector<Tensor>& in) { return tanh(matmul(in[0], w)); };
  autograd::backward(sum(block({x}) * block({x})));
  const std::vector<double> want_w = to_vector(w.grad()), want_x = to_vector(x.grad());
  w.set_grad(Tensor());
  x.set_grad(Tensor());
  Tensor y = autograd::checkpoint(block, {x});
  autograd::backward(sum(y * y));
  ASSERT_TRUE(w.grad().defined()) << "the closed-over weight got no gradient";
  test::expect_values(w.grad(), want_w, 1e-12);
  test::expect_values(x.grad(), want_x, 1e-12);
}

TEST(Checkpoint, ClosedOverLeafGradcheck) {
  Tensor w = test::leaf({2, 2});
  auto f = [&](const std::vector<Tensor>& in) {
    return autograd::checkpoint(
        [&](const std::vector<Tensor>& xs) { return sin(matmul(xs[0], w)); }, {in[0]});
  };
  Tensor x = test::leaf({3, 2});
  // gradcheck differentiates w.r.t. its inputs: pass w as a (closed-over) input of the outer fn
  auto g = [&](const std::vector<Tensor>& in) {
    (void)in;
    return f({x});
  };
  EXPECT_EQ(autograd::gradcheck(g, {x, w}), "");
  EXPECT_EQ(autograd::gradgradcheck(g, {x, w}), "");
}

}  // namespace
}  // namespace vk
