#include "graphsplit/sdk/ir/tensor.h"

#include <cstdint>
#include <cstring>

namespace graphsplit::sdk {
namespace {

// What a sequence or optional value points to. Its deleter type is what marks the shared pointer as a
// container (std::get_deleter), so no byte buffer can be mistaken for one.
struct Elements {
  ValueKind element_kind = ValueKind::kTensor;
  std::vector<Tensor> items;
};
struct ElementsDeleter {
  void operator()(const char* p) const { delete reinterpret_cast<const Elements*>(p); }
};

Tensor make_container(TensorDesc desc, ValueKind element_kind, std::vector<Tensor> items) {
  auto* holder = new Elements{element_kind, std::move(items)};
  std::shared_ptr<const char> data(reinterpret_cast<const char*>(holder), ElementsDeleter{});
  return Tensor(std::move(desc), std::move(data), 0);
}

const std::vector<Tensor>& no_elements() {
  static const std::vector<Tensor> empty;
  return empty;
}

}  // namespace

Tensor::Tensor(TensorDesc desc, std::string bytes) : desc_(std::move(desc)), size_(bytes.size()) {
  auto owner = std::make_shared<const std::string>(std::move(bytes));
  const char* p = owner->data();
  data_ = std::shared_ptr<const char>(std::move(owner), p);
}

Tensor::Tensor(TensorDesc desc, std::shared_ptr<const char> data, size_t size)
    : desc_(std::move(desc)), data_(std::move(data)), size_(size) {}

Tensor Tensor::allocate(TensorDesc desc, size_t size, char** writable) {
  // 64-byte alignment for vectorised kernels; make_shared_for_overwrite skips zero-filling.
  std::shared_ptr<char[]> buffer = std::make_shared_for_overwrite<char[]>(size + 64);
  auto address = reinterpret_cast<uintptr_t>(buffer.get());
  char* aligned = buffer.get() + ((64 - address % 64) % 64);
  *writable = aligned;
  return Tensor(std::move(desc), std::shared_ptr<const char>(std::move(buffer), aligned), size);
}

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

Tensor Tensor::sequence(DataType dtype, std::vector<Tensor> elements) {
  TensorDesc desc;
  desc.kind = ValueKind::kSequence;
  desc.dtype = dtype;
  const ValueKind element_kind = !elements.empty() && elements.front().is_container()
                                     ? elements.front().desc().kind
                                     : ValueKind::kTensor;
  return make_container(std::move(desc), element_kind, std::move(elements));
}

Tensor Tensor::optional(ValueKind element_kind, DataType dtype, const Tensor* element) {
  TensorDesc desc;
  desc.kind = ValueKind::kOptional;
  desc.dtype = dtype;
  std::vector<Tensor> items;
  if (element) items.push_back(*element);
  return make_container(std::move(desc), element_kind, std::move(items));
}

Tensor Tensor::map(Tensor keys, Tensor values) {
  TensorDesc desc;
  desc.kind = ValueKind::kMap;
  desc.dtype = values.desc().dtype;
  return make_container(std::move(desc), ValueKind::kTensor, {std::move(keys), std::move(values)});
}

bool Tensor::is_container() const {
  return std::get_deleter<ElementsDeleter>(data_) != nullptr;
}

const std::vector<Tensor>& Tensor::elements() const {
  if (!is_container()) return no_elements();
  return reinterpret_cast<const Elements*>(data_.get())->items;
}

ValueKind Tensor::element_kind() const {
  if (!is_container()) return ValueKind::kTensor;
  return reinterpret_cast<const Elements*>(data_.get())->element_kind;
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
  if (a.is_container() || b.is_container()) {
    return a.is_container() == b.is_container() && a.desc_ == b.desc_ &&
           a.element_kind() == b.element_kind() && a.elements() == b.elements();
  }
  return a.desc_ == b.desc_ && a.bytes() == b.bytes();
}

}  // namespace graphsplit::sdk
