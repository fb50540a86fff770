// Op cases for the normalisations: layer_norm and batch_norm, their backward and parameter-gradient
// ops, with and without weight and bias, on transposed and broadcast inputs.
#include "op_cases.h"
#include "test_util.h"

namespace vk::test {
namespace {

using V = std::vector<Tensor>;

RegisterOpCases norm_cases({
    {OpKind::LayerNorm, "layer_norm/affine_last",
     [] {
       return V{leaf({3, 4}), leaf({4}), leaf({4})};
     },
     [](const V& x) { return layer_norm(x[0], {4}, x[1], x[2], 1e-5); }},
    {OpKind::LayerNorm, "layer_norm/two_dims_plain",
     [] {
       return V{leaf({2, 3, 2})};
     },
     [](const V& x) {
       return layer_norm(x[0], {3, 2}, Tensor(), Tensor(), 1e-5);
     }},
    {OpKind::LayerNorm, "layer_norm/weight_only_transposed",
     [] {
       return V{leaf({4, 3}), leaf({4})};
     },
     [](const V& x) { return layer_norm(transpose(x[0], 0, 1), {4}, x[1], Tensor(), 0.1); }},
    {OpKind::LayerNorm, "layer_norm/bias_only_unbatched",
     [] {
       return V{leaf({5}), leaf({5})};
     },
     [](const V& x) { return layer_norm(x[0], {5}, Tensor(), x[1], 1e-5); }},
    {OpKind::LayerNorm, "layer_norm/weight_broadcast_from_1d",
     [] {
       return V{leaf({2, 1, 3}), leaf({3}), leaf({3})};
     },
     [](const V& x) {
       return layer_norm(expand(x[0], {2, 2, 3}), {3}, x[1], x[2], 1e-5);
     }},
    {OpKind::LayerNormBackward, "layer_norm_backward/weight",
     [] {
       return V{leaf({3, 4}), leaf({3, 4}), leaf({4})};
     },
     [](const V& x) { return layer_norm_backward(x[0], x[1], {4}, x[2], 1e-5); }},
    {OpKind::LayerNormBackward, "layer_norm_backward/two_dims_plain",
     [] {
       return V{leaf({2, 2, 3}), leaf({2, 2, 3})};
     },
     [](const V& x) {
       return layer_norm_backward(x[0], x[1], {2, 3}, Tensor(), 1e-5);
     }},
    {OpKind::LayerNormBackward, "layer_norm_backward/unbatched_transposed",
     [] {
       return V{leaf({3, 2}), leaf({2, 3}), leaf({3, 2})};
     },
     [](const V& x) {
       return layer_norm_backward(x[0], transpose(x[1], 0, 1), {3, 2}, x[2], 0.1);
     }},
    {OpKind::LayerNormBackward, "layer_norm_backward/of_layer_norm",
     [] {
       return V{leaf({2, 4}), leaf({2, 4}), leaf({4}), leaf({4})};
     },
     [](const V& x) {
       // The gradient of sum(layer_norm(x) * g) w.r.t. x, differentiated again through x.
       Tensor y = layer_norm(x[1], {4}, x[2], x[3], 1e-5);
       return layer_norm_backward(x[0] * y, x[1], {4}, x[2], 1e-5);
     }},
    {OpKind::LayerNormParamGrad, "layer_norm_param_grad/rows",
     [] {
       return V{leaf({3, 4}), leaf({3, 4})};
     },
     [](const V& x) { return layer_norm_param_grad(x[0], x[1], {4}, 1e-5); }},
    {OpKind::LayerNormParamGrad, "layer_norm_param_grad/two_dims_transposed",
     [] {
       return V{leaf({2, 2, 3}), leaf({3, 2, 2})};
     },
     [](const V& x) {
       return layer_norm_param_grad(x[0], transpose(x[1], 0, 2), {2, 3}, 0.1);
     }},
    {OpKind::LayerNormParamGrad, "layer_norm_param_grad/unbatched",
     [] {
       return V{leaf({5}), leaf({5})};
     },
     [](const V& x) { return layer_norm_param_grad(x[0], x[1], {5}, 1e-5); }},
    {OpKind::BatchNorm, "batch_norm/affine_4d",
     [] {
       return V{leaf({3, 2, 2, 2}), leaf({2}), leaf({2})};
     },
     [](const V& x) { return batch_norm(x[0], x[1], x[2], 1e-5); }},
    {OpKind::BatchNorm, "batch_norm/plain_2d",
     [] {
       return V{leaf({4, 3})};
     },
     [](const V& x) { return batch_norm(x[0], Tensor(), Tensor(), 1e-5); }},
    {OpKind::BatchNorm, "batch_norm/weight_only_transposed_3d",
     [] {
       return V{leaf({3, 2, 4}), leaf({2})};
     },
     [](const V& x) { return batch_norm(transpose(x[0], 0, 2), x[1], Tensor(), 0.1); }},
    {OpKind::BatchNorm, "batch_norm/bias_only_expanded",
     [] {
       return V{leaf({1, 3, 2}), leaf({3})};
     },
     [](const V& x) {
       return batch_norm(expand(x[0], {2, 3, 2}), Tensor(), x[1], 1e-5);
     }},
    {OpKind::BatchNormBackward, "batch_norm_backward/weight_4d",
     [] {
       return V{leaf({2, 3, 2, 1}), leaf({2, 3, 2, 1}), leaf({3})};
     },
     [](const V& x) { return batch_norm_backward(x[0], x[1], x[2], 1e-5); }},
    {OpKind::BatchNormBackward, "batch_norm_backward/plain_transposed",
     [] {
       return V{leaf({4, 2}), leaf({2, 4})};
     },
     [](const V& x) { return batch_norm_backward(x[0], transpose(x[1], 0, 1), Tensor(), 0.1); }},
    {OpKind::BatchNormBackward, "batch_norm_backward/of_batch_norm",
     [] {
       return V{leaf({3, 2, 2}), leaf({3, 2, 2}), leaf({2}), leaf({2})};
     },
     [](const V& x) {
       // The gradient of sum(batch_norm(x) * g) w.r.t. x, differentiated again through x.
       Tensor y = batch_norm(x[1], x[2], x[3], 1e-5);
       return batch_norm_backward(x[0] * y, x[1], x[2], 1e-5);
     }},
    {OpKind::BatchNormParamGrad, "batch_norm_param_grad/4d",
     [] {
       return V{leaf({2, 3, 2, 2}), leaf({2, 3, 2, 2})};
     },
     [](const V& x) { return batch_norm_param_grad(x[0], x[1], 1e-5); }},
    {OpKind::BatchNormParamGrad, "batch_norm_param_grad/2d_transposed",
     [] {
       return V{leaf({5, 2}), leaf({2, 5})};
     },
     [](const V& x) { return batch_norm_param_grad(x[0], transpose(x[1], 0, 1), 0.1); }},
});

}  // namespace
}  // namespace vk::test
