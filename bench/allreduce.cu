// bench/allreduce.cu — all-reduce bus bandwidth of dist::AllReduce against PyTorch's NCCL all-reduce
// (torch.distributed, bench/allreduce_peer.py), measured the same way in the same run.
//
//   allreduce                          every GPU of this host, 1 MB .. 1 GB, float32 sum
//   allreduce --ranks 2 --min-mb 1 --max-mb 1024 --iters 20 --reps 7 --csv allreduce.csv
//
// One process per GPU (dist::RankProcesses starts them; this one is rank 0). For each message size every rank
// runs `iters` all-reduces back to back between two events, `reps` times; the time of one all-reduce is the
// median over the reps of elapsed / iters (back-to-back calls, as nccl-tests does, so that the ranks' skew at
// the start is spread over many calls). Bus bandwidth follows nccl-tests: algbw = bytes / time, busbw =
// algbw * 2 (p - 1) / p. Before timing, one all-reduce per size is checked: element i = sum over ranks of
// (rank + 1) * (i % 5 + 1).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>
#include <tensorexpr/cuda/tensorexpr_cuda.cuh>
#include <tensorexpr/dist/communicator.cuh>
#include <tensorexpr/dist/launch.h>
#include "find_file.h"

using namespace tensorexpr;

namespace {

// Whether NCCL_RUNTIME_CONNECT came from the user (read before the communicator sets it).
const bool runtime_connect_given_ = std::getenv("NCCL_RUNTIME_CONNECT") != nullptr;

struct Options {
  int ranks = 0;  // 0: every GPU
  double min_mb = 1, max_mb = 1024;
  int iters = 20, reps = 7;
  std::string csv;
  bool peer = true;
};

const char* kUsage =
    "usage: allreduce [--ranks N] [--min-mb MB] [--max-mb MB] [--iters N] [--reps N] [--csv FILE] [--no-peer]\n";

bool ParseArgs(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--ranks" && has_value) o->ranks = std::atoi(argv[++i]);
    else if (a == "--min-mb" && has_value) o->min_mb = std::atof(argv[++i]);
    else if (a == "--max-mb" && has_value) o->max_mb = std::atof(argv[++i]);
    else if (a == "--iters" && has_value) o->iters = std::atoi(argv[++i]);
    else if (a == "--reps" && has_value) o->reps = std::atoi(argv[++i]);
    else if (a == "--csv" && has_value) o->csv = argv[++i];
    else if (a == "--no-peer") o->peer = false;
    else return false;
  }
  return o->ranks >= 0 && o->min_mb > 0 && o->max_mb >= o->min_mb && o->iters > 0 && o->reps > 0;
}

// Message sizes: powers of two from min to max MB (in bytes, a multiple of 4).
std::vector<size_t> Sizes(const Options& o) {
  std::vector<size_t> sizes;
  for (double mb = o.min_mb; mb <= o.max_mb * 1.0001; mb *= 2)
    sizes.push_back(static_cast<size_t>(mb * (1 << 20)) / 4 * 4);
  return sizes;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Checks one all-reduce of the pattern; returns an empty string when it is right.
std::string CheckSum(dist::Communicator& comm, const Tensor<gpu, 1, float>& buf, Stream<gpu>* s) {
  const index_t n = buf.size(0);
  TensorContainer<cpu, 1, float> host(Shape1(n));
  const int r = comm.rank(), W = comm.world_size();
  for (index_t i = 0; i < n; ++i) host.dptr_[i] = static_cast<float>((r + 1) * (i % 5 + 1));
  Copy(buf, host.view(), s);
  dist::AllReduce(comm, buf, dist::ReduceOp::kSum);
  Copy(host.view(), buf, s);
  comm.Synchronize(s);
  const double rank_sum = W * (W + 1) / 2.0;
  for (index_t i = 0; i < n; i += std::max<index_t>(1, n / 4099)) {
    const double want = rank_sum * static_cast<double>(i % 5 + 1);
    if (host.dptr_[i] != want) return Message("element ", i, " is ", host.dptr_[i], ", expected ", want);
  }
  return "";
}

// Seconds per all-reduce of `bytes` (median over reps of back-to-back runs).
double TimeAllReduce(dist::Communicator& comm, const Tensor<gpu, 1, float>& buf, Stream<gpu>* s, const Options& o) {
  cudaEvent_t begin, end;
  TE_CUDA_CHECK(cudaEventCreate(&begin));
  TE_CUDA_CHECK(cudaEventCreate(&end));
  for (int w = 0; w < 3; ++w) dist::AllReduce(comm, buf);  // warm-up (NCCL connects lazily per size class)
  std::vector<double> per_call;
  for (int rep = 0; rep < o.reps; ++rep) {
    comm.Synchronize(s);
    TE_CUDA_CHECK(cudaEventRecord(begin, s->stream()));
    for (int it = 0; it < o.iters; ++it) dist::AllReduce(comm, buf);
    TE_CUDA_CHECK(cudaEventRecord(end, s->stream()));
    comm.Synchronize(s);
    float ms = 0;
    TE_CUDA_CHECK(cudaEventElapsedTime(&ms, begin, end));
    per_call.push_back(ms * 1e-3 / o.iters);
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  return Median(per_call);
}

// PyTorch's seconds per all-reduce by size (empty when the peer could not run).
std::map<size_t, double> RunPeer(int ranks, const std::vector<size_t>& sizes, const Options& o) {
  std::string list;
  for (size_t b : sizes) list += (list.empty() ? "" : ",") + std::to_string(b);
  // The peer runs with NCCL's own defaults, but for NVLink multicast, which stays off: not with the
  // NCCL_RUNTIME_CONNECT=0 that dist::Communicator set in this process (unless the user set it).
  const std::string env = runtime_connect_given_ ? "" : "env -u NCCL_RUNTIME_CONNECT ";
  const std::string script = bench_files::FindFile("TE_PEER_SCRIPT", "allreduce_peer.py");
  const std::string cmd = env + "NCCL_NVLS_ENABLE=0 python3 " + script + " --ranks " + std::to_string(ranks) +
                          " --bytes " + list + " --iters " + std::to_string(o.iters) + " --reps " +
                          std::to_string(o.reps) + " 2>&1";
  std::printf("peer: %s\n", cmd.c_str());
  std::fflush(stdout);
  std::map<size_t, double> seconds;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return seconds;
  char line[1024];
  while (std::fgets(line, sizeof line, p)) {
    unsigned long long bytes = 0;
    double s = 0;
    if (std::sscanf(line, "peer_allreduce bytes %llu seconds %lf", &bytes, &s) == 2) seconds[bytes] = s;
    else std::printf("  | %s", line);
  }
  const int status = pclose(p);
  if (status != 0) std::printf("  (peer exited with status %d)\n", status);
  return seconds;
}

double BusBandwidth(size_t bytes, double seconds, int ranks) {
  return seconds > 0 ? bytes / seconds * 1e-9 * 2.0 * (ranks - 1) / ranks : 0;
}

int Run(const Options& o, int argc, char** argv) {
  dist::WorldSpec world = dist::WorldFromEnvironment();
  dist::RankProcesses processes;
  if (world.world_size == 1) {  // not started as a rank: start the world, and be its rank 0
    int gpus = 0;
    TE_CUDA_CHECK(cudaGetDeviceCount(&gpus));
    const int ranks = o.ranks > 0 ? o.ranks : gpus;
    TE_CHECK(ranks <= gpus, "--ranks ", ranks, ": this host has ", gpus, " GPU", gpus == 1 ? "" : "s");
    processes = dist::RankProcesses::Launch(ranks, dist::RankProcesses::SelfProgram(),
                                            std::vector<std::string>(argv + 1, argv + argc));
    world = processes.self();
  }
  const std::vector<size_t> sizes = Sizes(o);
  std::vector<double> ours(sizes.size(), 0);
  std::string device_name;
  {
    dist::Communicator comm(world);
    Stream<gpu> s;
    cudaDeviceProp prop;
    TE_CUDA_CHECK(cudaGetDeviceProperties(&prop, comm.device()));
    device_name = prop.name;
    TensorContainer<gpu, 1, float> buf(Shape1(static_cast<index_t>(sizes.back() / 4)));
    buf.set_stream(&s);
    for (size_t k = 0; k < sizes.size(); ++k) {
      const Tensor<gpu, 1, float> part = buf.Slice(0, static_cast<index_t>(sizes[k] / 4));
      const std::string wrong = CheckSum(comm, part, &s);
      TE_CHECK(wrong.empty(), comm.Where(), "the all-reduce of ", sizes[k], " bytes is wrong: ", wrong);
      ours[k] = TimeAllReduce(comm, part, &s, o);
    }
    comm.Synchronize(&s);
  }
  if (world.rank != 0) return 0;
  const std::vector<std::string> failures = processes.Wait();
  for (const std::string& f : failures) std::fprintf(stderr, "allreduce: %s\n", f.c_str());
  if (!failures.empty()) return 1;

  const int ranks = world.world_size;
  const std::map<size_t, double> peer = o.peer ? RunPeer(ranks, sizes, o) : std::map<size_t, double>();
  std::printf("\nall-reduce, float32 sum, %d ranks on %s; %d back-to-back calls, median of %d\n", ranks,
              device_name.c_str(), o.iters, o.reps);
  std::printf("%12s %12s %12s %12s %14s %12s\n", "bytes", "ours (us)", "busbw GB/s", "torch (us)", "torch busbw",
              "ours/torch");
  FILE* csv = o.csv.empty() ? nullptr : std::fopen(o.csv.c_str(), "w");
  TE_CHECK(o.csv.empty() || csv != nullptr, "cannot write ", o.csv);
  if (csv != nullptr) {
    std::fprintf(csv, "# bench/allreduce, %d x %s, float32 sum, %d back-to-back calls, median of %d\n", ranks,
                 device_name.c_str(), o.iters, o.reps);
    std::fprintf(csv, "impl,world_size,bytes,seconds,algbw_gbs,busbw_gbs\n");
  }
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto it = peer.find(sizes[k]);
    const double theirs = it == peer.end() ? 0 : it->second;
    const double bus = BusBandwidth(sizes[k], ours[k], ranks), peer_bus = BusBandwidth(sizes[k], theirs, ranks);
    std::printf("%12zu %12.1f %12.1f %12.1f %14.1f %12s\n", sizes[k], ours[k] * 1e6, bus, theirs * 1e6, peer_bus,
                peer_bus > 0 ? Message(bus / peer_bus).c_str() : "-");
    if (csv == nullptr) continue;
    std::fprintf(csv, "tensorexpr,%d,%zu,%.9g,%.4f,%.4f\n", ranks, sizes[k], ours[k], sizes[k] / ours[k] * 1e-9, bus);
    if (theirs > 0)
      std::fprintf(csv, "torch,%d,%zu,%.9g,%.4f,%.4f\n", ranks, sizes[k], theirs, sizes[k] / theirs * 1e-9, peer_bus);
  }
  if (csv != nullptr) {
    std::fclose(csv);
    std::printf("written to %s\n", o.csv.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, &o)) {
    std::fprintf(stderr, "%s", kUsage);
    return 2;
  }
  try {
    return Run(o, argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce: %s\n", e.what());
    return 1;
  }
}
