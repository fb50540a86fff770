// The process group's internals, shared by group.cpp (the communication thread and the life of
// MPI) and collectives.cpp (what each collective does on that thread).
#pragma once
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "vkml/distributed/distributed.h"

namespace vk::distributed {

struct Work::State {
  std::function<void()> body;                         // runs on the communication thread
  std::vector<std::pair<Tensor, Tensor>> write_back;  // (host copy, caller's tensor) for wait()
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool written_back = false;
  std::exception_ptr error;
};

namespace detail {

// Queues `body` on the communication thread (InitError-style RuntimeError when no group is
// initialised) and returns its handle.
WorkPtr submit(std::string what, std::function<void()> body,
               std::vector<std::pair<Tensor, Tensor>> write_back = {});

// On the communication thread: waits for an MPI request, polling so that the group's timeout and
// an abort request are noticed. RuntimeError (and the group marked broken) on timeout.
void wait_request(void* mpi_request, const std::string& what);
// RuntimeError naming `what` and MPI's own message when an MPI call failed.
void check_mpi(int code, const std::string& what);

}  // namespace detail
}  // namespace vk::distributed
