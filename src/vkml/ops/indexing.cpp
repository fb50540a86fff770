// Indexing as a composition of table ops, so every gradient comes from those ops' rules:
// ints -> select, slices -> slice, None -> unsqueeze, integer tensors -> index_select on a
// flattened block of the indexed dims, bool masks -> their nonzero positions.
#include "vkml/ops/indexing.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "vkml/core/grad_mode.h"
#include "vkml/core/kernel.h"
#include "vkml/ops/composite.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/device_ops.h"
#include "vkml/ops/elementwise.h"
#include "vkml/ops/expect.h"
#include "vkml/ops/index.h"
#include "vkml/ops/reduction.h"
#include "vkml/ops/shape.h"
#include "vkml/ops/sort.h"

namespace vk {

namespace {

using Kind = IndexItem::Kind;

int64_t dims_consumed(const IndexItem& it) {
  switch (it.kind) {
    case Kind::Int:
    case Kind::Slice:
      return 1;
    case Kind::Tensor:  // a 0-d bool adds a dim (see apply_basic) and consumes none
      return it.tensor.dtype() == DType::Bool ? it.tensor.ndim() : 1;
    default:
      return 0;
  }
}

// Python slice semantics -> (start, stop) clamped into [0, n], step > 0.
void normalize_slice(const IndexItem& it, int64_t n, int64_t& start, int64_t& stop, int64_t& step) {
  step = it.step.value_or(1);
  VK_CHECK(step > 0, ShapeError, "index: slice step must be positive, got ", step);
  start = it.start.value_or(0);
  stop = it.stop.value_or(n);
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  start = std::clamp<int64_t>(start, 0, n);
  stop = std::clamp<int64_t>(stop, start, n);
}

struct Advanced {
  int64_t dim;            // dim of the partially indexed result it applies to
  Tensor indices;         // int64, any shape (broadcast with the others)
  bool in_range = false;  // known to be in [0, size) (a bool mask's positions): nothing to check
};

// Applies the basic items (views) and collects the advanced ones.
Tensor apply_basic(const Tensor& x, const std::vector<IndexItem>& items,
                   std::vector<Advanced>& adv) {
  int64_t consumed = 0;
  bool ellipsis = false;
  for (const auto& it : items) {
    consumed += dims_consumed(it);
    if (it.kind == Kind::Ellipsis) {
      VK_CHECK(!ellipsis, IndexError, "index: an index can only have a single ellipsis");
      ellipsis = true;
    }
  }
  VK_CHECK(consumed <= x.ndim(), IndexError, "index: too many indices for a tensor of shape ",
           shape_str(x.shape()), ": ", consumed, " dims indexed");
  Tensor r = x;
  int64_t d = 0;
  for (const auto& it : items) {
    switch (it.kind) {
      case Kind::Int: {
        int64_t n = r.shape()[d];
        VK_CHECK(it.index >= -n && it.index < n, IndexError, "index ", it.index,
                 " is out of bounds for dim ", d, " with size ", n);
        r = select(r, d, it.index);
        break;
      }
      case Kind::Slice: {
        int64_t start, stop, step;
        normalize_slice(it, r.shape()[d], start, stop, step);
        r = slice(r, d, start, stop, step);
        ++d;
        break;
      }
      case Kind::None:
        r = unsqueeze(r, d++);
        break;
      case Kind::Ellipsis:
        d += x.ndim() - consumed;
        break;
      case Kind::Tensor: {
        const Tensor& t = it.tensor;
        if (t.dtype() == DType::Bool && t.ndim() == 0) {
          // As torch (and numpy): a new dim of size 1, indexed by [0] when true and by nothing
          // when false, so x[True] has shape [1, ...] and x[False] shape [0, ...].
          r = unsqueeze(r, d);
          adv.push_back(
              {d, zeros({host_read(t).item() != 0 ? 1 : 0}, DType::Int64, r.device()), true});
          ++d;
        } else if (t.dtype() == DType::Bool) {
          int64_t nd = t.ndim();
          for (int64_t k = 0; k < t.ndim(); ++k)
            VK_CHECK(t.shape()[k] == r.shape()[d + k], IndexError, "index: the mask of shape ",
                     shape_str(t.shape()), " does not match the indexed shape ",
                     shape_str(r.shape()), " at dim ", d + k);
          Tensor pos = nonzero(t);  // (n, nd)
          for (int64_t k = 0; k < nd; ++k) adv.push_back({d + k, select(pos, 1, k), true});
          d += nd;
        } else {
          VK_CHECK(is_integral(t.dtype()), DTypeError,
                   "index: tensors used as indices must be "
                   "integer or bool, got ",
                   dtype_name(t.dtype()));
          adv.push_back({d, cast(t, DType::Int64)});
          ++d;
        }
        break;
      }
    }
  }
  return r;
}

// Linear positions, as int64 of the broadcast index shape: into the block of advanced dims (moved
// to the front, row-major) when `in_storage` is false; else element offsets relative to r's first
// element, through r's strides. Negative indices count from the end.
Tensor linear_positions(const Tensor& r, const std::vector<Advanced>& adv, Shape& index_shape,
                        bool in_storage) {
  NoGradGuard no_grad;
  index_shape = adv[0].indices.shape();
  for (const auto& a : adv) index_shape = broadcast_shapes(index_shape, a.indices.shape(), "index");
  Tensor lin;  // the sum of the terms (their shapes broadcast to index_shape)
  int64_t stride = 1;
  for (size_t k = adv.size(); k-- > 0;) {
    int64_t n = r.shape()[adv[k].dim];
    Tensor idx = to_device(adv[k].indices, r.device());  // CPU indices may index any device
    if (!adv[k].in_range) {
      // Checked where the index lives: at once on the CPU, at the device's next host read
      // elsewhere (issue #14: reading the bounds here made x[idx] wait for the device)
      expect_all(logical_and(ge(idx, scalar_like(-n, idx)), lt(idx, scalar_like(n, idx))), true,
                 "index",
                 detail::cat("an index is out of bounds for dim ", adv[k].dim, " with size ", n));
      idx = where(lt(idx, scalar_like(0, idx)), idx + n, idx);
    }
    const int64_t mult = in_storage ? r.strides()[adv[k].dim] : stride;
    const Tensor term = mult == 1 ? idx : idx * mult;
    lin = lin.defined() ? lin + term : term;
    stride *= n;
  }
  // (a mask's positions took 7 passes more here -- bound checks, the negative wrap, a zero start:
  // x[x > 0] of 1M floats spent 3.0 ms past nonzero, now 0.6)
  return lin;
}

// index's result has the index dims (ni of them) first; NumPy's rule moves them back to where the
// advanced indices were when those were adjacent and not at the front.
Tensor place_index_dims(const Tensor& out, const std::vector<Advanced>& adv, int64_t ni) {
  bool adjacent = true;
  for (size_t k = 1; k < adv.size(); ++k) adjacent = adjacent && adv[k].dim == adv[k - 1].dim + 1;
  int64_t first = adv[0].dim;
  if (!adjacent || first == 0) return out;
  std::vector<int64_t> back;
  for (int64_t d = ni; d < ni + first; ++d) back.push_back(d);
  for (int64_t d = 0; d < ni; ++d) back.push_back(d);
  for (int64_t d = ni + first; d < out.ndim(); ++d) back.push_back(d);
  return permute(out, back);
}

// The storage offsets (int64) of the elements x[items] selects, r being x after the basic items
// and `adv` the advanced ones: shaped like index(x, items), costing only that many elements.
Tensor storage_positions(const Tensor& r, const std::vector<Advanced>& adv) {
  NoGradGuard no_grad;
  Shape index_shape;
  Tensor pos = linear_positions(r, adv, index_shape, true) + r.offset();
  const int64_t ni = static_cast<int64_t>(index_shape.size());
  std::vector<int64_t> rest;  // r's dims that no advanced index takes, in order
  for (int64_t d = 0; d < r.ndim(); ++d)
    if (std::none_of(adv.begin(), adv.end(), [d](const Advanced& a) { return a.dim == d; }))
      rest.push_back(d);
  const int64_t nr = static_cast<int64_t>(rest.size());
  Shape s = index_shape;
  s.resize(static_cast<size_t>(ni + nr), 1);
  pos = reshape(pos, s);
  for (int64_t j = 0; j < nr; ++j) {  // each rest dim adds its coordinate times its stride
    Shape along(static_cast<size_t>(ni + nr), 1);
    along[ni + j] = r.shape()[rest[j]];
    Tensor coord = arange(0, r.shape()[rest[j]], 1, DType::Int64);
    pos = pos + reshape(coord * r.strides()[rest[j]], along);
  }
  return place_index_dims(pos, adv, ni);
}

// The items with their index tensors on `device` (an index may come from the CPU, as in torch).
std::vector<IndexItem> items_on(const std::vector<IndexItem>& items, Device device) {
  std::vector<IndexItem> moved = items;
  for (auto& it : moved)
    if (it.kind == Kind::Tensor) it.tensor = to_device(it.tensor, device);
  return moved;
}

}  // namespace

Tensor fit_setitem_value(const Tensor& value, const Tensor& x, const Shape& region) {
  Tensor v = to_device(value.dtype() == x.dtype() ? value : cast(value, x.dtype()), x.device());
  const int64_t nr = static_cast<int64_t>(region.size());
  while (v.ndim() > nr && v.shape()[0] == 1) v = squeeze(v, 0);
  bool fits = v.ndim() <= nr;
  for (int64_t d = 0; fits && d < v.ndim(); ++d) {
    const int64_t vd = v.shape()[v.ndim() - 1 - d], rd = region[nr - 1 - d];
    fits = vd == rd || vd == 1;
  }
  VK_CHECK(fits, ShapeError, "index_put_: cannot assign a value of shape ",
           shape_str(value.shape()), " to an indexed region of shape ", shape_str(region));
  return expand(v, region);
}

bool all_basic(const std::vector<IndexItem>& items) {
  return std::none_of(items.begin(), items.end(),
                      [](const IndexItem& it) { return it.kind == Kind::Tensor; });
}

// x[items] = value out of place. Basic items cut a region of x's row-major order: one copy of x
// with the region written (strided_scatter). Index tensors and masks, without reading memory on
// the host: the same indexing applied to the flat positions of x says where each value goes; a
// stable sort by position keeps only the last writer of a repeated position (the CPU's rule, which
// gets the gradient); scatter_add then places the values and `where` keeps x's other elements.
// O(x.numel()) where the CPU's write costs what is written.
Tensor index_put(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value) {
  if (all_basic(items)) {
    Tensor c = contiguous(x);
    Tensor region;
    {
      NoGradGuard no_grad;
      region = index(c, items);
    }
    Tensor v = fit_setitem_value(value, x, region.shape());
    return strided_scatter(c, v, region.shape(), region.strides(), region.offset() - c.offset());
  }
  const int64_t n = x.numel();
  Tensor positions = reshape(arange(0, n, 1, DType::Int64, x.device()), x.shape());
  Tensor pos = index(positions, items_on(items, x.device()));
  Tensor vals = reshape(contiguous(fit_setitem_value(value, x, pos.shape())), {-1});
  pos = reshape(contiguous(pos), {-1});
  const int64_t k = pos.numel();
  if (k == 0) return x;
  const DType acc = x.dtype() == DType::Bool ? DType::Int32 : x.dtype();
  Tensor flat = reshape(contiguous(x), {-1});
  Tensor order = argsort(pos, 0, false, /*stable=*/true);
  Tensor sorted_pos = gather(pos, 0, order);
  Tensor next_pos = cat({narrow(sorted_pos, 0, 1, k - 1), full({1}, -1, DType::Int64, x.device())});
  Tensor last = ne(sorted_pos, next_pos);  // the last writer of each position
  Tensor src = where(last, cast(gather(vals, 0, order), acc), zeros({1}, acc, x.device()));
  Tensor placed = scatter_add(zeros({n}, acc, x.device()), 0, sorted_pos, src);
  Tensor hit =
      scatter_add(zeros({n}, DType::Int32, x.device()), 0, sorted_pos, cast(last, DType::Int32));
  Tensor result =
      where(ne(hit, zeros({1}, DType::Int32, x.device())), cast(placed, x.dtype()), flat);
  return reshape(result, x.shape());
}

Tensor index(const Tensor& x, const std::vector<IndexItem>& items) {
  std::vector<Advanced> adv;
  Tensor r = apply_basic(x, items, adv);
  if (adv.empty()) return r;
  // Move the advanced dims to the front (in order), flatten them, gather, then unflatten.
  std::vector<int64_t> perm;
  for (const auto& a : adv) perm.push_back(a.dim);
  for (int64_t d = 0; d < r.ndim(); ++d)
    if (std::find(perm.begin(), perm.end(), d) == perm.end()) perm.push_back(d);
  Tensor moved = permute(r, perm);
  int64_t block = 1;
  for (const auto& a : adv) block *= r.shape()[a.dim];
  Shape rest(moved.shape().begin() + static_cast<int64_t>(adv.size()), moved.shape().end());
  Shape flat = {block};
  flat.insert(flat.end(), rest.begin(), rest.end());
  Shape index_shape;
  Tensor lin = linear_positions(r, adv, index_shape, false);
  Tensor picked = index_select(reshape(moved, flat), 0, reshape(lin, {-1}));
  Shape out_shape = index_shape;
  out_shape.insert(out_shape.end(), rest.begin(), rest.end());
  Tensor out = reshape(picked, out_shape);
  // NumPy: adjacent advanced indices keep their place; separated ones go to the front.
  return place_index_dims(out, adv, static_cast<int64_t>(index_shape.size()));
}

void index_write(const Tensor& x, const std::vector<IndexItem>& items, const Tensor& value) {
  NoGradGuard no_grad;
  // Writes in place, costing what is written: the basic items give a view of x; advanced ones
  // add the storage offsets of only the selected elements.
  std::vector<Advanced> adv;
  Tensor r = apply_basic(x, items, adv);
  Tensor v = value.dtype() == x.dtype() ? value : cast(value, x.dtype());
  if (v.storage() == x.storage()) v = clone(v);  // x[1:] = x[:-1]: read everything first
  // A number arrives as a CPU scalar; copying it into device memory reads it there (a Vulkan
  // tensor's t[1:3] = 4.0 read the CPU scalar as device memory and crashed).
  v = to_device(v, x.device());
  if (adv.empty()) {
    check_no_internal_overlap(r, "index_put_");
    in_place::copy(r, fit_setitem_value(v, x, r.shape()));
    x.bump_version();
    return;
  }
  if (!x.device().is_cpu()) {
    in_place::copy(x, index_put(x, items, v));
    x.bump_version();
    return;
  }
  // The CPU writes through host pointers, costing what is written.
  Tensor where_to = contiguous(storage_positions(r, adv));
  v = contiguous(fit_setitem_value(v, x, where_to.shape()));
  const int64_t* pos = where_to.data<int64_t>();
  VK_DISPATCH_STORAGE(x.dtype(), "index_put_", {
    T* base = static_cast<T*>(x.storage()->data);
    const T* src = v.data<T>();
    for (int64_t i = 0; i < where_to.numel(); ++i) base[pos[i]] = src[i];  // repeats: last wins
  });
  x.bump_version();
}

void check_no_internal_overlap(const Tensor& x, const char* op) {
  if (x.numel() <= 1) return;
  for (int64_t d = 0; d < x.ndim(); ++d)
    VK_CHECK(x.shape()[d] <= 1 || x.strides()[d] != 0, RuntimeError, op,
             ": unsupported operation: more than one element of the written-to tensor (",
             x.describe(), ", dim ", d,
             " of stride 0) refers to a single memory location; clone() it first");
}

// The coordinates of the true elements in row-major order, written as int64 straight into the
// result: a count first (the result's size), then each element's coordinates stored and the row
// kept only where it is true (no branch per element; the walk ends at the last true element, so
// no row is stored past the count). Coordinates pushed into a vector of doubles, with a division
// per dim, took 6 ns an element (nonzero of 1M bools, 40% true: 5.9 -> 0.45 ms; torch 4.9).
Tensor nonzero(const Tensor& mask) {
  VK_CHECK(mask.dtype() == DType::Bool, DTypeError, "nonzero: expected a bool tensor, got ",
           dtype_name(mask.dtype()));
  Tensor m = host_read(mask);  // the output's shape depends on the values
  const auto* p = static_cast<const uint8_t*>(m.raw_data());  // bools as their bytes, 0 or 1
  const int64_t n = m.numel(), nd = m.ndim();
  int64_t count = 0, last = -1;
  for (int64_t i = 0; i < n; ++i) count += p[i];
  for (int64_t i = n - 1; i >= 0 && last < 0; --i)
    if (p[i]) last = i;
  Tensor out = Tensor::empty({count, nd}, DType::Int64);
  int64_t* o = out.data<int64_t>();
  if (nd == 1) {
    for (int64_t i = 0, k = 0; i <= last; ++i) {
      o[k] = i;
      k += p[i];
    }
  } else if (nd > 1) {
    std::vector<int64_t> at(static_cast<size_t>(nd), 0);  // element i's coordinates
    const int64_t inner = m.shape()[nd - 1];
    for (int64_t i = 0, k = 0; i <= last; ++i) {
      int64_t* row = o + k * nd;
      for (int64_t d = 0; d < nd; ++d) row[d] = at[static_cast<size_t>(d)];
      k += p[i];
      if (++at[static_cast<size_t>(nd - 1)] < inner) continue;
      for (int64_t d = nd - 1; d > 0 && at[static_cast<size_t>(d)] == m.shape()[d]; --d) {
        at[static_cast<size_t>(d)] = 0;
        ++at[static_cast<size_t>(d - 1)];
      }
    }
  }  // nd == 0: count rows (0 or 1) of no coordinates
  return to_device(out, mask.device());
}

}  // namespace vk
