// Small string helpers shared by the host and plugins (standard library only).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace graphsplit::sdk {

// Splits at every `sep`; empty fields are kept ("a,,b" -> "a", "", "b"; "" -> one empty field).
inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

// Whether `s` is well-formed UTF-8 (names end up in protobuf string fields, which must be).
inline bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  // ASCII, the usual name, eight bytes at a time.
  for (uint64_t word = 0; i + 8 <= s.size(); i += 8) {
    std::memcpy(&word, s.data() + i, 8);
    if (word & 0x8080808080808080u) break;
  }
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

// A hash for names (of nodes, values, subgraphs: mostly under 32 bytes), for the IR's and the importer's name
// tables. std::hash's (Murmur, out of line) was about 65 instructions for a short name and a few percent of a
// large compile, each name being hashed several times; this one reads 8 bytes at a time (a short tail as two
// overlapping words) and ends with Murmur3's finaliser, so that every input bit reaches both the low bits the
// tables index with and the high bits they keep as tags. Not for anything an attacker chooses to collide.
inline uint64_t name_hash(std::string_view s) {
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  const char* p = s.data();
  size_t n = s.size();
  uint64_t h = (n + 1) * kMul;
  const auto mix = [&h](uint64_t w) {
    h = (h ^ w) * kMul;
    h ^= h >> 32;
  };
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    mix(w);
  }
  if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    mix((uint64_t{a} << 32) | b);
  } else if (n > 0) {
    const auto byte = [p](size_t i) { return uint64_t{static_cast<unsigned char>(p[i])}; };
    mix((byte(0) << 16) | (byte(n / 2) << 8) | byte(n - 1));
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

}  // namespace graphsplit::sdk
