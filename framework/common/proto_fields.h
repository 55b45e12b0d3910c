// Protobuf fields read straight from a message's bytes, without parsing the message: the .om reader decodes
// each node this way, and the ONNX importer peeks at a node's names before it parses the node.
#pragma once

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstdint>
#include <cstring>
#include <string_view>

namespace graphsplit::proto_fields {

using google::protobuf::internal::WireFormatLite;

// One field of a message: its number, wire type, and its value (a number) or bytes (length-delimited).
struct Field {
  uint32_t number = 0;
  WireFormatLite::WireType wire = WireFormatLite::WIRETYPE_VARINT;
  uint64_t value = 0;
  std::string_view bytes;
  size_t begin = 0, end = 0;  // the field's extent in the message, its tag included
};

// A varint as protobuf reads it: at most ten bytes, bits past the 64th dropped. CodedInputStream costs more
// to set up than a node's fields cost to read, and a node is a handful of bytes.
inline bool read_varint(const uint8_t*& p, const uint8_t* end, uint64_t* out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 70 && p != end; shift += 7) {
    const uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7F) << shift;
    if (b < 0x80) {
      *out = v;
      return true;
    }
  }
  return false;
}

class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes)
      : base_(reinterpret_cast<const uint8_t*>(bytes.data())), p_(base_), end_(base_ + bytes.size()) {}

  // The next field, false at the end or when the bytes do not parse (ok() tells which).
  bool next(Field* f) {
    if (!ok_ || p_ == end_) return false;
    f->begin = static_cast<size_t>(p_ - base_);
    if (end_ - p_ >= 2 && p_[0] < 0x80 && p_[1] < 0x80 && (p_[0] >> 3) != 0) {
      // A one-byte tag and a one-byte number or length, most fields of a graph file, read in line.
      const uint8_t tag = p_[0], v = p_[1];
      f->number = tag >> 3;
      f->wire = static_cast<WireFormatLite::WireType>(tag & 7);
      if (f->wire == WireFormatLite::WIRETYPE_VARINT) {
        f->value = v;
        p_ += 2;
        f->end = static_cast<size_t>(p_ - base_);
        return true;
      }
      if (f->wire == WireFormatLite::WIRETYPE_LENGTH_DELIMITED) {
        if (end_ - p_ - 2 < v) return fail();
        f->bytes = std::string_view(reinterpret_cast<const char*>(p_ + 2), v);
        p_ += 2 + v;
        f->end = static_cast<size_t>(p_ - base_);
        return true;
      }
    }
    uint64_t tag = 0;
    if (!read_varint(p_, end_, &tag) || tag > UINT32_MAX) return fail();
    f->number = WireFormatLite::GetTagFieldNumber(static_cast<uint32_t>(tag));
    f->wire = WireFormatLite::GetTagWireType(static_cast<uint32_t>(tag));
    if (f->number == 0 || !read_value(static_cast<uint32_t>(tag), f)) return fail();
    f->end = static_cast<size_t>(p_ - base_);
    return true;
  }
  bool ok() const { return ok_; }

 private:
  bool fail() { return ok_ = false; }

  bool read_value(uint32_t tag, Field* f) {
    switch (f->wire) {
      case WireFormatLite::WIRETYPE_VARINT:
        return read_varint(p_, end_, &f->value);
      case WireFormatLite::WIRETYPE_FIXED64:
        return fixed(8, f);
      case WireFormatLite::WIRETYPE_FIXED32:
        return fixed(4, f);
      case WireFormatLite::WIRETYPE_LENGTH_DELIMITED: {
        uint64_t length = 0;
        if (!read_varint(p_, end_, &length) || length > static_cast<uint64_t>(end_ - p_)) return false;
        f->bytes = std::string_view(reinterpret_cast<const char*>(p_), length);
        p_ += length;
        return true;
      }
      case WireFormatLite::WIRETYPE_START_GROUP:  // neither om.proto nor onnx.proto has groups: skipped
        return skip_group(tag);
      default:  // an end-group tag outside a group, or no wire type at all
        return false;
    }
  }

  bool fixed(size_t size, Field* f) {
    if (static_cast<size_t>(end_ - p_) < size) return false;
    f->value = 0;
    std::memcpy(&f->value, p_, size);  // little-endian, as is every machine this builds for
    p_ += size;
    return true;
  }

  // Rare enough for protobuf's own skipping, which also bounds the nesting.
  bool skip_group(uint32_t tag) {
    google::protobuf::io::CodedInputStream in(p_, static_cast<int>(end_ - p_));
    if (!WireFormatLite::SkipField(&in, tag)) return false;
    p_ += in.CurrentPosition();
    return true;
  }

  const uint8_t* base_;
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace graphsplit::proto_fields
