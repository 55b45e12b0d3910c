// Constant tensors (Const node values, tensor attributes).
//
// Bytes are immutable and shared: copying a Tensor, a node or a whole graph (multi-batch cloning) never
// copies weights. Storage is little-endian, dense, row-major. STRING tensors store each element as a 4-byte
// little-endian length followed by its bytes.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/types.h"

namespace graphsplit::sdk {

class GS_SDK_API Tensor {
 public:
  Tensor() = default;
  Tensor(TensorDesc desc, std::string bytes);
  static Tensor from_strings(TensorDesc desc, const std::vector<std::string>& values);

  const TensorDesc& desc() const { return desc_; }
  TensorDesc& mutable_desc() { return desc_; }
  std::string_view bytes() const;
  size_t size_bytes() const { return data_ ? data_->size() : 0; }
  // Decodes a STRING tensor; returns false if the encoding is corrupt.
  bool strings(std::vector<std::string>* out) const;
  bool shares_storage_with(const Tensor& other) const { return data_ && data_ == other.data_; }

  friend GS_SDK_API bool operator==(const Tensor& a, const Tensor& b);
  friend bool operator!=(const Tensor& a, const Tensor& b) { return !(a == b); }

 private:
  TensorDesc desc_;
  std::shared_ptr<const std::string> data_;
};

}  // namespace graphsplit::sdk
