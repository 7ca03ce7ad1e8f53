// Runs a libFuzzer entry point over every file of a corpus directory, so the
// committed corpus is replayed by ctest with any compiler, and checks each
// input's verdict (outcome.h) against the corpus manifest:
//   replay MANIFEST DIR     every file of DIR must be listed in MANIFEST
//                           ("VERDICT NAME" lines, '#' comments) with the
//                           verdict the target gives it, and every listed
//                           file must exist
//   replay --print DIR      prints the manifest lines the target gives now
//                           (to start a manifest, or to add a new input's
//                           line after checking it is the intended outcome)
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "outcome.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

namespace {

std::string verdict_of(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  wit_fuzz::verdict.clear();
  LLVMFuzzerTestOneInput(buf.data(), buf.size());
  return wit_fuzz::verdict.empty() ? "-" : wit_fuzz::verdict;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: replay MANIFEST DIR | replay --print DIR\n");
    return 2;
  }
  const bool print = std::string(argv[1]) == "--print";
  const fs::path dir(argv[2]);
  std::vector<std::string> names;  // relative to DIR, sorted
  if (fs::is_directory(dir))
    for (auto& e : fs::recursive_directory_iterator(dir))
      if (e.is_regular_file()) names.push_back(fs::relative(e.path(), dir).string());
  std::sort(names.begin(), names.end());
  if (names.empty()) {
    std::fprintf(stderr, "replay: error: no corpus files in %s\n", argv[2]);
    return 2;
  }
  if (print) {
    for (const auto& n : names) std::printf("%s %s\n", verdict_of(dir / n).c_str(), n.c_str());
    return 0;
  }
  std::map<std::string, std::string> want;
  std::ifstream m(argv[1]);
  if (!m) {
    std::fprintf(stderr, "replay: error: cannot read the manifest %s\n", argv[1]);
    return 2;
  }
  for (std::string line; std::getline(m, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string v, n;
    if (!(ls >> v >> n)) {
      std::fprintf(stderr, "replay: error: bad manifest line '%s' in %s\n", line.c_str(), argv[1]);
      return 2;
    }
    want[n] = v;
  }
  int bad = 0;
  for (const auto& n : names) {
    const std::string got = verdict_of(dir / n);
    auto it = want.find(n);
    if (it == want.end()) {
      std::fprintf(stderr, "replay: %s: not in the manifest %s (its verdict now: %s)\n", n.c_str(), argv[1], got.c_str());
      bad++;
    } else if (it->second != got) {
      std::fprintf(stderr, "replay: %s: verdict %s, the manifest says %s\n", n.c_str(), got.c_str(), it->second.c_str());
      bad++;
    }
  }
  for (const auto& [n, v] : want)
    if (!std::binary_search(names.begin(), names.end(), n)) {
      std::fprintf(stderr, "replay: %s: in the manifest but not in %s\n", n.c_str(), argv[2]);
      bad++;
    }
  std::printf("replayed %zu inputs, %d with another verdict than the manifest's\n", names.size(), bad);
  return bad ? 1 : 0;
}
