// Values: constant tensors (Const node values, tensor attributes) and the runtime's values.
//
// Bytes are immutable and shared: copying a Tensor, a node or a whole graph (multi-batch cloning) never
// copies weights. Storage is little-endian, dense, row-major. STRING tensors store each element as a 4-byte
// little-endian length followed by its bytes.
//
// A Tensor can also hold an ONNX sequence, optional or map value (desc().kind kSequence / kOptional / kMap,
// dtype the innermost element type): its elements are shared and immutable like bytes, and it has no bytes of
// its own. Only sequence(), optional() and map() make one, so a tensor's kind never changes what its bytes
// mean.
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
  // A sequence of `elements` (tensors, or sequences for a sequence of sequences) whose innermost type is
  // `dtype`.
  static Tensor sequence(DataType dtype, std::vector<Tensor> elements);
  // An optional value: `element` (a tensor or a sequence), or none when it is nullptr; `element_kind` and
  // `dtype` give the type an empty optional still has.
  static Tensor optional(ValueKind element_kind, DataType dtype, const Tensor* element);
  // A map (ai.onnx.ml's ZipMap gives sequences of them): elements() are the 1-D keys (int64 or string) and
  // the 1-D values of the same length; dtype is the values' type.
  static Tensor map(Tensor keys, Tensor values);

  const TensorDesc& desc() const { return desc_; }
  TensorDesc& mutable_desc() { return desc_; }
  std::string_view bytes() const { return {data_.get(), size_}; }
  const char* data() const { return data_.get(); }
  size_t size_bytes() const { return size_; }
  // Decodes a STRING tensor; returns false if the encoding is corrupt.
  bool strings(std::vector<std::string>* out) const;
  bool shares_storage_with(const Tensor& other) const { return data_ && data_.get() == other.data_.get(); }
  // The elements of a sequence or the (zero or one) element of an optional; empty for a tensor.
  const std::vector<Tensor>& elements() const;
  // True for a value made by sequence() or optional().
  bool is_container() const;
  // What an optional holds (or would hold) and a sequence's elements are: kTensor or kSequence.
  ValueKind element_kind() const;

  friend GS_SDK_API bool operator==(const Tensor& a, const Tensor& b);
  friend bool operator!=(const Tensor& a, const Tensor& b) { return !(a == b); }

 private:
  TensorDesc desc_;
  std::shared_ptr<const char> data_;
  size_t size_ = 0;
};

}  // namespace graphsplit::sdk
