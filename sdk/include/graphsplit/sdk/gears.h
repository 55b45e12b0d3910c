// Dynamic gears (GE's multi-batch): parsing and checking atc's --input_shape / --dynamic_batch_size /
// --dynamic_image_size / --dynamic_dims / --input_format, and distributing each gear over the inputs. atc
// runs the checks before anything is read (reference 6.2, the V rules) and the multi-batch pass runs the rest
// on the model (the P rules); both use this one implementation. Messages start with GE's error code.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

enum class GearKind { kNone, kBatch, kImage, kDims };

struct GearInput {
  std::string name;           // everything before the last ':'
  std::vector<int64_t> dims;  // -1 = a dimension the gears fill; empty = scalar
};

struct GearRequest {
  GearKind kind = GearKind::kNone;
  std::vector<GearInput> inputs;            // --input_shape, in the user's order
  std::vector<std::vector<int64_t>> gears;  // as given: one value (batch), two (image) or one per -1 (dims)
  std::string input_format;                 // NCHW, NHWC or ND
};

struct GearOptionText {
  std::string input_shape, dynamic_batch_size, dynamic_image_size, dynamic_dims, input_format;
};

// GE's upper bound on the number of gears (E10036; the reference fills GE's code gap with the docs' limit).
inline constexpr size_t kMaxGears = 100;

// The V rules: syntax, mutual exclusion (E10009), --input_shape required (E10004), values (E10002, E10003,
// E10011-E10014), batch (E10012, E10018, E10031), image (E10003, E10019, E10020), dims (E10001, E10058), and
// the gear-set rules that need no model (E10035 fewer than 2, E10036 more than 100, E10037 unequal lengths,
// E10038 negative, E10039 duplicates). kind stays kNone when no gear option is set.
GS_SDK_API Status parse_gear_options(const GearOptionText& text, GearRequest* out);

// GE's distribution: walking the inputs in user order with a cursor, an input with k -1 dims takes the whole
// gear when the gear has k values, else the next k values (E10045 past the end, E10046 a gear shorter than
// k). Result: per gear, per input, the static dims.
GS_SDK_API Status distribute_gears(const GearRequest& request,
                                   std::vector<std::vector<std::vector<int64_t>>>* per_gear);

GS_SDK_API const char* gear_kind_name(GearKind kind);  // FIXED, DYNAMIC_BATCH, DYNAMIC_IMAGE, DYNAMIC_DIMS

}  // namespace graphsplit::sdk
