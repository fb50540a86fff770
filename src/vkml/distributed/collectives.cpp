// The collectives. Each checks its arguments on the caller's thread (the errors a rank can find
// alone), then queues a body for the communication thread that first compares every rank's
// description of the call (the errors only the ranks together can find) and then moves the data.
//
// A reduction is a reduce-scatter followed by an all-gather, both done here rather than left to
// MPI_Allreduce, whose summation order is the library's choice and may differ between ranks and
// between releases: rank r receives chunk r of every rank (MPI_Alltoallv), reduces it in rank
// order 0, 1, ..., p-1, and the reduced chunks are gathered everywhere (MPI_Allgatherv). That is
// the data volume of a ring all-reduce (2 (p-1)/p of the tensor in and out of each rank) and
// gives every rank the same bits.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <type_traits>

#include "vkml/core/half.h"
#include "vkml/distributed/group.h"
#include "vkml/ops/device_ops.h"

namespace vk::distributed {
namespace {

enum class Kind : int64_t { AllReduce, Broadcast, AllGather, ReduceScatter, Barrier };

const char* kind_name(int64_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::AllReduce:
      return "all_reduce";
    case Kind::Broadcast:
      return "broadcast";
    case Kind::AllGather:
      return "all_gather";
    case Kind::ReduceScatter:
      return "reduce_scatter";
    case Kind::Barrier:
      return "barrier";
  }
  return "?";
}

// What a rank is about to do, exchanged before the data: equal on every rank or nobody moves.
constexpr int kMaxDims = 8;
struct Call {
  int64_t kind = 0, dtype = 0, op = 0, root = 0, ndim = 0, numel = 0;
  std::array<int64_t, kMaxDims> dims{};  // the first kMaxDims extents (numel covers the rest)
  bool operator==(const Call&) const = default;
};
constexpr int kCallWords = sizeof(Call) / sizeof(int64_t);

Call describe_call(Kind kind, const Tensor* t, ReduceOp op, int root) {
  Call c;
  c.kind = static_cast<int64_t>(kind);
  c.op = static_cast<int64_t>(op);
  c.root = root;
  if (t) {
    c.dtype = static_cast<int64_t>(t->dtype());
    c.ndim = t->ndim();
    c.numel = t->numel();
    for (int64_t d = 0; d < std::min<int64_t>(c.ndim, kMaxDims); ++d) c.dims[d] = t->shape()[d];
  }
  return c;
}

std::string call_text(const Call& c) {
  std::ostringstream os;
  os << kind_name(c.kind);
  if (static_cast<Kind>(c.kind) == Kind::Barrier) return os.str() + "()";
  os << '(' << dtype_name(static_cast<DType>(c.dtype)) << '[';
  for (int64_t d = 0; d < std::min<int64_t>(c.ndim, kMaxDims); ++d)
    os << (d ? ", " : "") << c.dims[d];
  if (c.ndim > kMaxDims) os << ", ...";
  os << ']';
  if (static_cast<Kind>(c.kind) == Kind::Broadcast)
    os << ", src=" << c.root;
  else if (static_cast<Kind>(c.kind) != Kind::AllGather)
    os << ", " << reduce_op_name(static_cast<ReduceOp>(c.op));
  return os.str() + ')';
}

// Every rank gathers every rank's Call and all of them raise the same error when they differ.
void check_same_call(const Call& mine, const std::string& what) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::vector<Call> all(size);
  MPI_Request request;
  detail::check_mpi(MPI_Iallgather(&mine, kCallWords, MPI_INT64_T, all.data(), kCallWords,
                                   MPI_INT64_T, MPI_COMM_WORLD, &request),
                    what);
  detail::wait_request(&request, what);
  if (std::all_of(all.begin(), all.end(), [&](const Call& c) { return c == all[0]; })) return;
  std::string text = what +
                     ": the ranks called different collectives or passed different "
                     "tensors (each rank must make the same calls with the same shapes): ";
  for (int r = 0; r < size; ++r)
    text += (r ? "; " : "") + ("rank " + std::to_string(r) + ": ") + call_text(all[r]);
  const bool same_kind = std::all_of(all.begin(), all.end(), [&](const Call& c) {
    return c.kind == all[0].kind && c.op == all[0].op && c.root == all[0].root;
  });
  const bool same_dtype =
      std::all_of(all.begin(), all.end(), [&](const Call& c) { return c.dtype == all[0].dtype; });
  if (same_kind && same_dtype) throw ShapeError(text);
  if (same_kind) throw DTypeError(text);
  throw RuntimeError(text);
}

// MPI counts are ints: the data moves as elements of a contiguous type of the dtype's size, in
// segments that keep every count below 2^31.
MPI_Datatype element_type(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1:
      return MPI_UINT8_T;
    case 2:
      return MPI_UINT16_T;
    case 4:
      return MPI_UINT32_T;
    default:
      return MPI_UINT64_T;
  }
}
constexpr int64_t kSegment = int64_t{1} << 24;  // elements per all-reduce round (scratch memory)

template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_same_v<T, bool>) {
    return (op == ReduceOp::Sum || op == ReduceOp::Max) ? (a || b) : (a && b);
  } else {
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg:
        return a + b;
      case ReduceOp::Product:
        return a * b;
      case ReduceOp::Min:
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return b < a ? b : a;
      case ReduceOp::Max:
        if constexpr (std::is_floating_point_v<T>)
          if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
        return b > a ? b : a;
    }
    return a;
  }
}

template <class Acc, class T>
void combine_into(Acc* acc, const T* row, int64_t n, ReduceOp op) {
  switch (op) {  // the common cases as plain loops the compiler vectorises
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      if constexpr (!std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<Acc>(row[i]);
        return;
      }
      [[fallthrough]];
    default:
      for (int64_t i = 0; i < n; ++i) acc[i] = combine(acc[i], static_cast<Acc>(row[i]), op);
  }
}

// mine[i] = x_0[i] (op) x_1[i] (op) ... (op) x_{p-1}[i], in rank order, where x_me is `mine` itself
// and the other ranks' chunks lie in `others` (p - 1 rows of n, by rank, without this one's).
// A small buffer per block keeps that order and lets each step vectorise. A 16-bit float
// accumulates in float32 and rounds once (as every vkml kernel); a narrow integer wraps as
// arithmetic of its type.
template <class T>
void reduce_in_rank_order(T* mine, const T* others, int64_t n, int me, int p, ReduceOp op) {
  using Acc = std::conditional_t<is_half_type<T>, float, T>;
  constexpr int64_t kBlock = 1024;
  Acc acc[kBlock];
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t m = std::min(kBlock, n - begin);
    auto row = [&](int q) { return q == me ? mine + begin : others + (q - (q > me)) * n + begin; };
    std::copy(row(0), row(0) + m, acc);
    for (int q = 1; q < p; ++q) combine_into(acc, row(q), m, op);
    if constexpr (std::is_floating_point_v<Acc>)
      if (op == ReduceOp::Avg)
        for (int64_t i = 0; i < m; ++i) acc[i] /= static_cast<Acc>(p);
    for (int64_t i = 0; i < m; ++i) mine[begin + i] = static_cast<T>(acc[i]);
  }
}

void reduce_in_rank_order(DType dtype, void* mine, const void* others, int64_t n, int me, int p,
                          ReduceOp op) {
  VK_DISPATCH_STORAGE(
      dtype, "all_reduce",
      reduce_in_rank_order(static_cast<T*>(mine), static_cast<const T*>(others), n, me, p, op));
}

// The communication thread's memory for the chunks the other ranks send, kept between calls: a
// fresh buffer per call cost a page fault per 4 KiB and a zero-fill of the whole size.
unsigned char* scratch(size_t nbytes) {
  static thread_local std::unique_ptr<unsigned char[]> memory;
  static thread_local size_t capacity = 0;
  if (nbytes > capacity) {
    memory.reset();
    memory = std::make_unique_for_overwrite<unsigned char[]>(nbytes);
    capacity = nbytes;
  }
  return memory.get();
}

// Every other rank's chunk of n elements to this rank and this rank's chunk r (n elements at
// send + send_displs[r]) to rank r, none to itself; what arrives lies in `others` by rank.
void exchange_chunks(const void* send, const std::vector<int>& send_counts,
                     const std::vector<int>& send_displs, void* others, int n, DType dtype, int me,
                     const std::string& what) {
  const int p = static_cast<int>(send_counts.size());
  std::vector<int> counts(send_counts), recv_counts(p, n), recv_displs(p);
  counts[me] = recv_counts[me] = 0;
  for (int r = 0; r < p; ++r) recv_displs[r] = (r - (r > me)) * n;
  MPI_Request request;
  const MPI_Datatype type = element_type(dtype);
  detail::check_mpi(
      MPI_Ialltoallv(send, counts.data(), send_displs.data(), type, others, recv_counts.data(),
                     recv_displs.data(), type, MPI_COMM_WORLD, &request),
      what);
  detail::wait_request(&request, what);
}

struct Ranks {
  int rank = 0, size = 1;
  Ranks() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

// The reduce-scatter + all-gather all-reduce of n elements at `data`, in segments.
void all_reduce_host(void* data, DType dtype, int64_t n, ReduceOp op, const std::string& what) {
  const Ranks me;
  if (me.size == 1 || n == 0) return;  // one rank: sum/avg/min/max of one value is the value
  const size_t es = dtype_size(dtype);
  std::vector<int> counts(me.size), displs(me.size);
  for (int64_t begin = 0; begin < n; begin += kSegment) {
    const int64_t m = std::min(kSegment, n - begin);
    for (int r = 0; r < me.size; ++r) {
      counts[r] = static_cast<int>(m / me.size + (r < m % me.size ? 1 : 0));
      displs[r] = r ? displs[r - 1] + counts[r - 1] : 0;
    }
    const int mine = counts[me.rank];
    auto* segment = static_cast<unsigned char*>(data) + begin * es;
    unsigned char* others = scratch(static_cast<size_t>(mine) * (me.size - 1) * es);
    exchange_chunks(segment, counts, displs, others, mine, dtype, me.rank, what);
    reduce_in_rank_order(dtype, segment + displs[me.rank] * es, others, mine, me.rank, me.size, op);
    MPI_Request request;
    detail::check_mpi(MPI_Iallgatherv(MPI_IN_PLACE, 0, element_type(dtype), segment, counts.data(),
                                      displs.data(), element_type(dtype), MPI_COMM_WORLD, &request),
                      what);
    detail::wait_request(&request, what);
  }
}

void require_contiguous(const Tensor& t, const char* fn, const char* name) {
  VK_CHECK(t.defined(), RuntimeError, "vk.distributed.", fn, ": ", name, " is undefined");
  VK_CHECK(t.is_contiguous(), RuntimeError, "vk.distributed.", fn, ": ", name, " (", t.describe(),
           ") is not contiguous; pass t.contiguous() (collectives work in place)");
}

void require_op_for(DType dtype, ReduceOp op, const char* fn) {
  VK_CHECK(op != ReduceOp::Avg || is_floating(dtype), DTypeError, "vk.distributed.", fn,
           ": ReduceOp.AVG needs a floating dtype, got ", dtype_name(dtype),
           " (use SUM and divide)");
}

// The tensor the communication thread works on: t itself when the host addresses its memory,
// else a host copy that wait() writes back.
Tensor host_side(const Tensor& t, std::vector<std::pair<Tensor, Tensor>>& write_back) {
  if (t.storage()->host_addressable) return t;
  Tensor host = host_read(t);
  write_back.emplace_back(host, t);
  return host;
}

std::string name_of(Kind kind, const Tensor* t, ReduceOp op, int root) {
  return "vk.distributed." + call_text(describe_call(kind, t, op, root));
}

}  // namespace

WorkPtr all_reduce(const Tensor& t, ReduceOp op, bool checked) {
  require_contiguous(t, "all_reduce", "the tensor");
  require_op_for(t.dtype(), op, "all_reduce");
  std::vector<std::pair<Tensor, Tensor>> write_back;
  Tensor host = host_side(t, write_back);
  const Call call = describe_call(Kind::AllReduce, &t, op, 0);
  std::string what = name_of(Kind::AllReduce, &t, op, 0);
  return detail::submit(
      what,
      [host, call, checked, op, what] {
        if (checked) check_same_call(call, what);
        all_reduce_host(host.raw_data(), host.dtype(), host.numel(), op, what);
        host.bump_version();
      },
      std::move(write_back));
}

WorkPtr broadcast(const Tensor& t, int root) {
  require_contiguous(t, "broadcast", "the tensor");
  const int size = world_size();
  VK_CHECK(root >= 0 && root < size, IndexError, "vk.distributed.broadcast: src ", root,
           " is not a rank of this group of ", size);
  std::vector<std::pair<Tensor, Tensor>> write_back;
  Tensor host = host_side(t, write_back);
  const Call call = describe_call(Kind::Broadcast, &t, ReduceOp::Sum, root);
  std::string what = name_of(Kind::Broadcast, &t, ReduceOp::Sum, root);
  return detail::submit(
      what,
      [host, call, root, what] {
        check_same_call(call, what);
        auto* data = static_cast<unsigned char*>(host.raw_data());
        const size_t es = dtype_size(host.dtype());
        for (int64_t begin = 0, n = host.numel(); begin < n; begin += kSegment) {
          MPI_Request request;
          detail::check_mpi(
              MPI_Ibcast(data + begin * es, static_cast<int>(std::min(kSegment, n - begin)),
                         element_type(host.dtype()), root, MPI_COMM_WORLD, &request),
              what);
          detail::wait_request(&request, what);
        }
        host.bump_version();
      },
      std::move(write_back));
}

WorkPtr all_gather(const Tensor& out, const Tensor& in) {
  require_contiguous(out, "all_gather", "the output");
  require_contiguous(in, "all_gather", "the input");
  const int size = world_size();
  VK_CHECK(out.dtype() == in.dtype(), DTypeError, "vk.distributed.all_gather: the output (",
           out.describe(), ") and the input (", in.describe(), ") differ in dtype");
  VK_CHECK(out.numel() == in.numel() * size, ShapeError, "vk.distributed.all_gather: the output (",
           out.describe(), ") must hold world_size (", size, ") times the input's ", in.numel(),
           " elements");
  VK_CHECK(out.numel() <= std::numeric_limits<int>::max(), SizeError,
           "vk.distributed.all_gather: ", out.describe(), " has more than 2^31-1 elements");
  std::vector<std::pair<Tensor, Tensor>> write_back;
  Tensor host_out = host_side(out, write_back);
  Tensor host_in = in.storage()->host_addressable ? in : host_read(in);
  const Call call = describe_call(Kind::AllGather, &in, ReduceOp::Sum, 0);
  std::string what = name_of(Kind::AllGather, &in, ReduceOp::Sum, 0);
  return detail::submit(
      what,
      [host_out, host_in, call, what] {
        check_same_call(call, what);
        const Ranks me;
        const int64_t n = host_in.numel();
        const size_t es = dtype_size(host_in.dtype());
        auto* out_data = static_cast<unsigned char*>(host_out.raw_data());
        // The input may be a slice of the output (all_gather_into_tensor's in-place use): move it
        // into this rank's slot first and gather in place.
        if (n > 0) std::memmove(out_data + me.rank * n * es, host_in.raw_data(), n * es);
        if (n > 0 && me.size > 1) {
          MPI_Request request;
          detail::check_mpi(MPI_Iallgather(MPI_IN_PLACE, 0, element_type(host_in.dtype()), out_data,
                                           static_cast<int>(n), element_type(host_in.dtype()),
                                           MPI_COMM_WORLD, &request),
                            what);
          detail::wait_request(&request, what);
        }
        host_out.bump_version();
      },
      std::move(write_back));
}

WorkPtr reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op) {
  require_contiguous(out, "reduce_scatter", "the output");
  require_contiguous(in, "reduce_scatter", "the input");
  require_op_for(in.dtype(), op, "reduce_scatter");
  const int size = world_size();
  VK_CHECK(out.dtype() == in.dtype(), DTypeError, "vk.distributed.reduce_scatter: the output (",
           out.describe(), ") and the input (", in.describe(), ") differ in dtype");
  VK_CHECK(in.numel() == out.numel() * size, ShapeError,
           "vk.distributed.reduce_scatter: the input (", in.describe(), ") must hold world_size (",
           size, ") times the output's ", out.numel(), " elements");
  VK_CHECK(in.numel() <= std::numeric_limits<int>::max(), SizeError,
           "vk.distributed.reduce_scatter: ", in.describe(), " has more than 2^31-1 elements");
  std::vector<std::pair<Tensor, Tensor>> write_back;
  Tensor host_out = host_side(out, write_back);
  Tensor host_in = in.storage()->host_addressable ? in : host_read(in);
  const Call call = describe_call(Kind::ReduceScatter, &in, op, 0);
  std::string what = name_of(Kind::ReduceScatter, &in, op, 0);
  return detail::submit(
      what,
      [host_out, host_in, call, op, what] {
        check_same_call(call, what);
        const Ranks me;
        const int64_t k = host_out.numel();
        const size_t es = dtype_size(host_in.dtype());
        const auto* in = static_cast<const unsigned char*>(host_in.raw_data());
        if (k > 0) std::memmove(host_out.raw_data(), in + me.rank * k * es, k * es);  // own chunk
        unsigned char* others = scratch(static_cast<size_t>(k) * (me.size - 1) * es);
        if (k > 0 && me.size > 1) {
          std::vector<int> counts(me.size, static_cast<int>(k)), displs(me.size);
          for (int r = 0; r < me.size; ++r) displs[r] = static_cast<int>(r * k);
          exchange_chunks(in, counts, displs, others, static_cast<int>(k), host_in.dtype(), me.rank,
                          what);
        }
        reduce_in_rank_order(host_in.dtype(), host_out.raw_data(), others, k, me.rank, me.size, op);
        host_out.bump_version();
      },
      std::move(write_back));
}

WorkPtr barrier() {
  const Call call = describe_call(Kind::Barrier, nullptr, ReduceOp::Sum, 0);
  std::string what = "vk.distributed.barrier()";
  return detail::submit(what, [call, what] {
    check_same_call(call, what);  // the exchange is itself a barrier
  });
}

}  // namespace vk::distributed
