// Test cases for the op table. Every op in the table must have at least one case (checked by
// test_op_table.cpp). A case builds its inputs (float64 leaves requiring grad, plus any constant
// index tensors) and a function of them that exercises the op. For ops with a gradient rule the
// sweep runs gradcheck and gradgradcheck on it; for the others it checks the op really has none.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "vkml/vkml.h"

namespace vk::test {

struct OpCase {
  OpKind kind;
  std::string name;  // unique, e.g. "add/broadcast_row"
  std::function<std::vector<Tensor>()> inputs;
  autograd::TensorFn fn;
  bool second_order = true;  // set false only with a reason in the case's comment
};

std::vector<OpCase>& op_cases();

struct RegisterOpCases {
  explicit RegisterOpCases(std::vector<OpCase> cases) {
    for (auto& c : cases) op_cases().push_back(std::move(c));
  }
};

}  // namespace vk::test
