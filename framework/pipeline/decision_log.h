// The pipeline's decision log, kept compact: placement alone records two decisions per node, and a
// std::vector<sdk::Decision> costs about 300 bytes and five heap blocks per record (600 MB at 1M nodes). Here
// a record is 48 bytes: graph, engine, detail and stage are interned (they repeat: "kernel library
// AIcoreEngine"), node names go to one character pool. The reports read sdk::Decision values, rebuilt on
// first request.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graphsplit/sdk/reason.h"

namespace graphsplit {

class DecisionLog {
 public:
  void add(const sdk::Decision& d, std::string_view stage);
  void clear();
  size_t size() const { return records_.size(); }
  // Every record as an sdk::Decision, in order; each record is built once, on the first read after its add().
  const std::vector<sdk::Decision>& decisions() const;

 private:
  struct Record {
    uint32_t graph, engine, detail, stage;
    uint64_t names;  // offset in names_: per name a uint32 length, then its bytes
    uint64_t node_count;
    uint32_t name_count;
    int32_t code;
    bool final;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  uint32_t intern(std::string_view s, uint32_t* last);

  std::vector<Record> records_;
  std::string names_;
  std::deque<std::string> strings_;  // stable addresses: the keys of ids_ view them
  std::unordered_map<std::string_view, uint32_t, Hash, std::equal_to<>> ids_;
  std::array<uint32_t, 4> last_{kNone, kNone, kNone, kNone};  // the last id of each field
  mutable std::vector<sdk::Decision> built_;                  // the first built_.size() records
};

}  // namespace graphsplit
