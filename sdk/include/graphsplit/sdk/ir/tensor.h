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
  // Shares `size` bytes at `data` (an aliasing shared_ptr may point into a larger buffer, e.g. a memory
  // arena).
  Tensor(TensorDesc desc, std::shared_ptr<const char> data, size_t size);
  // A tensor of `size` uninitialised bytes that the caller fills through `*writable` before sharing it.
  static Tensor allocate(TensorDesc desc, size_t size, char** writable);
  static Tensor from_strings(TensorDesc desc, const std::vector<std::string>& values);

  const TensorDesc& desc() const { return desc_; }
  TensorDesc& mutable_desc() { return desc_; }
  std::string_view bytes() const { return {data_.get(), size_}; }
  const char* data() const { return data_.get(); }
  size_t size_bytes() const { return size_; }
  // Decodes a STRING tensor; returns false if the encoding is corrupt.
  bool strings(std::vector<std::string>* out) const;
  bool shares_storage_with(const Tensor& other) const { return data_ && data_.get() == other.data_.get(); }

  friend GS_SDK_API bool operator==(const Tensor& a, const Tensor& b);
  friend bool operator!=(const Tensor& a, const Tensor& b) { return !(a == b); }

 private:
  TensorDesc desc_;
  std::shared_ptr<const char> data_;
  size_t size_ = 0;
};

}  // namespace graphsplit::sdk
