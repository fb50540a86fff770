// Trains a small MLP on synthetic data with the C++ API and prints the loss falling.
// Data: three Gaussian blobs in 2-D; model: 2 -> 32 -> 32 -> 3 with ReLU; loss: cross-entropy
// (log_softmax, then the label's entry picked with gather); optimizer: plain SGD, in-place
// updates under no_grad.
#include <cstdio>
#include <vector>

#include "vkml/vkml.h"

using namespace vk;

namespace {

Tensor param(const Shape& shape, double scale) {
  NoGradGuard no_grad;
  Tensor p = randn(shape) * scale;
  return p.set_requires_grad(true);
}

struct Mlp {
  Tensor w1 = param({2, 32}, 0.7), b1 = param({32}, 0.0);
  Tensor w2 = param({32, 32}, 0.25), b2 = param({32}, 0.0);
  Tensor w3 = param({32, 3}, 0.25), b3 = param({3}, 0.0);

  Tensor operator()(const Tensor& x) const {
    Tensor h = relu(matmul(x, w1) + b1);
    h = relu(matmul(h, w2) + b2);
    return matmul(h, w3) + b3;
  }
  std::vector<Tensor> parameters() const { return {w1, b1, w2, b2, w3, b3}; }
};

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  Tensor logp = log_softmax(logits, 1);
  Tensor picked = gather(logp, 1, unsqueeze(labels, 1));
  return neg(mean(picked));
}

}  // namespace

int main() {
  manual_seed(0);
  const int64_t n = 600;
  std::vector<double> label_values;
  for (int64_t i = 0; i < n; ++i) label_values.push_back(static_cast<double>(i % 3));
  Tensor labels = from_vector(label_values, {n}, DType::Int64);
  Tensor centers = from_vector({-1, 0, 1, 0, 0, 1.2}, {3, 2});
  Tensor x = index_select(centers, 0, labels) + randn({n, 2}) * 0.7;

  Mlp model;
  const double lr = 0.1;
  for (int step = 0; step <= 300; ++step) {
    Tensor loss = cross_entropy(model(x), labels);
    for (auto& p : model.parameters()) p.set_grad(Tensor());
    autograd::backward(loss);
    {
      NoGradGuard no_grad;
      for (auto& p : model.parameters()) add_(p, p.grad(), -lr);
    }
    if (step % 30 == 0) {
      NoGradGuard no_grad;
      Tensor correct = sum(cast(eq(argmax(model(x), 1), labels), DType::Int64));
      std::printf("step %3d  loss %.4f  accuracy %.1f%%\n", step, loss.item(),
                  100.0 * correct.item() / static_cast<double>(n));
    }
  }
  return 0;
}
