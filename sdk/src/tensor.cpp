#include "graphsplit/sdk/ir/tensor.h"

#include <cstring>

namespace graphsplit::sdk {

Tensor::Tensor(TensorDesc desc, std::string bytes)
    : desc_(std::move(desc)), data_(std::make_shared<const std::string>(std::move(bytes))) {}

Tensor Tensor::from_strings(TensorDesc desc, const std::vector<std::string>& values) {
  std::string bytes;
  for (const std::string& v : values) {
    auto n = static_cast<uint32_t>(v.size());
    char len[4] = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                   static_cast<char>((n >> 16) & 0xff), static_cast<char>((n >> 24) & 0xff)};
    bytes.append(len, 4);
    bytes += v;
  }
  desc.dtype = DataType::kString;
  return Tensor(std::move(desc), std::move(bytes));
}

std::string_view Tensor::bytes() const {
  return data_ ? std::string_view(*data_) : std::string_view();
}

bool Tensor::strings(std::vector<std::string>* out) const {
  out->clear();
  std::string_view b = bytes();
  size_t pos = 0;
  while (pos < b.size()) {
    if (b.size() - pos < 4) return false;
    auto u = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(b[pos + k])); };
    uint32_t n = u(0) | (u(1) << 8) | (u(2) << 16) | (u(3) << 24);
    pos += 4;
    if (b.size() - pos < n) return false;
    out->emplace_back(b.substr(pos, n));
    pos += n;
  }
  return true;
}

bool operator==(const Tensor& a, const Tensor& b) {
  return a.desc_ == b.desc_ && a.bytes() == b.bytes();
}

}  // namespace graphsplit::sdk
