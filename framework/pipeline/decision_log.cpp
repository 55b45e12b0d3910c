#include "pipeline/decision_log.h"

#include <algorithm>
#include <cstring>

namespace graphsplit {

uint32_t DecisionLog::intern(std::string_view s, Recent* recent) {
  // Consecutive records mostly repeat each field (one stage, one graph, one engine), or alternate between two
  // values (an engine's verdict, then the placement it led to): compare with the last two before hashing.
  Recent& r = *recent;
  if (r.id[0] != kNone && r.text[0] == s) return r.id[0];
  if (r.id[1] != kNone && r.text[1] == s) {
    std::swap(r.id[0], r.id[1]);
    std::swap(r.text[0], r.text[1]);
    return r.id[0];
  }
  uint32_t id = kNone;
  if (auto it = ids_.find(s); it != ids_.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(strings_.size());
    strings_.emplace_back(s);
    ids_.emplace(strings_.back(), id);
  }
  r.id[1] = r.id[0];
  r.text[1] = r.text[0];
  r.id[0] = id;
  r.text[0] = strings_[id];
  return id;
}

namespace {
constexpr size_t kNameBlock = size_t{1} << 20;
}  // namespace

bool DecisionLog::same_names(const Record& r, const std::vector<std::string>& names) const {
  if (r.name_count != names.size()) return false;
  const char* at = name_bytes(r.names);
  for (const std::string& name : names) {
    uint32_t length = 0;
    std::memcpy(&length, at, sizeof length);
    at += sizeof length;
    if (std::string_view(at, length) != name) return false;
    at += length;
  }
  return true;
}

uint64_t DecisionLog::add_names(const std::vector<std::string>& names) {
  size_t bytes = 0;
  for (const std::string& name : names) bytes += sizeof(uint32_t) + name.size();
  if (names_.empty() || names_.back().size() + bytes > names_.back().capacity()) {
    names_.emplace_back().reserve(std::max(kNameBlock, bytes));
  }
  std::string& block = names_.back();
  const uint64_t at = (uint64_t{names_.size() - 1} << 32) | block.size();
  for (const std::string& name : names) {
    const auto length = static_cast<uint32_t>(name.size());
    block.append(reinterpret_cast<const char*>(&length), sizeof length);
    block.append(name);
  }
  return at;
}

void DecisionLog::add(const sdk::Decision& d, std::string_view stage) {
  Record r{};
  r.graph = intern(d.graph, &last_[0]);
  r.engine = intern(d.engine, &last_[1]);
  r.detail = intern(d.detail, &last_[2]);
  r.stage = intern(stage, &last_[3]);
  r.name_count = static_cast<uint32_t>(d.nodes.size());
  // An engine's verdict and the placement after it name the same node: its name is stored once.
  const bool repeated = !records_.empty() && same_names(records_.back(), d.nodes);
  r.names = repeated ? records_.back().names : add_names(d.nodes);
  r.node_count = static_cast<uint32_t>(std::min<size_t>(d.node_count, UINT32_MAX));
  if (d.node_count >= UINT32_MAX) large_counts_[records_.size()] = d.node_count;
  r.code = static_cast<int32_t>(d.code);
  r.final = d.final;
  records_.push_back(r);
}

void DecisionLog::clear() {
  records_.clear();
  names_.clear();
  large_counts_.clear();
  strings_.clear();
  ids_.clear();
  last_.fill(Recent{});
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
    d.node_count = r.node_count == UINT32_MAX ? large_counts_.at(i) : r.node_count;
    d.final = r.final;
    const char* at = name_bytes(r.names);
    for (size_t k = 0; k < r.name_count; ++k) {
      uint32_t length = 0;
      std::memcpy(&length, at, sizeof length);
      at += sizeof length;
      d.nodes.emplace_back(at, length);
      at += length;
    }
  }
  return built_;
}

}  // namespace graphsplit
