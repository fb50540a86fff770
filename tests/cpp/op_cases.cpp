#include "op_cases.h"

namespace vk::test {
std::vector<OpCase>& op_cases() {
  static std::vector<OpCase> cases;
  return cases;
}
}  // namespace vk::test
