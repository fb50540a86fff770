// The MPI library's own all-reduce figures, for bench/dist_bench.py's dist.allreduce rows: the time
// per call of float32 sum all-reduces of given sizes, done by MPI alone (no vkml, no Python), so
// that vk.distributed.all_reduce's figure in the same run has a yardstick.
//
//   mpirun -n 2 vkml_dist_bench [--sizes 1024,65536] [--modes allreduce,rsag] [--time 0.2]
//                               [--reps 5]
//
// Modes:
//   allreduce  MPI_Allreduce in place: the library's best algorithm for the size (its own order).
//   rsag       what vk::distributed does, in plain MPI: MPI_Ialltoallv of the p chunks, a local
//              rank-order sum of the chunk this rank owns, MPI_Iallgatherv of the sums (each
//              waited with MPI_Wait). Against `allreduce` it shows the algorithm's cost; against
//              vkml's row, what vkml adds (Python, the communication thread, its polling).
//
// Each size: two warm-up calls, then a calibration that picks how many calls make one sample
// (~time/reps seconds, from rank 0's clock, which every rank follows), then `reps` samples, each
// started after a barrier and taken as the slowest rank's time. Rank 0 prints one JSON line per
// (mode, size): {"mode", "bytes", "ranks", "s" (the median seconds per call), "min_s" (the best),
// "iters", "reps"}.
#define OMPI_SKIP_MPICXX 1  // MPI's C API only (the C++ bindings are deprecated)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  std::vector<long> sizes{1024, 16384, 262144, 4194304, 67108864};
  std::vector<std::string> modes{"allreduce", "rsag"};
  double time = 0.2;
  int reps = 5;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find(',', begin);
    if (end == std::string::npos) end = s.size();
    if (end > begin) out.push_back(s.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--sizes") {
      o.sizes.clear();
      for (const auto& s : split(value)) o.sizes.push_back(std::stol(s));
    } else if (key == "--modes") {
      o.modes = split(value);
    } else if (key == "--time") {
      o.time = std::stod(value);
    } else if (key == "--reps") {
      o.reps = std::max(1, std::stoi(value));
    } else {
      std::fprintf(stderr, "vkml_dist_bench: unknown option %s\n", key.c_str());
      std::exit(2);
    }
  }
  return o;
}

// vk::distributed's all-reduce of n floats (reduce-scatter by all-to-all, all-gather), in plain
// MPI.
class RsAg {
 public:
  RsAg(long n, int rank, int size)
      : rank_(rank), size_(size), counts_(size), displs_(size), rcounts_(size), rdispls_(size) {
    for (int r = 0; r < size; ++r) {
      counts_[r] = static_cast<int>(n / size + (r < n % size ? 1 : 0));
      displs_[r] = r ? displs_[r - 1] + counts_[r - 1] : 0;
    }
    for (int r = 0; r < size; ++r) {
      rcounts_[r] = counts_[rank];
      rdispls_[r] = r * counts_[rank];
    }
    rows_.resize(static_cast<size_t>(counts_[rank]) * size);
  }

  void operator()(float* data) {
    MPI_Request request;
    MPI_Ialltoallv(data, counts_.data(), displs_.data(), MPI_FLOAT, rows_.data(), rcounts_.data(),
                   rdispls_.data(), MPI_FLOAT, MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    const int mine = counts_[rank_];
    float* acc = data + displs_[rank_];
    std::copy(rows_.begin(), rows_.begin() + mine, acc);
    for (int q = 1; q < size_; ++q) {
      const float* row = rows_.data() + static_cast<size_t>(q) * mine;
      for (int i = 0; i < mine; ++i) acc[i] += row[i];
    }
    MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_FLOAT, data, counts_.data(), displs_.data(), MPI_FLOAT,
                    MPI_COMM_WORLD, &request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
  }

 private:
  int rank_, size_;
  std::vector<int> counts_, displs_, rcounts_, rdispls_;
  std::vector<float> rows_;
};

template <class Call>
void measure(const std::string& mode, long bytes, const Options& o, int rank, int size,
             Call&& call) {
  for (int i = 0; i < 2; ++i) call();
  // Calibrate: batches of 1, 2, 4, ... calls until one takes 20 ms on rank 0. Rank 0's time is
  // broadcast after each batch, so every rank makes the same number of calls.
  double per_call = 0;
  for (int probe = 1;; probe *= 2) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < probe; ++i) call();
    double elapsed = MPI_Wtime() - t0;
    MPI_Bcast(&elapsed, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    per_call = elapsed / probe;
    if (elapsed >= 0.02 || probe >= 1 << 16) break;
  }
  const int iters = std::max(1, static_cast<int>(o.time / o.reps / per_call));
  std::vector<double> samples;
  for (int r = 0; r < o.reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) call();
    double mine = (MPI_Wtime() - start) / iters, slowest = 0;
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    samples.push_back(slowest);
  }
  std::sort(samples.begin(), samples.end());
  if (rank == 0) {
    std::printf(
        "{\"mode\": \"%s\", \"bytes\": %ld, \"ranks\": %d, \"s\": %.9g, \"min_s\": %.9g, "
        "\"iters\": %d, \"reps\": %d}\n",
        mode.c_str(), bytes, size, samples[samples.size() / 2], samples.front(), iters, o.reps);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const Options o = parse(argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (long bytes : o.sizes) {
    const long n = std::max(1L, bytes / static_cast<long>(sizeof(float)));
    std::vector<float> data(n, 0.0f);  // zeros: sums stay zeros, whatever the count
    for (const auto& mode : o.modes) {
      if (mode == "allreduce") {
        measure(mode, bytes, o, rank, size, [&] {
          MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM,
                        MPI_COMM_WORLD);
        });
      } else if (mode == "rsag") {
        RsAg rsag(n, rank, size);
        measure(mode, bytes, o, rank, size, [&] { rsag(data.data()); });
      } else {
        if (rank == 0) std::fprintf(stderr, "vkml_dist_bench: unknown mode %s\n", mode.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
