#include "pipeline/decision_log.h"

#include <algorithm>
#include <cstring>

namespace graphsplit {

uint32_t DecisionLog::intern(std::string_view s, uint32_t* last) {
  // Consecutive records mostly repeat each field (one stage, one graph, one engine): compare before hashing.
  if (*last != kNone && strings_[*last] == s) return *last;
  if (auto it = ids_.find(s); it != ids_.end()) return *last = it->second;
  const auto id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(strings_.back(), id);
  return *last = id;
}

void DecisionLog::add(const sdk::Decision& d, std::string_view stage) {
  Record r{};
  r.graph = intern(d.graph, &last_[0]);
  r.engine = intern(d.engine, &last_[1]);
  r.detail = intern(d.detail, &last_[2]);
  r.stage = intern(stage, &last_[3]);
  r.names = names_.size();
  r.node_count = d.node_count;
  r.name_count = static_cast<uint32_t>(d.nodes.size());
  r.code = static_cast<int32_t>(d.code);
  r.final = d.final;
  for (size_t i = 0; i < r.name_count; ++i) {
    const auto length = static_cast<uint32_t>(d.nodes[i].size());
    names_.append(reinterpret_cast<const char*>(&length), sizeof length);
    names_.append(d.nodes[i]);
  }
  records_.push_back(r);
}

void DecisionLog::clear() {
  records_.clear();
  names_.clear();
  strings_.clear();
  ids_.clear();
  last_.fill(kNone);
  built_.clear();
}

const std::vector<sdk::Decision>& DecisionLog::decisions() const {
  // Records are only appended (or all cleared), so only those not yet built are.
  built_.reserve(records_.size());
  for (size_t i = built_.size(); i < records_.size(); ++i) {
    const Record& r = records_[i];
    sdk::Decision& d = built_.emplace_back();
    d.code = static_cast<sdk::ReasonCode>(r.code);
    d.graph = strings_[r.graph];
    d.engine = strings_[r.engine];
    d.detail = strings_[r.detail];
    d.stage = strings_[r.stage];
    d.node_count = r.node_count;
    d.final = r.final;
    size_t at = r.names;
    for (size_t k = 0; k < r.name_count; ++k) {
      uint32_t length = 0;
      std::memcpy(&length, names_.data() + at, sizeof length);
      at += sizeof length;
      d.nodes.emplace_back(names_, at, length);
      at += length;
    }
  }
  return built_;
}

}  // namespace graphsplit
