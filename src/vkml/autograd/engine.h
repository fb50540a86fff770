// Reverse-mode differentiation over the recorded graph.
#pragma once
#include <optional>
#include <vector>

#include "vkml/core/tensor.h"

namespace vk::autograd {

// Accumulates d(roots)/d(leaf), weighted by `grads`, into every leaf's .grad. With no grads, each
// root must have one element and is seeded with one. retain_graph defaults to create_graph.
void backward(const std::vector<Tensor>& roots, const std::vector<Tensor>& grads = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);
void backward(const Tensor& root, const Tensor& grad = Tensor(),
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// Returns d(outputs)/d(inputs) weighted by grad_outputs, touching no .grad. An input that the
// outputs do not depend on gives an undefined Tensor with allow_unused, an error without.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

// Adds g into t's .grad as backward does (in place where nothing else can see .grad); safe
// while other threads accumulate into the same tensor.
void accumulate_grad(const Tensor& t, const Tensor& g, bool create_graph = false);

}  // namespace vk::autograd
