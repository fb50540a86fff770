// The process group: MPI's life (init on the communication thread, finalize, abort) and the queue
// of collectives that thread runs in issue order. Every rank issues its collectives in the same
// order (MPI's rule for collectives), so running them one after another on one thread keeps the
// ranks matched while the caller goes on computing.
#include "vkml/distributed/group.h"

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <thread>

#include "vkml/core/grad_mode.h"
#include "vkml/ops/inplace.h"

namespace vk::distributed {
namespace {

enum class Life { Never, Running, Finalized };

struct Group {
  std::thread thread;
  std::mutex mu;  // guards queue and stop
  std::condition_variable cv;
  std::deque<WorkPtr> queue;
  bool stop = false;
  std::atomic<int> abort_code{-1};  // >= 0: the thread calls MPI_Abort with it
  int rank = 0;
  int size = 1;
  double timeout = 1800.0;
  std::string broken;  // communication thread only: why the group cannot be used any more
};

std::mutex g_life_mu;  // guards g_life and g_group
Life g_life = Life::Never;
std::unique_ptr<Group> g_group;

// A process that ends without finalize() (a C++ program that forgot; Python calls it at exit)
// still finishes its queued collectives and MPI, instead of destroying a running thread.
struct FinalizeAtExit {
  ~FinalizeAtExit() {
    if (initialized()) finalize();
  }
} g_finalize_at_exit;
Group* g_current = nullptr;  // the communication thread's view of its group

[[noreturn]] void mpi_abort(int code) {
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this is for an MPI that would
}

void finish(Work::State& s, std::exception_ptr error) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.error = std::move(error);
  s.done = true;
  s.cv.notify_all();
}

void run_queue(Group& g) {
  for (;;) {
    WorkPtr work;
    {
      std::unique_lock<std::mutex> lock(g.mu);
      g.cv.wait(lock, [&] { return !g.queue.empty() || g.stop || g.abort_code >= 0; });
      if (g.abort_code >= 0) mpi_abort(g.abort_code);
      if (g.queue.empty()) return;  // stop, with nothing left to run
      work = std::move(g.queue.front());
      g.queue.pop_front();
    }
    std::exception_ptr error;
    if (!g.broken.empty()) {
      error = std::make_exception_ptr(RuntimeError(
          work->what() + ": the process group is broken by an earlier failure (" + g.broken +
          "); end the job (an uncaught exception does: vk.distributed aborts every rank)"));
    } else {
      try {
        work->state->body();
      } catch (...) {
        error = std::current_exception();
      }
    }
    work->state->body = nullptr;  // its captures (tensors) go now, not when the caller drops it
    finish(*work->state, std::move(error));
  }
}

void thread_main(Group& g, std::shared_ptr<std::promise<void>> started) {
  g_current = &g;
  try {
    int already = 0;
    MPI_Initialized(&already);
    VK_CHECK(!already, RuntimeError, "vk.distributed.init: MPI was initialised by someone else");
    int provided = 0;
    detail::check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
                      "vk.distributed.init: MPI_Init_thread");
    // Errors come back as codes (turned into RuntimeError) instead of ending the process.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g.size);
    started->set_value();
  } catch (...) {
    started->set_exception(std::current_exception());
    return;
  }
  run_queue(g);
  // A broken group has a collective MPI cannot cancel; MPI_Finalize would wait for it forever.
  if (g.broken.empty()) MPI_Finalize();
}

Group& running_group(const char* fn) {
  VK_CHECK(g_life == Life::Running && g_group, RuntimeError, "vk.distributed.", fn,
           ": no process group; call init_process_group() first");
  return *g_group;
}

}  // namespace

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Product:
      return "product";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

void init(double timeout_seconds) {
  VK_CHECK(timeout_seconds > 0, RuntimeError,
           "vk.distributed.init: the timeout must be positive, got ", timeout_seconds, " s");
  std::lock_guard<std::mutex> lock(g_life_mu);
  VK_CHECK(g_life != Life::Running, RuntimeError,
           "vk.distributed.init: the process group is already initialised");
  VK_CHECK(g_life != Life::Finalized, RuntimeError,
           "vk.distributed.init: the process group was destroyed, and MPI cannot start twice in "
           "one process");
  auto group = std::make_unique<Group>();
  group->timeout = timeout_seconds;
  auto started = std::make_shared<std::promise<void>>();
  auto ready = started->get_future();
  group->thread = std::thread(thread_main, std::ref(*group), started);
  try {
    ready.get();
  } catch (...) {
    group->thread.join();
    throw;
  }
  g_group = std::move(group);
  g_life = Life::Running;
}

bool initialized() {
  std::lock_guard<std::mutex> lock(g_life_mu);
  return g_life == Life::Running;
}

int rank() {
  std::lock_guard<std::mutex> lock(g_life_mu);
  return running_group("get_rank").rank;
}

int world_size() {
  std::lock_guard<std::mutex> lock(g_life_mu);
  return running_group("get_world_size").size;
}

double timeout_seconds() {
  std::lock_guard<std::mutex> lock(g_life_mu);
  return running_group("timeout").timeout;
}

void finalize() {
  std::unique_ptr<Group> group;
  {
    std::lock_guard<std::mutex> lock(g_life_mu);
    running_group("destroy_process_group");
    group = std::move(g_group);
    g_life = Life::Finalized;
  }
  {
    std::lock_guard<std::mutex> lock(group->mu);
    group->stop = true;
  }
  group->cv.notify_all();
  group->thread.join();
}

void abort(int exit_code) {
  {
    std::lock_guard<std::mutex> lock(g_life_mu);
    if (g_life == Life::Running && g_group) {
      // The communication thread owns MPI: it aborts from its wait loop or its queue within a
      // millisecond; if it does not (stuck inside an MPI call), this thread does.
      {
        std::lock_guard<std::mutex> qlock(g_group->mu);
        g_group->abort_code = exit_code < 0 ? 1 : exit_code;
      }
      g_group->cv.notify_all();
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(5));
  mpi_abort(exit_code);
}

void Work::wait() {
  {
    std::unique_lock<std::mutex> lock(state->mu);
    state->cv.wait(lock, [&] { return state->done; });
    if (state->error) std::rethrow_exception(state->error);
    if (state->written_back) return;
    state->written_back = true;
  }
  // The host copy's result goes back to the device tensor it was made from.
  NoGradGuard no_grad;
  for (auto& [host, target] : state->write_back) copy_(target, host);
  state->write_back.clear();
}

bool Work::completed() const {
  std::lock_guard<std::mutex> lock(state->mu);
  return state->done;
}

namespace detail {

WorkPtr submit(std::string what, std::function<void()> body,
               std::vector<std::pair<Tensor, Tensor>> write_back) {
  auto work = std::make_shared<Work>(std::move(what));
  work->state = std::make_shared<Work::State>();
  work->state->body = std::move(body);
  work->state->write_back = std::move(write_back);
  std::lock_guard<std::mutex> lock(g_life_mu);
  Group& g = running_group(work->what().c_str());
  {
    std::lock_guard<std::mutex> qlock(g.mu);
    g.queue.push_back(work);
  }
  g.cv.notify_all();
  return work;
}

void check_mpi(int code, const std::string& what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  if (g_current) g_current->broken = what + ": MPI error: " + std::string(text, length);
  throw RuntimeError(what + ": MPI error: " + std::string(text, length));
}

void wait_request(void* mpi_request, const std::string& what) {
  using clock = std::chrono::steady_clock;
  Group& g = *g_current;
  auto& request = *static_cast<MPI_Request*>(mpi_request);
  const auto start = clock::now();
  const auto deadline = start + std::chrono::duration<double>(g.timeout);
  for (unsigned polls = 0;; ++polls) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (g.abort_code >= 0) mpi_abort(g.abort_code);
    if (polls % 64 != 0) continue;  // the clock costs more than a poll
    const auto now = clock::now();
    if (now > deadline) {
      g.broken = what + " timed out";
      throw RuntimeError(vk::detail::cat(
          what, " on rank ", g.rank, ": no answer from every rank within ", g.timeout,
          " s (a rank failed, is stuck, or called a different collective); the process group is "
          "broken"));
    }
    // MPI progresses only inside its calls, so keep calling it: spinning while the peers are
    // about to answer (as MPI_Wait does), then giving the core to any thread that wants it (the
    // ranks and their compute threads may share cores), then, for a peer far behind, sleeping.
    const auto waited = now - start;
    if (waited < std::chrono::microseconds(50)) continue;
    if (waited < std::chrono::milliseconds(200))
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace detail
}  // namespace vk::distributed
