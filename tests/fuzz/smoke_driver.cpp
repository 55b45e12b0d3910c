// The bounded fuzz smoke of the normal test suite (built with any compiler): every seed of a target's corpus,
// then a few thousand deterministic mutations of them (bit flips, byte changes, truncations, duplicated and
// spliced ranges), each fed to the target. A crash fails the test; everything else passes. Usage:
//   fuzz_smoke <target> <corpus dir> <mutations>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "targets.h"

int main(int argc, char** argv) {
  using Target = int (*)(const uint8_t*, size_t);
  const std::map<std::string, Target> targets = {{"onnx_import", graphsplit::fuzz::onnx_import},
                                                 {"om_load", graphsplit::fuzz::om_load},
                                                 {"pipeline_toml", graphsplit::fuzz::pipeline_toml},
                                                 {"op_table_toml", graphsplit::fuzz::op_table_toml},
                                                 {"gear_options", graphsplit::fuzz::gear_options},
                                                 {"tensor_pb", graphsplit::fuzz::tensor_pb},
                                                 {"om_run", graphsplit::fuzz::om_run}};
  if (argc != 4 || !targets.count(argv[1])) {
    std::fprintf(stderr,
                 "usage: fuzz_smoke "
                 "<onnx_import|om_load|pipeline_toml|op_table_toml|gear_options|tensor_pb|om_run> <corpus> "
                 "<mutations>\n");
    return 2;
  }
  const Target target = targets.at(argv[1]);
  std::vector<std::string> seeds;
  for (const auto& e : std::filesystem::directory_iterator(argv[2])) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    seeds.push_back(ss.str());
  }
  if (seeds.empty()) {
    std::fprintf(stderr, "fuzz_smoke: no seeds in %s\n", argv[2]);
    return 2;
  }
  std::sort(seeds.begin(), seeds.end());
  auto feed = [&](const std::string& s) { target(reinterpret_cast<const uint8_t*>(s.data()), s.size()); };
  for (const std::string& s : seeds) feed(s);
  std::mt19937_64 rng(20261130);
  const long mutations = std::atol(argv[3]);
  for (long i = 0; i < mutations; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !s.empty(); ++e) {
      const size_t pos = rng() % s.size();
      switch (rng() % 6) {
        case 0:
          s[pos] ^= static_cast<char>(1u << (rng() % 8));
          break;
        case 1:
          s[pos] = static_cast<char>(rng());
          break;
        case 2:
          s.resize(pos);
          break;
        case 3:
          s.insert(pos, s.substr(rng() % s.size(), rng() % 16));
          break;
        case 4:
          s.erase(pos, rng() % 16);
          break;
        default: {
          const std::string& other = seeds[rng() % seeds.size()];
          if (!other.empty()) s.insert(pos, other.substr(rng() % other.size(), rng() % 64));
        }
      }
    }
    feed(s);
  }
  std::printf("%s: %zu seeds and %ld mutations ran\n", argv[1], seeds.size(), mutations);
  return 0;
}
