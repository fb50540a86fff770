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

// The fused softmax/log_softmax backward and layer norm kernels, forward and backward, on rows
// (last dim) and columns (dim 0): rows are split among threads, never a row's own reduction.
std::vector<Tensor> fused_step(int threads) {
  cpu::set_num_threads(threads);
  manual_seed(7);
  Tensor x = randn({300, 777}).set_requires_grad(true);
  Tensor w = randn({777}).set_requires_grad(true);
  Tensor b = randn({777}).set_requires_grad(true);
  Tensor g = randn({300, 777});
  Tensor s = softmax(x, 1), ls = log_softmax(x, 0), ln = layer_norm(x, {777}, w, b, 1e-5);
  Tensor sb = softmax_backward(g, s, 1), lsb = log_softmax_backward(g, ls, 0);
  Tensor sb0 = softmax_backward(g, softmax(x, 0), 0), lsb1 = log_softmax_backward(g, ls, 1);
  Tensor lnb = layer_norm_backward(g, x, {777}, w, 1e-5);
  // Enough rows for several partial sums in the weight/bias gradients.
  Tensor x2 = randn({9000, 64}), g2 = randn({9000, 64});
  Tensor pg = layer_norm_param_grad(g2, x2, {64}, 1e-5);
  autograd::backward({s, ls, ln}, {g, g, g});
  cpu::set_num_threads(2);
  return {s, ls, ln, sb, lsb, sb0, lsb1, lnb, pg, x.grad(), w.grad(), b.grad()};
}

TEST(Determinism, FusedSoftmaxAndLayerNormBitwiseIdenticalAt1To3Threads) {
  int saved = cpu::num_threads();
  std::vector<Tensor> one = fused_step(1), two = fused_step(2), three = fused_step(3);
  cpu::set_num_threads(saved);
  for (const auto* other : {&two, &three})
    for (size_t i = 0; i < one.size(); ++i) {
      Tensor a = contiguous(one[i]), b = contiguous((*other)[i]);
      ASSERT_EQ(a.shape(), b.shape());
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.numel() * dtype_size(a.dtype())), 0)
          << "result " << i << " (" << a.describe() << ") differs between 1 and "
          << (other == &two ? 2 : 3) << " threads";
    }
}

}  // namespace
}  // namespace vk::test
