// Results of vkml's own kernels are bitwise identical whether run with 1 or 2 threads: a whole
// training step (forward and backward through matmul, conv, pooling, reductions) compared with
// memcmp.
#include <cstring>

#include "test_util.h"

namespace vk::test {
namespace {

struct StepResult {
  std::vector<Tensor> tensors;
};

StepResult training_step(int threads) {
  cpu::set_num_threads(threads);
  manual_seed(42);
  Tensor x = randn({64, 3, 16, 16});
  Tensor w = randn({8, 3, 3, 3}).set_requires_grad(true);
  Tensor b = randn({8}).set_requires_grad(true);
  Tensor w2 = (randn({8 * 8 * 8, 10}) * 0.05).detach().set_requires_grad(true);
  Tensor labels = randint(0, 10, {64});
  Tensor h = relu(conv2d(x, w, b, 1, 1, 1, 1));
  h = max_pool2d(h, Window2d{2, 2, 2, 2, 0, 0, 1, 1}).values;
  Tensor logits = matmul(reshape(h, {64, -1}), w2);
  Tensor loss = neg(mean(gather(log_softmax(logits, 1), 1, unsqueeze(labels, 1))));
  Tensor big = randn({1 << 20});
  Tensor stats = sum(big) + mean(exp(big * 0.1)) + var(big);
  autograd::backward(loss);
  cpu::set_num_threads(2);
  return {{loss, w.grad(), b.grad(), w2.grad(), stats, softmax(logits, 0)}};
}

TEST(Determinism, TrainingStepBitwiseIdenticalAt1And2Threads) {
  int saved = cpu::num_threads();
  StepResult one = training_step(1), two = training_step(2);
  cpu::set_num_threads(saved);
  for (size_t i = 0; i < one.tensors.size(); ++i) {
    Tensor a = contiguous(one.tensors[i]), b = contiguous(two.tensors[i]);
    ASSERT_EQ(a.shape(), b.shape());
    EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.numel() * dtype_size(a.dtype())), 0)
        << "result " << i << " (" << a.describe() << ") differs between 1 and 2 threads";
  }
}

}  // namespace
}  // namespace vk::test
