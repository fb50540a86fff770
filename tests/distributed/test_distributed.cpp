// vk::distributed's C++ API under mpirun (ctest: distributed_2_ranks, distributed_3_ranks). Every
// rank runs every test in the same order, as MPI's collectives require; the values each rank
// contributes are functions of its rank, so each rank knows what every other one sent.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "vkml/distributed/distributed.h"
#include "vkml/ops/creation.h"
#include "vkml/ops/shape.h"

namespace dist = vk::distributed;
using vk::DType;
using vk::Tensor;

namespace {

template <class T>
Tensor tensor_of(const std::vector<T>& values) {
  Tensor t = Tensor::empty({static_cast<int64_t>(values.size())}, vk::dtype_of<T>::value);
  std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  return t;
}

template <class T>
std::vector<T> values_of(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Rank r's i-th value: differs between ranks, and a sum in another order would round differently.
float value(int r, int i) { return 1.0f / static_cast<float>(3 + 7 * r + i) + (r == 0 ? 1e7f : 0); }

}  // namespace

TEST(Distributed, SumIsInRankOrderAndIdenticalOnEveryRank) {
  const int p = dist::world_size(), me = dist::rank();
  std::vector<float> mine(11);
  for (int i = 0; i < 11; ++i) mine[i] = value(me, i);
  Tensor t = tensor_of(mine);
  dist::all_reduce(t, dist::ReduceOp::Sum)->wait();
  for (int i = 0; i < 11; ++i) {
    float want = value(0, i);
    for (int r = 1; r < p; ++r) want += value(r, i);  // ((x0 + x1) + x2) ..., in float
    EXPECT_EQ(t.data<float>()[i], want) << "element " << i;
  }
}

TEST(Distributed, AvgMinMaxProductAndBool) {
  const int p = dist::world_size(), me = dist::rank();
  Tensor avg = tensor_of(std::vector<double>{2.0 * me, 1.0});
  dist::all_reduce(avg, dist::ReduceOp::Avg)->wait();
  EXPECT_EQ(values_of<double>(avg), (std::vector<double>{static_cast<double>(p - 1), 1.0}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor mx = tensor_of(std::vector<double>{double(me), me == 1 ? nan : 0.0});
  dist::all_reduce(mx, dist::ReduceOp::Max)->wait();
  EXPECT_EQ(mx.data<double>()[0], p - 1);
  EXPECT_TRUE(std::isnan(mx.data<double>()[1]));  // NaN from one rank reaches all
  Tensor mn = tensor_of(std::vector<int64_t>{me + 5, -me});
  dist::all_reduce(mn, dist::ReduceOp::Min)->wait();
  EXPECT_EQ(values_of<int64_t>(mn), (std::vector<int64_t>{5, -(p - 1)}));
  Tensor prod = tensor_of(std::vector<int32_t>{me + 1});
  dist::all_reduce(prod, dist::ReduceOp::Product)->wait();
  int32_t factorial = 1;
  for (int r = 1; r <= p; ++r) factorial *= r;
  EXPECT_EQ(prod.data<int32_t>()[0], factorial);
  Tensor any = vk::zeros({2}, DType::Bool);  // bool: SUM and MAX are "or", MIN and PRODUCT "and"
  any.data<bool>()[0] = me == 1;
  dist::all_reduce(any, dist::ReduceOp::Sum)->wait();
  EXPECT_TRUE(any.data<bool>()[0]);
  EXPECT_FALSE(any.data<bool>()[1]);
  Tensor all = vk::ones({1}, DType::Bool);
  all.data<bool>()[0] = me != 1;
  dist::all_reduce(all, dist::ReduceOp::Min)->wait();
  EXPECT_FALSE(all.data<bool>()[0]);
}

TEST(Distributed, BroadcastAllGatherInPlaceAndReduceScatter) {
  const int p = dist::world_size(), me = dist::rank();
  Tensor b = tensor_of(std::vector<int64_t>{me, 10 + me, 20 + me});
  dist::broadcast(b, p - 1)->wait();
  EXPECT_EQ(values_of<int64_t>(b), (std::vector<int64_t>{p - 1, 9 + p, 19 + p}));
  // The input is this rank's slot of the output (all_gather_into_tensor's in-place form).
  Tensor out = vk::zeros({2 * p}, DType::Float32);
  out.data<float>()[2 * me] = float(me);
  out.data<float>()[2 * me + 1] = 0.5f;
  Tensor slot = out.alias({2}, {1}, 2 * me);
  dist::all_gather(out, slot)->wait();
  for (int r = 0; r < p; ++r) {
    EXPECT_EQ(out.data<float>()[2 * r], float(r));
    EXPECT_EQ(out.data<float>()[2 * r + 1], 0.5f);
  }
  std::vector<double> chunks;
  for (int r = 0; r < p; ++r) chunks.insert(chunks.end(), {double(me), double(r)});
  Tensor mine = vk::zeros({2}, DType::Float64);
  dist::reduce_scatter(mine, tensor_of(chunks), dist::ReduceOp::Sum)->wait();
  EXPECT_EQ(values_of<double>(mine), (std::vector<double>{p * (p - 1) / 2.0, double(p * me)}));
}

TEST(Distributed, AsyncWorkCompletesInIssueOrderWhateverTheWaitOrder) {
  const int p = dist::world_size();
  std::vector<Tensor> ts;
  std::vector<dist::WorkPtr> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(vk::full({1000 + k}, double(k), DType::Float64));
    works.push_back(dist::all_reduce(ts.back(), dist::ReduceOp::Sum));
  }
  for (int k = 7; k >= 0; --k) {
    works[k]->wait();
    EXPECT_TRUE(works[k]->completed());
    EXPECT_EQ(ts[k].data<double>()[999 + k], double(k * p));
  }
  dist::all_reduce(vk::ones({3}, DType::Float32), dist::ReduceOp::Sum);  // dropped unwaited
  dist::barrier()->wait();
}

TEST(Distributed, MismatchedShapesRaiseShapeErrorOnEveryRankAndTheGroupGoesOn) {
  const int me = dist::rank();
  Tensor t = vk::ones({2, 2 + me}, DType::Float32);
  try {
    dist::all_reduce(t, dist::ReduceOp::Sum)->wait();
    ADD_FAILURE() << "no error";
  } catch (const vk::ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0: all_reduce(float32[2, 2], sum)"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 1: all_reduce(float32[2, 3], sum)"),
              std::string::npos)
        << e.what();
  }
  Tensor after = vk::ones({1}, DType::Float32);
  dist::all_reduce(after, dist::ReduceOp::Sum)->wait();
  EXPECT_EQ(after.data<float>()[0], float(dist::world_size()));
}

TEST(Distributed, LocalErrorsAreTypedAndQueueNothing) {
  EXPECT_THROW(dist::all_reduce(vk::ones({3, 4}, DType::Float32).alias({4, 3}, {1, 4}, 0),
                                dist::ReduceOp::Sum),
               vk::RuntimeError);
  EXPECT_THROW(dist::all_reduce(vk::ones({3}, DType::Int32), dist::ReduceOp::Avg), vk::DTypeError);
  EXPECT_THROW(dist::broadcast(vk::ones({3}, DType::Float32), dist::world_size()), vk::IndexError);
  EXPECT_THROW(dist::all_gather(vk::zeros({5}, DType::Float32), vk::ones({3}, DType::Float32)),
               vk::ShapeError);
  EXPECT_THROW(dist::init(), vk::RuntimeError);  // already initialised
  dist::barrier()->wait();                       // still in step
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  dist::init(120.0);
  const int code = RUN_ALL_TESTS();
  dist::finalize();
  bool again_refused = false;
  try {
    dist::init();
  } catch (const vk::RuntimeError&) {
    again_refused = true;  // MPI cannot start twice in one process
  }
  return code != 0 ? code : (again_refused ? 0 : 1);
}
