// vk::distributed: data-parallel training over MPI. One process group (MPI_COMM_WORLD) per
// process; collectives on tensors run in issue order on one communication thread, so they
// overlap with the caller's compute (backward) and every MPI call comes from the thread that
// initialised MPI (MPI_THREAD_FUNNELED is all the MPI library must support).
//
// Every collective is checked before it moves data: the ranks exchange what they are about to do
// (which collective, dtype, shape, op, root) and all of them raise ShapeError / DTypeError /
// RuntimeError naming each rank's side when they differ, instead of hanging or mixing bytes.
// Results are identical on every rank, bit for bit: each chunk of a reduction is reduced by one
// rank, in rank order 0, 1, ..., p-1, and then copied to all the others. A collective that gets
// no answer within the group's timeout raises RuntimeError and leaves the group broken (MPI
// cannot cancel a collective); the caller is expected to end the job (abort()).
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "vkml/core/tensor.h"

namespace vk::distributed {

enum class ReduceOp : uint8_t { Sum, Avg, Product, Min, Max };
std::string_view reduce_op_name(ReduceOp op);

class Work;
using WorkPtr = std::shared_ptr<Work>;

// Initialises MPI (from the environment mpirun set up; a process started alone is a group of
// one) and starts the communication thread. RuntimeError when already initialised, or when MPI
// was finalised before in this process (MPI cannot start twice).
void init(double timeout_seconds = 1800.0);
bool initialized();
int rank();
int world_size();
double timeout_seconds();
// Waits for the queued collectives, finalises MPI and stops the thread.
void finalize();
// Ends every process of the job now (MPI_Abort): what a rank that failed does so that the others
// stop instead of waiting in a collective.
[[noreturn]] void abort(int exit_code);

// The collectives: in place on contiguous tensors of any dtype and device (a tensor the host
// cannot address goes through a host copy, written back by wait()). Each returns at once; wait()
// blocks until it is done and throws what it raised. `checked` = false skips the cross-rank check
// (for callers that made the shapes equal by construction: DDP's gradient buckets).
WorkPtr all_reduce(const Tensor& t, ReduceOp op, bool checked = true);
WorkPtr broadcast(const Tensor& t, int root);
// out: world_size() * in.numel() elements of in's dtype, rank r's `in` at [r * n, (r + 1) * n).
WorkPtr all_gather(const Tensor& out, const Tensor& in);
// in: world_size() * out.numel() elements; rank r gets the reduction of every rank's chunk r.
WorkPtr reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op);
WorkPtr barrier();

class Work {
 public:
  explicit Work(std::string what) : what_(std::move(what)) {}
  void wait();
  bool completed() const;
  const std::string& what() const { return what_; }

  struct State;  // filled by the implementation
  std::shared_ptr<State> state;

 private:
  std::string what_;
};

}  // namespace vk::distributed
