"""Writes docs/compat.md: torch's public names against vkml's, namespace by namespace, with the
reason each missing name is missing, and the known differences in behaviour.

    PYTHONPATH=build/python .venv/bin/python tools/gen_compat.py docs/compat.md   (make compat)

tests/python/test_compat_doc.py fails when docs/compat.md is not what this writes. torch is read,
never imported by vkml: it is the reference of what a ported program may call."""
import importlib
import inspect
import re
import sys
import types

import torch

# (torch namespace, vkml namespace, how torch's public names are listed)
NAMESPACES = [
    ("torch", "vkml", "torch.__all__"),
    ("torch.Tensor", "vkml.Tensor", "attributes without a leading underscore"),
    ("torch.nn", "vkml.nn", "classes"),
    ("torch.nn.functional", "vkml.nn.functional", "functions"),
    ("torch.nn.init", "vkml.nn.init", "functions"),
    ("torch.optim", "vkml.optim", "torch.optim.__all__"),
    ("torch.optim.lr_scheduler", "vkml.optim.lr_scheduler", "classes"),
    ("torch.optim.swa_utils", "vkml.optim.swa_utils", "torch.optim.swa_utils.__all__"),
    ("torch.utils.data", "vkml.utils.data", "torch.utils.data.__all__"),
    ("torch.linalg", "vkml.linalg", "public callables"),
    ("torch.special", "vkml.special", "torch.special.__all__"),
    ("torch.distributions", "vkml.distributions", "torch.distributions.__all__"),
    ("torch.autograd.functional", "vkml.autograd.functional", "torch.autograd.functional.__all__"),
    ("torch.func", "vkml.func", "torch.func.__all__"),
    ("torch.profiler", "vkml.profiler", "torch.profiler.__all__"),
]

# Why a name is missing, by the first rule that matches (a regular expression over the name).
# Names no rule covers are "not yet": work of the porting issue (#15).
REASONS = [
    (r"Storage$|^(Bool|Byte|Char|Double|Float|Half|BFloat16|Int|Long|Short)Tensor$|^is_storage$"
     r"|storage|untyped",
     "legacy typed tensors and storages: vkml has one Tensor type with a dtype"),
    (r"^quantize|quantized|^q_|qint|quint|qscheme|per_channel|per_tensor|int_repr|^fbgemm|dequant"
     r"|^choose_qparams|fake_quant",
     "quantization: not planned"),
    (r"sparse|_coo|_csr|_csc|_bsr|_bsc|to_dense|coalesce|^indices$|^values$|crow_|col_indices"
     r"|row_indices|ccol_|smm|sspaddmm|hspmm|^dense_dim$|^is_coalesced$|^nnz$|^indices_copy$"
     r"|^values_copy$|^spmm$|^saddmm$",
     "sparse layouts: not planned"),
    (r"complex|^conj|^resolve_conj|^resolve_neg|^is_neg$|real$|^imag|^angle|^polar|^view_as_real"
     r"|^fft|^stft|^istft|cfloat|cdouble|chalf",
     "complex dtypes: not planned yet"),
    # hash_tensor's result is uint64; scaled_mm and scaled_grouped_mm multiply float8 operands
    (r"^bits?($|\d)|^float8|^float4|^uint(1|2|3|4|5|6|7|16|32|64)$|^int(1|2|3|4|5|6|7)$"
     r"|^hash_tensor$|^scaled_mm$|^scaled_grouped_mm$",
     "sub-byte, unsigned wide and 8-bit float dtypes: not planned"),
    (r"autocast_(ipu|xla|gpu)_|_autocast_(ipu|xla)_",
     "autocast state of devices vkml does not have (IPU, XLA, CUDA): not planned"),
    (r"float16|bfloat16|^half$|autocast|^amp$|GradScaler|^uint8$|^int8$|^int16$|^short$|^byte$"
     r"|^char$",
     "half precision and small integer dtypes: the half-precision issue (#19)"),
    (r"^compile|^export|^jit|^fx$|^Sym|^sym_|^cond$|^func$|^library$|^compiler|^_dynamo"
     r"|guard|^while_loop|^unravel|^Ignore|^fake|^is_inference_mode"
     # TorchScript's IR, schema and type-comment parsers, its futures (fork/wait),
     # functionalization's slice_inverse and functorch's first-class dims (Tensor.index)
     r"|^parse_ir$|^parse_schema$|^parse_type_comment$|^merge_type_from_type_comment$"
     r"|^unify_type_list$|^import_ir_module|^fork$|^wait$|^slice_inverse$|^index$"
     # the profiler's execution trace (the operator graph recorded for replay tools)
     r"|^ExecutionTraceObserver$",
     "compilation, tracing and export: not planned"),
    (r"^share_memory|^is_shared$",
     "memory shared between processes (torch.multiprocessing): not planned; vk.distributed's "
     "ranks exchange tensors over MPI"),
    (r"^cuda|^mps|^xpu|^mtia|^hip|^ipu|^is_cuda$|^is_mps$|^is_xpu$|^is_meta$|^is_mkldnn$"
     r"|^to_mkldnn|mkldnn|cudnn|miopen|^pin_memory$|^is_pinned$|^is_vulkan$|^is_ipu$|^is_maia$"
     r"|^is_mtia$|^record_stream$",
     "another device kind's API: vkml's devices are the CPU and Vulkan"),
    (r"^nested|^is_nested$|^to_padded_tensor$",
     "nested (jagged) tensors: not planned"),
    (r"bessel|^airy_ai$|^zeta$",
     "Bessel, Airy and Hurwitz zeta functions: each needs a kernel of its own (series and "
     "rational approximations by range); no composite of existing ops keeps their precision"),
    (r"_polynomial_",
     "orthogonal polynomials: torch evaluates them by a recurrence as long as the degree n, a "
     "tensor; a composite could only loop in Python over one scalar n, so they need a kernel"),
    (r"^(Conv1d|Conv3d|ConvTranspose\w*|Adaptive\w*|AvgPool1d|AvgPool3d|MaxPool1d|MaxPool3d|GroupNorm"
     r"|InstanceNorm\w*|RMSNorm|Upsample\w*|interpolate|PixelShuffle|PixelUnshuffle|Dropout1d"
     r"|Dropout2d|Dropout3d|AlphaDropout|FeatureAlphaDropout|EmbeddingBag|Identity|Unflatten|Fold"
     r"|Unfold|\w*Pad\dd|Bilinear|RNN\w*|LSTM\w*|GRU\w*|MultiheadAttention|Transformer\w*|SiLU|Mish"
     r"|Hardswish|Hardsigmoid|LeakyReLU|ELU|SELU|CELU|Softplus|Softsign|PReLU|Tanhshrink|Threshold"
     r"|GLU|LogSigmoid|Softmin|Softmax2d|\w*Loss|Adadelta|Adagrad|RMSprop|Adamax|NAdam|RAdam|LBFGS"
     r"|\w*LR|ReduceLROnPlateau|CosineAnnealingWarmRestarts|ChainedScheduler|xavier_\w*"
     r"|kaiming_\w*|orthogonal_|trunc_normal_|sparse_|eye_|dirac_|calculate_gain)$",
     "nn and optim breadth: the nn/optim issue (#16)"),
]

NOT_YET = "not yet (the porting issue, #15)"

# Rules of one namespace, tried before the general ones.
NAMESPACE_REASONS = {
    "torch.nn.init": [(r"^(?!calculate_gain$).*[^_]$",
                       "deprecated aliases of the in-place initializers (torch warns)")],
    "torch.utils.data": [(r"DataPipe$|^DataChunk$",
                          "DataPipes: deprecated in torch, not planned")],
    "torch.linalg": [(r"^eig$|^eigvals$", "complex dtypes: not planned yet"),
                     (r"^ldl_", "LDL^T with Bunch-Kaufman pivoting (LAPACK sytrf's packed 1 x 1 and "
                      "2 x 2 blocks): not planned; `solve`, `cholesky` and `eigh` cover symmetric "
                      "systems")],
    "torch.func": [(r"^(functionalize|rearrange)$",
                    "functionalization (a graph without mutations, for tracers) and functorch's "
                    "first-class dimensions: not planned; vkml runs eagerly")],
    # torch-namespace nn aliases (#15)
    "torch": [(r"^embedding_bag$",
               "returns ATen's internal buffers (offset2bag, bag_size, max_indices) beside the result: "
               "`nn.functional.embedding_bag` is the API"),
              (r"^native_(batch_norm|dropout|group_norm|layer_norm|norm)$|^batch_norm_(backward|elemt|gather|stats"
               r"|update)",
               "ATen's internal pieces of the normalization and dropout kernels (saved statistics, backward "
               "halves, SyncBatchNorm's statistics): not planned, the nn functions are the API")],
}

# What a ported program may see behave differently, even where the name exists.
DIFFERENCES = [
    "Random numbers: the same seed gives the same numbers in vkml on every device and at any "
    "thread count (Philox4x32-10), but not torch's numbers (float64 `randn` alone may differ in "
    "its last bit between a CPU with FMA and one without: its Box-Muller polynomials round "
    "there); `get_rng_state()` is an int64 tensor [seed, offset], not torch's byte tensor. "
    "`randn` draws Box-Muller pairs, elements 2i and 2i + 1 from one counter (since 2026-12-07; "
    "before, each element took its own counter's cosine: the same seed gives other normal "
    "numbers than earlier versions).",
    "Devices: `cpu` and `vulkan`; `vk.cuda.is_available()` is False and `vk.accelerator` is the "
    "Vulkan device. Ops on the Vulkan device are recorded and run in batches: errors are raised "
    "at the call, results when read; an index out of range (index_select, gather, scatter_add, "
    "embedding, cross_entropy) is an IndexError raised at the next read or synchronize().",
    "Dtypes: bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64 "
    "(docs/precision.md), no complex ones: the names generic code asks of every tensor answer "
    "as torch's do for a real one (`x.real` and `x.conj()` are `x`, `x.imag` raises, "
    "`x.is_complex()` is False, `angle` is 0 or pi); 16-bit ops compute in float32 and round "
    "once, narrow integers wrap as torch's; `autocast` applies torch's CUDA policy on every device (softmax and layer_norm in "
    "float32 where torch's CPU policy keeps bfloat16); the Vulkan device stores them as "
    "themselves (16- and 8-bit storage) and computes them as the CPU does.",
    "Layouts and memory formats: `vk.strided` only (another layout is NotImplementedError); "
    "`memory_format=` is accepted wherever torch takes it and results stay row-major "
    "(`channels_last` changes no strides; values, shapes and gradients are torch's; "
    "`is_contiguous(memory_format=...)` reads the actual strides); `pin_memory=` does nothing; "
    "`use_deterministic_algorithms` only records the mode (vkml is deterministic in every "
    "mode); `set_flush_denormal` returns False (not switched).",
    "Copies where torch gives views or strided layouts: `Tensor.unfold` (one index_select: "
    "torch's values and gradients, but writing into its result leaves the input unchanged), "
    "`frombuffer` (a copy of the buffer), `empty_strided`/`new_empty_strided`/`empty_permuted` "
    "(contiguous tensors: the strides are a layout hint), `as_strided`/`Tensor.as_strided`/"
    "`as_strided_copy` (one index_select from a contiguous input: torch's values and gradients, "
    "but writing into its result leaves the input unchanged; a non-contiguous input and "
    "`as_strided_` raise).",
    "Sorting is always stable (torch's `stable=False` may order ties differently); `topk` and "
    "`unique` return sorted results even with `sorted=False`.",
    "In-place ops while grad mode is on are recorded as torch's (`out[idx] = f(x)`, "
    "`out.index_add_(0, i, f(x))`, `scores.masked_fill_(m, v)`, `h.relu_()`, `h += b` and "
    "`nn.ReLU(inplace=True)(h)` on a result): the "
    "object written takes the write's history, and the same version-counter rules hold (also "
    "for an op's other outputs, such as max's indices, and a custom Function's saved tensors). "
    "A write through a view reaches its base as torch's (`y[:, 0].fill_(0)`, "
    "`buf[:, t].copy_(h)`, `y.view(-1).add_(b)`): the base's object takes the write's history, "
    "and a view taken before a write is taken again from it when used (torch's view "
    "regeneration). Differences: where the base is not contiguous (`vk.from_numpy(a.T)`, or "
    "after its own `t_()`), or no tensor holds the write's result any more, a view taken "
    "before the write raises a RuntimeError when used while grad mode is on: take it again "
    "after the write. A write into an output of `unbind` / `split` / `chunk` is recorded (torch "
    "refuses it). Of repeated "
    "indices in `x[idx] = v`, the values written over get a zero gradient (torch gives each the "
    "element's). A write through `.data` is counted as any write (torch's `.data` has a version "
    "counter of its own): `y = w.exp(); y.data.mul_(2)` then backward raises where torch uses "
    "the new values. A leaf's `.grad` accumulates in place as torch's (a reference to it sees "
    "later sums), but each read of `p.grad` is a new Python object over the same memory "
    "(`p.grad is p.grad` is False).",
    "Saving and loading: `vk.save` writes safetensors (vkml's metadata describes the containers "
    "around the tensors), not torch's zip archive; `vk.load` reads those, any safetensors file, and "
    "the zip archives torch.save writes, as torch.load(weights_only=True) reads them (tensors, "
    "parameters, containers, numbers, strings, device, dtype, Size; any other class is an "
    "UnpicklingError), where tensors that shared a storage come back as separate tensors; a bare "
    "pre-1.6 pickle is a ValueError.",
    "Error types: mismatched shapes raise `vk.ShapeError` (a ValueError), too-large sizes "
    "`vk.SizeError` (a RuntimeError), where torch raises RuntimeError for both.",
    "Integer division by zero raises (torch's CPU gives undefined values or raises).",
    "Eigen and singular value decompositions (#15 linalg): `linalg.eigh` and `linalg.svd` use "
    "Jacobi rotations (values agree with LAPACK's to rounding, float32 to ~1e-5 of the largest "
    "for 64 x 64); each eigenvector's (and each column of the taller SVD factor's) largest "
    "component is positive where LAPACK's signs are its algorithm's; where a singular value is "
    "0, U's and V's columns are 0 (torch: an orthonormal completion); on the Vulkan device eigh "
    "takes n <= 64 and svd m <= 64, n <= 32 (after transposing wide matrices). `lstsq` is "
    "`pinv(A) @ B` with torch's default driver's outputs (empty residuals and singular values). "
    "`linalg.qr`, `geqrf`, `householder_product`/`orgqr` and `ormqr` are LAPACK's Householder "
    "algorithm with its signs (Q and R agree with torch's to rounding); `qr`'s complete Q of a "
    "tall matrix comes from `geqrf`, which has no gradient (torch raises too), while its R does; "
    "on the Vulkan device `qr`/`geqrf` take n <= 128 columns and m min(m, n) <= 16384. "
    "`linalg.eig`/`eigvals` need complex dtypes, `ldl_*` is not planned.",
    # attention and Transformer layers (issue #16)
    "`nn.MultiheadAttention` and the Transformer layers always compose core ops: torch's fused "
    "inference fast path gives the same values up to rounding, and there are no nested tensors "
    "(where torch's `TransformerEncoder` would nest at inference, the padded positions' outputs are "
    "zero here too); `enable_nested_tensor` is accepted without torch's warning.",
    # conv/pool/embedding breadth (issue #16)
    "Embeddings: `sparse=True`, `EmbeddingBag`'s `scale_grad_by_freq` (torch's CPU kernel divides some rows by "
    "another row's count) raise NotImplementedError; `Embedding`'s "
    "`scale_grad_by_freq` keeps its scale in second derivatives, where torch's double backward drops it.",
    # shape/index breadth (#15)
    "`scatter`, `index_copy`, `index_put` and `put` with repeated indices: the last writer in "
    "row-major order wins (torch: unspecified) and only it gets a gradient (torch gives every "
    "writer `gather(grad)`). `scatter_reduce`/`index_reduce` amax/amin with "
    "`include_self=False`: a self value equal to the result takes no share of the gradient "
    "(torch counts it among the ties, then drops its share: the values' gradients sum to less "
    "than 1). `unique(dim=...)` and `masked_select` read values on the host (their output "
    "shapes depend on them); index bounds on a device are checked there and raised at the next "
    "read.",
    # math ops (#15)
    "`igamma`/`igammac` (#15): the derivative in x at x = 0 is x^(a-1) e^-x / Gamma(a) with "
    "0 * log 0 taken as 0 (1 for a = 1, where torch's gives NaN); float32 results are the float64 "
    "result rounded (on a Vulkan device without float64, float32 alone); within ~5e-14 of mpmath "
    "up to a = 1e5 (torch's are ~1e-9 off from a ~ 40 on), NaN where a > ~7e6 and x is near a "
    "(the series' 20000-term bound).",
    "`gcd` and `lcm` are those of the magnitudes as unsigned numbers: with the minimum integer "
    "torch's signed loop gives negative results (`gcd(-2**63, 6)` is -2 there, 2 here) and "
    "`lcm(-2**63, 2**63 - 1)` kills torch's process (SIGFPE); vkml's wrap where the true value "
    "does not fit.",
    "Element-wise math (#15): float32 results of the special functions are the float64 result "
    "rounded (torch's float32 digamma and trigamma are a few ulp to 1e-6 off, vkml's not; on a "
    "Vulkan device without float64 they compute in float32 alone: 2 to 6 ulp, the gamma "
    "family within 1e-5 relative away from its zeros); "
    "`polygamma(1, x)` (trigamma) is within ulps in float64 where torch's is ~1e-9 off; "
    "`polygamma(1, -k)` is +inf at the poles (torch: 1.3e15); `polygamma(n, inf)` is 0 for "
    "every n (torch: NaN for n >= 2); `polygamma(n >= 2, x)` is NaN for x < -50000, and on "
    "the Vulkan device n is at most 1000; `cosh`/`sinh` in float64 are finite up to 710.47 "
    "(torch's CPU: inf from 710); float32 `fmod` is C's exact fmod (torch's vectorised float32 "
    "`fmod(1e30, 1e-30)` is NaN); `copysign` reads a NaN divisor as positive and gives its "
    "second operand no gradient (torch: zeros); `heaviside` does not raise in backward (torch "
    "has no derivative for it).",
    # vk.special (#15)
    "`vk.special` composes existing ops and is more precise than torch 2.13 in places: `ndtr` "
    "is 0.5 * erfc(-x / sqrt 2), relatively precise in the left tail (torch's is absolute only: "
    "0.0 below x = -8.3 in float64, 4% off at -5 in float32); float32 `erfcx` is within 2 ulp "
    "(torch's: ~30 ulp for negative x); the gradient of `log_ndtr` at x = -1e4 is exact (torch's "
    "loses 8 digits). `ndtri`, `log_ndtr` and `erfcx` agree with torch to ~1 ulp elsewhere, "
    "`ndtri` down to p = 5e-324. No function of `vk.special` takes `out=`.",
    # solvers (#15 linalg)
    "Solvers (#15 linalg): `linalg.lu_factor`, `solve`, `inv`, `det`, `slogdet`, `logdet` and "
    "`matrix_power` are built on an unblocked LU with partial pivoting and triangular solves "
    "(the same pivots as LAPACK's getrf; values agree to rounding); square matrices only, "
    "`pivot=False` raises NotImplementedError. A singular matrix is found by reading U's "
    "diagonal on the host (`inv`, `solve`, `lu_factor`: on the Vulkan device that waits for the "
    "factorization); `vk.linalg.LinAlgError` is a RuntimeError as torch's. The gradient of "
    "`det` at a singular matrix is not finite (torch's goes through an SVD). On the Vulkan "
    "device one workgroup factors each matrix: n <= 256 (n <= 1024 for `solve_triangular`), "
    "larger is a `vk.SizeError`. `linalg.lu`, `lu_unpack` and `linalg.lu_solve` (and the "
    "deprecated `torch.lu`/`lu_solve`) unpack the pivots into the permutation on the device, a "
    "few index ops per pivot. `linalg.cholesky`/`cholesky_ex`, `cholesky_solve` and "
    "`cholesky_inverse` rest on an unblocked right-looking Cholesky (A's lower triangle read, "
    "its upper one with `upper=True`, as LAPACK's potrf); a matrix that is not positive-definite "
    "is found by reading L's diagonal on the host (`cholesky` only). `cholesky_solve` and "
    "`cholesky_inverse` give the factor's unread triangle no gradient (torch's rule gives it "
    "one; finite differences there are zero); through `cholesky` the gradients are torch's. "
    "`linalg.matrix_exp` scales the whole batch by its largest 1-norm (a host read) for its "
    "[13/13] Pade approximant.",
    "Optimizers: `optim.Muon` runs its Newton-Schulz iterations in the gradient's dtype (torch's in "
    "bfloat16), so its steps agree with torch's to bfloat16's precision, "
    "and exactly with a full-precision iteration. `optim.SparseAdam` is a refusal: vkml has no sparse "
    "gradients, and its step() raises torch's RuntimeError for a dense gradient (it constructs, "
    "checks its arguments and saves its state_dict as torch's).",
    "`compile` has torch.compile's signature and returns its argument unchanged (vkml has no graph "
    "compiler): the same results at eager speed, said once by a UserWarning; a compiled module's "
    "state_dict keys keep their names (torch's gain an `_orig_mod.` prefix); a non-callable raises "
    "TypeError (torch's an AssertionError).",
    "Distributions: `LKJCholesky` draws row i's squared length from Beta(i / 2, ...) as the onion "
    "method has it (torch 2.13 draws Beta(i - 1/2, ...): its correlations past the second row are too "
    "spread, variances 0.19-0.21 at dim 5 and concentration 1 where the distribution's are 1/6); "
    "`VonMises`'s normaliser is log(i0e(k)) + k, float64-exact (torch's polynomial fit is ~3e-8 off); "
    "`ContinuousBernoulli` refuses probs outside [0, 1] while validation is on (torch clamps them unless "
    "validate_args is passed); `Wishart` given scale_tril gives the factor's unread upper triangle no "
    "gradient (as cholesky_solve); `GeneralizedPareto` takes float64 parameters (torch's log_prob raises "
    "for them); `Wishart.rsample` draws again only singular draws (torch's first check is inverted: it "
    "warns and draws every valid sample again); `Kumaraswamy.mode` is ((a - 1) / (a b - 1))^(1/a) "
    "(torch's is NaN for every parameter).",
]


# torch.__all__ also lists the TorchScript compiler's own types (AliasDb, ArgumentSpec, ...) and
# submodules: not names a program calls.
INTERNAL_TYPES = ("pybind11_type", "module", "AggregationType")
INTERNAL_NAMES = {"DisableTorchFunction", "DisableTorchFunctionSubclass", "JITException"}


def is_public(obj, name):
    return (type(obj).__name__ not in INTERNAL_TYPES and name not in INTERNAL_NAMES
            and not isinstance(obj, types.ModuleType))


def torch_names(ns, how):
    obj = importlib.import_module(ns) if ns != "torch.Tensor" else torch.Tensor
    if how.endswith("__all__"):
        return sorted(n for n in set(obj.__all__) if is_public(getattr(obj, n, None), n))
    names = [n for n in dir(obj) if not n.startswith("_")]
    if how == "classes":  # defined in that namespace, not imported into it (typing, functools)
        return sorted(n for n in names if inspect.isclass(getattr(obj, n))
                      and getattr(obj, n).__module__.startswith(ns))
    if how == "public callables":  # torch.linalg has no __all__; its error class counts too
        return sorted(n for n in names if callable(getattr(obj, n)))
    if how == "functions":
        return sorted(n for n in names
                      if callable(getattr(obj, n)) and not inspect.isclass(getattr(obj, n))
                      and getattr(getattr(obj, n), "__module__", "").startswith("torch"))
    return sorted(names)


def vkml_object(ns):
    module, _, attr = ns.rpartition(".") if ns.endswith(".Tensor") else (ns, "", "")
    try:
        obj = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(obj, attr) if attr else obj


def reason(ns, name):
    for pattern, why in NAMESPACE_REASONS.get(ns, []) + REASONS:
        if re.search(pattern, name):
            return why
    return NOT_YET


def render():
    import vkml  # noqa: F401  (the namespaces below are its submodules)
    rows, sections = [], []
    for ns, vk_ns, how in NAMESPACES:
        names = torch_names(ns, how)
        obj = vkml_object(vk_ns)
        present = [n for n in names if obj is not None and hasattr(obj, n)]
        missing = [n for n in names if n not in present]
        rows.append(f"| `{ns}` | {how} | {len(present)} / {len(names)} |")
        by_reason = {}
        for n in missing:
            by_reason.setdefault(reason(ns, n), []).append(n)
        lines = [f"## `{ns}` -> `{vk_ns}`", "",
                 f"{len(present)} of {len(names)} present.", "",
                 "Present: " + (", ".join(f"`{n}`" for n in present) or "none") + ".", ""]
        for why in sorted(by_reason, key=lambda w: (w == NOT_YET, w)):
            lines.append(f"Missing, {why}: " + ", ".join(f"`{n}`" for n in by_reason[why]) + ".")
            lines.append("")
        sections.append("\n".join(lines))
    head = [
        "# vkml and torch: which names exist",
        "",
        f"Generated by `tools/gen_compat.py` against torch {torch.__version__.split('+')[0]} "
        "(`make compat`); do not edit by hand: a test fails when it is stale.",
        "",
        "A name counts as present when vkml's namespace has it; what it does is checked by the "
        "tests that compare vkml with torch op by op and program by program.",
        "",
        "| torch namespace | names counted | present in vkml |",
        "|---|---|---|",
        *rows,
        "",
        "## Known differences in behaviour",
        "",
        *[f"- {d}" for d in DIFFERENCES],
        "",
    ]
    return "\n".join(head) + "\n" + "\n".join(sections)


def main(argv):
    text = render()
    if len(argv) > 1:
        with open(argv[1], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
