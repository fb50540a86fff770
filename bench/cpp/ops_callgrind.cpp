// Instructions per op, for machines too noisy to time on: run under callgrind twice with
// different counts and divide the difference (start-up cancels). Build without -march=native
// (valgrind does not run AVX-512), e.g. against a VKML_NATIVE=OFF build:
//
//   for n in 2000 12000; do
//     valgrind --tool=callgrind --callgrind-out-file=/dev/null ./ops_callgrind nograd $n
//   done    # instructions per op: (second "I refs" - first) / 10000
//
// kinds: nograd (a * b, one element, no grad mode), record (a * b recorded), scalar (a * 2.0),
// exp (exp(a)), build (a chain of n scalar adds, then freed), chain (build + backward).
#include <cstdlib>
#include <cstring>

#include "vkml/vkml.h"

using namespace vk;

int main(int argc, char** argv) {
  if (argc < 3) return 1;
  const char* kind = argv[1];
  const int n = std::atoi(argv[2]);
  Tensor a = full({1}, 1.5), b = full({1}, 2.0);
  Tensor ag = full({1}, 1.5).set_requires_grad(true);
  auto is = [&](const char* k) { return std::strcmp(kind, k) == 0; };
  if (is("nograd") || is("scalar") || is("exp")) {
    NoGradGuard ng;
    for (int i = 0; i < n; ++i) {
      Tensor c = is("nograd") ? a * b : is("scalar") ? a * 2.0 : exp(a);
    }
  } else if (is("record")) {
    for (int i = 0; i < n; ++i) Tensor c = ag * b;
  } else if (is("build") || is("chain")) {
    Tensor one = full({}, 1.0);
    Tensor x = full({}, 0.5).set_requires_grad(true);
    Tensor y = x;
    for (int i = 0; i < n; ++i) y = y + one;
    if (is("chain")) autograd::backward(y);
  }
  return 0;
}
