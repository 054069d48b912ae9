// The distributed layer on the GPU ([gpu][nccl]): the collectives and the gradient reducer in a world of one
// process, the errors of bad calls, and (with two GPUs or more) real worlds of several processes. This
// binary is its own worker: started with --rank-worker SCENARIO (by dist::RankProcesses) it runs one rank of
// a scenario instead of the Catch2 cases, and exits 0 when that rank saw what it expected.
#include <catch2/catch.hpp>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/dist/communicator.cuh>
#include <tensorexpr/dist/gradient_reducer.cuh>
#include <tensorexpr/dist/launch.h>
#include "../catch_runner.h"

using namespace tensorexpr;

namespace {

int GpuCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

// Small integers, exact in every dtype the collectives take: element i of rank r is (r + 1) * (i % 7 + 1).
int Pattern(int rank, index_t i) { return (rank + 1) * static_cast<int>(i % 7 + 1); }

template <typename DType>
TensorContainer<gpu, 1, DType> Filled(index_t n, int rank, Stream<gpu>* s) {
  TensorContainer<cpu, 1, DType> host(Shape1(n));
  for (index_t i = 0; i < n; ++i) host.dptr_[i] = DType(static_cast<float>(Pattern(rank, i)));
  TensorContainer<gpu, 1, DType> t(Shape1(n));
  t.set_stream(s);
  Copy(t.view(), host.view(), s);
  return t;
}

template <typename DType>
std::vector<double> ToHost(const Tensor<gpu, 1, DType>& t, Stream<gpu>* s) {
  TensorContainer<cpu, 1, DType> host(t.shape_);
  Copy(host.view(), t, s);
  s->Wait();
  std::vector<double> v(static_cast<size_t>(t.size(0)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<float>(host.dptr_[i]));
  return v;
}

// Appends to `failures` where got differs from want(i).
template <typename Want>
void Expect(const std::string& what, const std::vector<double>& got, Want want, std::vector<std::string>* failures) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = want(static_cast<index_t>(i));
    if (got[i] != w) {
      failures->push_back(Message(what, ": element ", i, " is ", got[i], ", expected ", w));
      return;
    }
  }
}

// Every collective on DType across the world, against the values the pattern implies.
template <typename DType>
void CheckCollectives(dist::Communicator& comm, Stream<gpu>* s, std::vector<std::string>* failures) {
  const int W = comm.world_size(), r = comm.rank();
  const std::string type = DataType<DType>::name();
  const index_t n = 1000;
  const auto base = [](index_t i) { return static_cast<double>(i % 7 + 1); };
  const double rank_sum = W * (W + 1) / 2.0;
  double factorial = 1;
  for (int k = 1; k <= W; ++k) factorial *= k;

  auto t = Filled<DType>(n, r, s);
  dist::AllReduce(comm, t.view(), dist::ReduceOp::kSum);
  Expect(type + " AllReduce sum", ToHost(t.view(), s), [&](index_t i) { return rank_sum * base(i); }, failures);

  t = Filled<DType>(n, r, s);
  dist::AllReduce(comm, t.view(), dist::ReduceOp::kMax);
  Expect(type + " AllReduce max", ToHost(t.view(), s), [&](index_t i) { return W * base(i); }, failures);

  t = Filled<DType>(n, r, s);
  dist::AllReduce(comm, t.view(), dist::ReduceOp::kMin);
  Expect(type + " AllReduce min", ToHost(t.view(), s), [&](index_t i) { return base(i); }, failures);

  if (W <= 2) {  // stays within int8's range for the pattern
    t = Filled<DType>(n, r, s);
    dist::AllReduce(comm, t.view(), dist::ReduceOp::kProd);
    Expect(type + " AllReduce prod", ToHost(t.view(), s),
           [&](index_t i) { double p = factorial; for (int k = 0; k < W; ++k) p *= base(i); return p; }, failures);
  }
  if (std::is_floating_point<DType>::value || std::is_same<DType, half_t>::value ||
      std::is_same<DType, bf16_t>::value) {
    auto src = Filled<DType>(n, r, s);
    TensorContainer<gpu, 1, DType> dst(Shape1(n));
    dst.set_stream(s);
    dist::AllReduce(comm, src.view(), dst.view(), dist::ReduceOp::kAvg);
    Expect(type + " AllReduce avg (out of place)", ToHost(dst.view(), s),
           [&](index_t i) { return rank_sum / W * base(i); }, failures);
    Expect(type + " AllReduce out of place leaves the source", ToHost(src.view(), s),
           [&](index_t i) { return (r + 1) * base(i); }, failures);
  }

  t = Filled<DType>(n, r, s);
  dist::Broadcast(comm, t.view(), W - 1);
  Expect(type + " Broadcast from the last rank", ToHost(t.view(), s), [&](index_t i) { return W * base(i); },
         failures);

  auto whole = Filled<DType>(n * W, r, s);
  TensorContainer<gpu, 1, DType> part(Shape1(n));
  part.set_stream(s);
  dist::ReduceScatter(comm, whole.view(), part.view(), dist::ReduceOp::kSum);
  Expect(type + " ReduceScatter sum", ToHost(part.view(), s),
         [&](index_t i) { return rank_sum * static_cast<double>((r * n + i) % 7 + 1); }, failures);

  auto mine = Filled<DType>(n, r, s);
  TensorContainer<gpu, 1, DType> all(Shape1(n * W));
  all.set_stream(s);
  dist::AllGather(comm, mine.view(), all.view());
  Expect(type + " AllGather", ToHost(all.view(), s),
         [&](index_t i) { return static_cast<double>(Pattern(static_cast<int>(i / n), i % n)); }, failures);
}

std::vector<std::string> CollectivesScenario(dist::Communicator& comm) {
  Stream<gpu> s;
  std::vector<std::string> failures;
  CheckCollectives<float>(comm, &s, &failures);
  CheckCollectives<double>(comm, &s, &failures);
  CheckCollectives<half_t>(comm, &s, &failures);
  CheckCollectives<bf16_t>(comm, &s, &failures);
  CheckCollectives<int8_t>(comm, &s, &failures);
  CheckCollectives<uint8_t>(comm, &s, &failures);
  CheckCollectives<int32_t>(comm, &s, &failures);
  CheckCollectives<int64_t>(comm, &s, &failures);
  comm.Synchronize(&s);
  return failures;
}

// Gradients of mixed sizes and dtypes, written by kernels on the compute stream just before each is handed
// over; after Finish the compute stream sees their average over the ranks.
std::vector<std::string> ReducerScenario(dist::Communicator& comm) {
  Stream<gpu> s;
  std::vector<std::string> failures;
  const int W = comm.world_size(), r = comm.rank();
  const double mean_rank = (W + 1) / 2.0;  // the average of (rank + 1)
  dist::GradientReducer reducer(&comm, &s, /*bucket_bytes=*/64 << 10);
  const index_t sizes[] = {100000, 7, 30000, 1, 250000};
  std::vector<TensorContainer<gpu, 1, float>> grads;
  TensorContainer<gpu, 1, bf16_t> low(Shape1(4096));
  low.set_stream(&s);
  for (int step = 0; step < 3; ++step) {
    grads.clear();
    for (index_t n : sizes) {
      grads.emplace_back(Shape1(n));
      grads.back().set_stream(&s);
      grads.back() = static_cast<float>((r + 1) * (step + 1));
      reducer.Ready(grads.back().view());
    }
    low = bf16_t(static_cast<float>(r + 1));
    reducer.Ready(low.view());
    reducer.Finish();
    for (size_t k = 0; k < grads.size(); ++k) {
      // A kernel on the compute stream reads the result: it must come after the all-reduce.
      TensorContainer<gpu, 1, float> twice(grads[k].shape_);
      twice.set_stream(&s);
      twice = grads[k].view() * 2.0f;
      Expect(Message("step ", step, " gradient ", k), ToHost(twice.view(), &s),
             [&](index_t) { return 2 * mean_rank * (step + 1); }, &failures);
    }
    Expect(Message("step ", step, " bf16 gradient"), ToHost(low.view(), &s), [&](index_t) { return mean_rank; },
           &failures);
  }
  if (reducer.buckets_sent() < 6) failures.push_back(Message("only ", reducer.buckets_sent(), " buckets sent"));
  comm.Synchronize(&s);
  return failures;
}

// Rank 1 leaves right after joining; rank 0's all-reduce can never finish and must end in an Error.
std::vector<std::string> LostRankScenario(dist::Communicator& comm) {
  if (comm.rank() != 0) std::_Exit(0);  // gone without a word, as a crashed process would be
  Stream<gpu> s;
  auto t = Filled<float>(1 << 20, 0, &s);
  try {
    dist::AllReduce(comm, t.view());
    comm.Synchronize(&s);
  } catch (const Error& e) {
    const std::string m = e.what();
    if (m.find("rank 0 of 2") == std::string::npos)
      return {"the error does not name the rank: " + m};
    std::printf("lost rank reported as: %s\n", e.what());
    return {};
  }
  return {"an all-reduce with a lost rank finished without an error"};
}

constexpr double kScenarioTimeout = 20;    // seconds: a healthy scenario takes well under one
constexpr double kLostRankTimeout = 3;

std::vector<std::string> RunScenario(const std::string& name, const dist::WorldSpec& world) {
  dist::Communicator comm(world, name == "lost_rank" ? kLostRankTimeout : kScenarioTimeout);
  if (name == "collectives") return CollectivesScenario(comm);
  if (name == "reducer") return ReducerScenario(comm);
  if (name == "lost_rank") return LostRankScenario(comm);
  return {"unknown scenario " + name};
}

// Runs `scenario` on `ranks` processes (this one is rank 0); returns every rank's failures.
std::vector<std::string> RunWorld(int ranks, const std::string& scenario) {
  dist::RankProcesses world =
      dist::RankProcesses::Launch(ranks, dist::RankProcesses::SelfProgram(), {"--rank-worker", scenario});
  std::vector<std::string> failures;
  try {
    for (const std::string& f : RunScenario(scenario, world.self())) failures.push_back("rank 0: " + f);
  } catch (const Error& e) {
    failures.push_back(std::string("rank 0 threw: ") + e.what());
    world.Kill();
  }
  for (const std::string& f : world.Wait()) failures.push_back(f);
  return failures;
}

}  // namespace

TEST_CASE("a world of one: every collective and dtype", "[gpu][nccl]") {
  dist::Communicator comm(dist::WorldSpec{});
  CHECK(comm.rank() == 0);
  CHECK(comm.world_size() == 1);
  const std::vector<std::string> failures = CollectivesScenario(comm);
  for (const std::string& f : failures) INFO(f);
  CHECK(failures.empty());
}

TEST_CASE("a world of one: the gradient reducer", "[gpu][nccl]") {
  dist::Communicator comm(dist::WorldSpec{});
  const std::vector<std::string> failures = ReducerScenario(comm);
  for (const std::string& f : failures) INFO(f);
  CHECK(failures.empty());
}

TEST_CASE("collectives refuse tensors they cannot take", "[gpu][nccl]") {
  dist::Communicator comm(dist::WorldSpec{});
  Stream<gpu> s;
  TensorContainer<gpu, 2, float> padded(Shape2(4, 5));
  padded.set_stream(&s);
  const Tensor<gpu, 2, float> narrow(padded.dptr_, Shape2(4, 3), padded.stride_, &s);
  CHECK_THROWS_WITH(dist::AllReduce(comm, narrow), Catch::Contains("padded rows") && Catch::Contains("rank 0 of 1"));
  TensorContainer<gpu, 1, float> a(Shape1(10)), b(Shape1(11));
  CHECK_THROWS_WITH(dist::AllReduce(comm, a.view(), b.view()), Catch::Contains("10 elements"));
  CHECK_THROWS_WITH(dist::Broadcast(comm, a.view(), 1), Catch::Contains("root 1 is not a rank"));
  CHECK_THROWS_WITH(dist::ReduceScatter(comm, a.view(), b.view()), Catch::Contains("world size (1) times"));
  CHECK_THROWS_WITH(dist::AllGather(comm, a.view(), b.view()), Catch::Contains("world size (1) times"));
  std::vector<float> host(10, 1.0f);
  const Tensor<gpu, 1, float> on_host(host.data(), Shape1(10), &s);
  CHECK_THROWS_WITH(dist::AllReduce(comm, on_host), Catch::Contains("not in GPU memory") ||
                                                       Catch::Contains("not known to CUDA"));
  // The communicator is still usable after refused calls (they never reached NCCL).
  a = 3.0f;
  dist::AllReduce(comm, a.view());
  comm.Synchronize(nullptr);
  CHECK(ToHost(a.view(), &s)[9] == 3.0);
}

TEST_CASE("a communicator on a GPU this process does not have is an Error", "[gpu][nccl]") {
  dist::WorldSpec world;
  world.local_rank = GpuCount();
  CHECK_THROWS_WITH(dist::Communicator(world), Catch::Contains("local rank") && Catch::Contains("sees"));
  CHECK_THROWS_WITH(dist::Communicator(dist::WorldSpec{}, 0.0), Catch::Contains("timeout must be positive"));
}

TEST_CASE("worlds of several processes: collectives, gradient reducer, a lost rank", "[gpu][nccl][ranks]") {
  const int gpus = GpuCount();
  REQUIRE(gpus >= 2);  // main leaves this case out on a machine with one GPU
  for (const char* scenario : {"collectives", "reducer", "lost_rank"}) {
    const int ranks = std::string(scenario) == "lost_rank" ? 2 : gpus;
    INFO(scenario << " on " << ranks << " ranks");
    const std::vector<std::string> failures = RunWorld(ranks, scenario);
    for (const std::string& f : failures) UNSCOPED_INFO(f);
    CHECK(failures.empty());
  }
  // Launch made this process rank 0 of those worlds; the other cases run in a world of one again.
  for (const char* name : {dist::kRankEnv, dist::kWorldSizeEnv, dist::kLocalRankEnv, dist::kRendezvousEnv})
    unsetenv(name);
}

// Catch2 cases, or one rank of a scenario (--rank-worker NAME). Without a GPU: exit 77 (skipped).
int main(int argc, char* argv[]) {
  if (argc == 3 && std::string(argv[1]) == "--rank-worker") {
    try {
      const dist::WorldSpec world = dist::WorldFromEnvironment();
      const std::vector<std::string> failures = RunScenario(argv[2], world);
      for (const std::string& f : failures) std::fprintf(stderr, "rank %d: %s\n", world.rank, f.c_str());
      return failures.empty() ? 0 : 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  const int gpus = GpuCount();
  if (gpus == 0) {
    std::printf("skipped: no CUDA GPU present; %d [gpu] test cases not run\n", te_test::CountTaggedCases("gpu"));
    return 77;
  }
  if (gpus >= 2) return te_test::RunCatch(argc, argv);
  // Worlds of several processes need one GPU per rank: leave them out, and say so.
  std::printf("skipped: %d [ranks] test case%s (worlds of several processes need 2 GPUs; this machine has 1)\n",
              te_test::CountTaggedCases("ranks"), te_test::CountTaggedCases("ranks") == 1 ? "" : "s");
  std::vector<char*> args(argv, argv + argc);
  char without_ranks[] = "~[ranks]";
  args.push_back(without_ranks);
  return te_test::RunCatch(static_cast<int>(args.size()), args.data());
}
