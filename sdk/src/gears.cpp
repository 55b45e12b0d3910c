#include "graphsplit/sdk/gears.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "graphsplit/sdk/strings.h"

namespace graphsplit::sdk {
namespace {

Status err(const std::string& code, const std::string& what) {
  return Status::invalid_argument(code + ": " + what);
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A gear value: digits only (GE asserts on anything else inside the pass; atc refuses it first).
Status gear_value(const std::string& option, const std::string& token, int64_t* v) {
  const std::string t = trim(token);
  if (t.empty() || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (!t.empty() && t[0] == '-' && t.size() > 1 &&
        std::all_of(t.begin() + 1, t.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return err("E10038", option + " value '" + t + "' is negative; gear values must be >= 0");
    }
    return err("E10003", option + " value '" + t + "' is not a non-negative integer");
  }
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v);
  if (ec != std::errc()) return err("E10013", option + " value '" + t + "' is out of the int64 range");
  return Status::ok();
}

Status parse_input_shape(const std::string& text, bool gears, std::vector<GearInput>* out) {
  for (const std::string& raw : split(text, ';')) {
    if (raw.empty()) continue;
    const size_t colon = raw.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return err("E10002", "--input_shape entry '" + raw + "' is not name:dims (e.g. x:1,3,224,224)");
    }
    GearInput in;
    in.name = raw.substr(0, colon);
    const std::string dims = raw.substr(colon + 1);
    if (!dims.empty()) {
      for (const std::string& tok : split(dims, ',')) {
        if (tok.find('~') != std::string::npos) {
          if (gears) return err("E10040", "--input_shape range '" + tok + "' cannot be combined with gears");
          return err("E10002", "--input_shape ranges ('" + tok + "') are not supported");
        }
        if (tok.find('.') != std::string::npos || tok.empty()) {
          return err("E10002",
                     "--input_shape dimension '" + tok + "' of input '" + in.name + "' is not an integer");
        }
        const bool starts_numeric = (tok[0] >= '0' && tok[0] <= '9') || (tok[0] == '-' && tok.size() > 1);
        if (!starts_numeric) {
          return err("E10014",
                     "--input_shape dimension '" + tok + "' of input '" + in.name + "' is not a number");
        }
        int64_t v = 0;
        auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
        if (ec == std::errc::result_out_of_range)
          return err("E10013", "--input_shape dimension '" + tok + "' is out of the int64 range");
        if (ec != std::errc() || p != tok.data() + tok.size()) {
          return err("E10002",
                     "--input_shape dimension '" + tok + "' of input '" + in.name + "' is not an integer");
        }
        if (!gears && v <= 0 && v != -1) {
          return err("E10011",
                     "--input_shape dimension " + tok + " of input '" + in.name + "' must be positive or -1");
        }
        in.dims.push_back(v);
      }
    }
    for (const GearInput& prev : *out) {
      if (prev.name == in.name) return err("E10002", "--input_shape names input '" + in.name + "' twice");
    }
    out->push_back(std::move(in));
  }
  return Status::ok();
}

size_t unknown_count(const GearInput& in) {
  return static_cast<size_t>(std::count(in.dims.begin(), in.dims.end(), -1));
}

Status check_gear_set(const std::string& option, const std::vector<std::vector<int64_t>>& gears) {
  if (gears.size() < 2) {
    return err("E10035",
               option + " gives " + std::to_string(gears.size()) + " gear(s); at least 2 are needed");
  }
  if (gears.size() > kMaxGears) {
    return err("E10036", option + " gives " + std::to_string(gears.size()) + " gears; at most " +
                             std::to_string(kMaxGears) + " are allowed");
  }
  for (const auto& g : gears) {
    if (g.size() != gears.front().size()) {
      return err("E10037", option + ": every gear must have the same number of values (" +
                               std::to_string(gears.front().size()) + " and " + std::to_string(g.size()) +
                               ")");
    }
  }
  std::set<std::vector<int64_t>> seen;
  for (const auto& g : gears) {
    if (!seen.insert(g).second) {
      std::string shown;
      for (int64_t v : g) shown += (shown.empty() ? "" : ",") + std::to_string(v);
      return err("E10039", option + " lists the gear " + shown + " twice");
    }
  }
  return Status::ok();
}

}  // namespace

const char* gear_kind_name(GearKind kind) {
  switch (kind) {
    case GearKind::kBatch:
      return "DYNAMIC_BATCH";
    case GearKind::kImage:
      return "DYNAMIC_IMAGE";
    case GearKind::kDims:
      return "DYNAMIC_DIMS";
    case GearKind::kNone:
      break;
  }
  return "FIXED";
}

namespace {

// --dynamic_batch_size: one value per gear; only dimension 0 of an input may be -1 (E10018, E10031).
Status parse_batch_gears(const GearOptionText& t, GearRequest* out) {
  out->kind = GearKind::kBatch;
  std::string text = t.dynamic_batch_size;
  if (text.find_first_not_of("0123456789,") != std::string::npos) {
    const size_t bad = text.find_first_not_of("0123456789,");
    if (text[bad] == '-') {
      int64_t v = 0;
      for (const std::string& tok : split(text, ','))
        GS_RETURN_IF_ERROR(gear_value("--dynamic_batch_size", tok, &v));
    }
    return err("E10003", "--dynamic_batch_size='" + text + "' may hold only digits and ','");
  }
  if (!text.empty() && text.back() == ',') text.pop_back();
  for (const std::string& tok : split(text, ',')) {
    if (tok.empty()) continue;
    int64_t v = 0;
    GS_RETURN_IF_ERROR(gear_value("--dynamic_batch_size", tok, &v));
    out->gears.push_back({v});
  }
  bool any = false;
  for (const GearInput& in : out->inputs) {
    if (in.dims.empty() || in.dims[0] != -1) {
      if (unknown_count(in) > 0) {
        return err("E10018", "--input_shape of input '" + in.name +
                                 "': with --dynamic_batch_size only dimension 0 may be -1");
      }
      continue;
    }
    for (size_t d = 1; d < in.dims.size(); ++d) {
      if (in.dims[d] < 0) {
        return err("E10018", "--input_shape of input '" + in.name +
                                 "': with --dynamic_batch_size only dimension 0 may be -1");
      }
    }
    any = true;
  }
  if (!any) return err("E10031", "--dynamic_batch_size needs an --input_shape input whose dimension 0 is -1");
  return check_gear_set("--dynamic_batch_size", out->gears);
}

// --dynamic_image_size: "h,w;h,w"; only H and W of a 4-D NCHW/NHWC input may be -1 (E10019, E10020).
Status parse_image_gears(const GearOptionText& t, GearRequest* out) {
  out->kind = GearKind::kImage;
  if (t.input_format != "NCHW" && t.input_format != "NHWC") {
    return err("E10003",
               "--dynamic_image_size needs --input_format=NCHW or NHWC (got '" + t.input_format + "')");
  }
  std::string text = t.dynamic_image_size;
  if (text.find_first_not_of("0123456789,; -") != std::string::npos) {
    return err("E10003", "--dynamic_image_size='" + text + "' may hold only digits, ',', ';' and spaces");
  }
  if (!text.empty() && text.back() == ';') text.pop_back();
  for (const std::string& group : split(text, ';')) {
    if (trim(group).empty()) continue;
    std::vector<int64_t> gear;
    for (const std::string& tok : split(group, ',')) {
      int64_t v = 0;
      GS_RETURN_IF_ERROR(gear_value("--dynamic_image_size", tok, &v));
      gear.push_back(v);
    }
    if (gear.size() != 2) {
      return err("E10020",
                 "--dynamic_image_size group '" + group + "' must hold exactly 2 values (height,width)");
    }
    out->gears.push_back(gear);
  }
  const size_t h = t.input_format == "NCHW" ? 2 : 1, w = h + 1;
  bool any = false;
  for (const GearInput& in : out->inputs) {
    if (unknown_count(in) == 0) continue;
    const bool ok = in.dims.size() == 4 && unknown_count(in) == 2 && in.dims[h] == -1 && in.dims[w] == -1;
    if (!ok) {
      return err("E10019", "--input_shape of input '" + in.name +
                               "': with --dynamic_image_size only H and W of a "
                               "4-D " +
                               t.input_format + " input may be -1");
    }
    any = true;
  }
  if (!any) return err("E10019", "--dynamic_image_size needs an --input_shape input whose H and W are -1");
  return check_gear_set("--dynamic_image_size", out->gears);
}

// --dynamic_dims: one value per -1 of --input_shape in every gear (E10001, E10003, E10058).
Status parse_dims_gears(const GearOptionText& t, GearRequest* out) {
  out->kind = GearKind::kDims;
  std::string text = t.dynamic_dims;
  if (!text.empty() && text.back() == ';') text.pop_back();
  if (trim(text).empty()) return err("E10058", "--dynamic_dims is empty");
  size_t unknowns = 0;
  for (const GearInput& in : out->inputs) unknowns += unknown_count(in);
  if (unknowns == 0) return err("E10001", "--dynamic_dims needs at least one -1 in --input_shape");
  for (const std::string& group : split(text, ';')) {
    if (trim(group).empty()) continue;
    std::vector<int64_t> gear;
    for (const std::string& tok : split(group, ',')) {
      int64_t v = 0;
      const Status s = gear_value("--dynamic_dims", tok, &v);
      if (!s.is_ok() && s.message().rfind("E10003", 0) == 0)
        return err("E10001", "--dynamic_dims value '" + trim(tok) + "' is not a non-negative integer");
      GS_RETURN_IF_ERROR(s);
      gear.push_back(v);
    }
    if (gear.size() != unknowns) {
      return err("E10003", "--dynamic_dims gear '" + group + "' has " + std::to_string(gear.size()) +
                               " values but --input_shape has " + std::to_string(unknowns) +
                               " -1 dimensions");
    }
    out->gears.push_back(gear);
  }
  return check_gear_set("--dynamic_dims", out->gears);
}

}  // namespace

Status parse_gear_options(const GearOptionText& t, GearRequest* out) {
  *out = GearRequest{};
  int set = 0;
  set += !t.dynamic_batch_size.empty();
  set += !t.dynamic_image_size.empty();
  set += !t.dynamic_dims.empty();
  if (set > 1) {
    return err("E10009", "--dynamic_batch_size, --dynamic_image_size and --dynamic_dims exclude each other");
  }
  const bool gears = set == 1;
  if (!t.input_format.empty() && t.input_format != "NCHW" && t.input_format != "NHWC" &&
      t.input_format != "ND") {
    return err("E10003", "--input_format='" + t.input_format + "' is not NCHW, NHWC or ND");
  }
  out->input_format = t.input_format;
  if (gears && t.input_shape.empty()) {
    return err("E10004",
               "--input_shape is required with --dynamic_batch_size, --dynamic_image_size or "
               "--dynamic_dims");
  }
  if (!t.input_shape.empty()) GS_RETURN_IF_ERROR(parse_input_shape(t.input_shape, gears, &out->inputs));
  if (!gears) return Status::ok();

  if (!t.dynamic_batch_size.empty()) return parse_batch_gears(t, out);
  if (!t.dynamic_image_size.empty()) return parse_image_gears(t, out);
  return parse_dims_gears(t, out);
}

Status distribute_gears(const GearRequest& r, std::vector<std::vector<std::vector<int64_t>>>* per_gear) {
  per_gear->assign(r.gears.size(), {});
  for (size_t g = 0; g < r.gears.size(); ++g) {
    const std::vector<int64_t>& gear = r.gears[g];
    size_t cursor = 0;
    for (const GearInput& in : r.inputs) {
      const size_t k = unknown_count(in);
      std::vector<int64_t> dims = in.dims;
      if (k > 0) {
        std::vector<int64_t> values;
        if (gear.size() == k) {
          values = gear;
        } else if (gear.size() > k) {
          if (cursor + k > gear.size()) {
            return err("E10045", "gear " + std::to_string(g) + " has too few values for input '" + in.name +
                                     "' (it needs " + std::to_string(k) + " from position " +
                                     std::to_string(cursor) + ")");
          }
          values.assign(gear.begin() + static_cast<std::ptrdiff_t>(cursor),
                        gear.begin() + static_cast<std::ptrdiff_t>(cursor + k));
        } else {
          return err("E10046", "gear " + std::to_string(g) + " has " + std::to_string(gear.size()) +
                                   " values but input '" + in.name + "' has " + std::to_string(k) +
                                   " -1 dimensions");
        }
        size_t v = 0;
        for (int64_t& d : dims) {
          if (d == -1) d = values[v++];
        }
        cursor += k;
      }
      (*per_gear)[g].push_back(std::move(dims));
    }
  }
  return Status::ok();
}

}  // namespace graphsplit::sdk
