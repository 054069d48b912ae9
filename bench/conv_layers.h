// bench/conv_layers.h — what the convolution benchmarks share (conv_bench.cu on the GPU, conv_cpu_bench.cpp
// on the CPU): a layer of bench/resnet50_layers.txt, its ConvolutionParam, reading the list, and finding
// the files the benchmarks read (the layer list, the peer scripts).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <sys/stat.h>
#include <tensorexpr/ops/convolution.h>
#include "find_file.h"

namespace conv_layers {
using tensorexpr::index_t;

// One line of the layer list: C H K R stride pad (square images and kernels).
struct Layer {
  index_t C, H, K, R, stride, pad;
};

// The layer's convolution: no bias (the benchmarks time the convolution itself).
inline tensorexpr::ops::ConvolutionParam LayerParam(const Layer& L, double workspace_mb,
                                                    tensorexpr::ops::Layout layout = tensorexpr::ops::Layout::kNCHW) {
  tensorexpr::ops::ConvolutionParam p;
  p.kernel = {L.R, L.R};
  p.stride = {L.stride, L.stride};
  p.pad = {L.pad, L.pad};
  p.num_filter = L.K;
  p.no_bias = true;
  p.workspace = workspace_mb;
  p.layout = layout;
  return p;
}

// The benchmarks' inputs: values in [-1, 1) from a hash of the index (deterministic, no random generator;
// the same on the host and on the GPU).
TE_XINLINE float HashValue(index_t i, uint32_t seed) {
  uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed ^ static_cast<uint32_t>(i >> 32) * 40503u;
  h ^= h >> 15;
  h *= 2246822519u;
  h ^= h >> 13;
  h *= 3266489917u;
  h ^= h >> 16;
  return static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f;
}

using bench_files::FileExists;
using bench_files::FindFile;

// The layers of a list file ('#' starts a comment); throws Error when the file cannot be read.
inline std::vector<Layer> ReadLayers(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  TE_CHECK(f != nullptr, "cannot open the layer list ", path);
  std::vector<Layer> layers;
  char line[512];
  while (std::fgets(line, sizeof(line), f)) {
    if (char* hash = std::strchr(line, '#')) *hash = '\0';
    long long c, h, k, r, s, p;
    if (std::sscanf(line, "%lld %lld %lld %lld %lld %lld", &c, &h, &k, &r, &s, &p) == 6)
      layers.push_back({c, h, k, r, s, p});
  }
  std::fclose(f);
  return layers;
}

}  // namespace conv_layers
