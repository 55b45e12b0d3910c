// The pipeline's decision log, kept compact: placement alone records several decisions per node (each
// engine's verdict, then the placement), and a std::vector<sdk::Decision> costs about 300 bytes and five heap
// blocks per record (600 MB at 1M nodes). Here a record is 40 bytes: graph, engine, detail and stage are
// interned (they repeat: "kernel library AIcoreEngine"), node names go to a character pool, once for
// consecutive records about the same nodes. Records and names are kept in fixed-size blocks, never
// reallocated: a doubling vector held twice the log for a moment as it grew, and up to half of it unused
// after. The reports read sdk::Decision values, rebuilt on first request.
#pragma once

#include <array>
#include <cstddef>
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
    uint64_t names;  // where in names_ (block << 32 | offset): per name a uint32 length, then its bytes
    uint32_t graph, engine, detail, stage;
    uint32_t name_count;
    uint32_t node_count;  // UINT32_MAX: the count is in large_counts_
    int32_t code;
    bool final;
  };
  static_assert(sizeof(Record) == 40, "the record size the log's memory figures assume");
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  // A field's last two ids, the latest first, with views of their interned text (compared without indexing).
  struct Recent {
    std::array<uint32_t, 2> id{kNone, kNone};
    std::array<std::string_view, 2> text{};
  };
  uint32_t intern(std::string_view s, Recent* recent);
  uint64_t add_names(const std::vector<std::string>& names);
  bool same_names(const Record& r, const std::vector<std::string>& names) const;
  const char* name_bytes(uint64_t at) const { return names_[at >> 32].data() + (at & 0xFFFFFFFFu); }

  std::deque<Record> records_;
  std::vector<std::string> names_;  // blocks of kNameBlock bytes (or one name list, if larger)
  std::unordered_map<size_t, uint64_t> large_counts_;  // node counts of UINT32_MAX and over, by record
  std::deque<std::string> strings_;                    // stable addresses: the keys of ids_ view them
  std::unordered_map<std::string_view, uint32_t, Hash, std::equal_to<>> ids_;
  std::array<Recent, 4> last_{};              // per field
  mutable std::vector<sdk::Decision> built_;  // the first built_.size() records
};

}  // namespace graphsplit
