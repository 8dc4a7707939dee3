// See attributes.h.
#include "compiler/ir/attributes.h"

#include "compiler/ir/shape.h"

namespace detrain::ir {
namespace {

constexpr std::string_view kDirectionNames[] = {
#define DETRAIN_X(e, s) s,
    DETRAIN_DIRECTIONS(DETRAIN_X)
#undef DETRAIN_X
};

std::string JoinX(const std::vector<WindowDim>& window, int64_t WindowDim::*field) {
  std::string s;
  for (size_t i = 0; i < window.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(window[i].*field);
  }
  return s;
}

bool AllEqual(const std::vector<WindowDim>& window, int64_t WindowDim::*field, int64_t v) {
  for (const WindowDim& w : window) {
    if (w.*field != v) return false;
  }
  return true;
}

std::string FormatWindow(const std::vector<WindowDim>& window) {
  std::string s = "{size=" + JoinX(window, &WindowDim::size);
  if (!AllEqual(window, &WindowDim::stride, 1)) s += " stride=" + JoinX(window, &WindowDim::stride);
  if (!AllEqual(window, &WindowDim::pad_lo, 0) || !AllEqual(window, &WindowDim::pad_hi, 0)) {
    s += " pad=";
    for (size_t i = 0; i < window.size(); ++i) {
      if (i) s += 'x';
      s += std::to_string(window[i].pad_lo) + "_" + std::to_string(window[i].pad_hi);
    }
  }
  if (!AllEqual(window, &WindowDim::lhs_dilate, 1)) {
    s += " lhs_dilate=" + JoinX(window, &WindowDim::lhs_dilate);
  }
  if (!AllEqual(window, &WindowDim::rhs_dilate, 1)) {
    s += " rhs_dilate=" + JoinX(window, &WindowDim::rhs_dilate);
  }
  return s + "}";
}

// Finds `c` in `labels` exactly once; -1 otherwise.
int64_t FindLabel(std::string_view labels, char c) {
  size_t pos = labels.find(c);
  if (pos == std::string_view::npos || labels.find(c, pos + 1) != std::string_view::npos) return -1;
  return static_cast<int64_t>(pos);
}

// Decodes one part of dim_labels: the positions of the two letters and of digits 0..n-1.
bool DecodePart(std::string_view part, char a, char b, int64_t* pa, int64_t* pb,
                std::vector<int64_t>* spatial) {
  *pa = FindLabel(part, a);
  *pb = FindLabel(part, b);
  if (*pa < 0 || *pb < 0) return false;
  size_t n = part.size() - 2;
  spatial->assign(n, -1);
  for (size_t d = 0; d < n; ++d) {
    int64_t pos = FindLabel(part, static_cast<char>('0' + d));
    if (pos < 0 || d > 9) return false;
    (*spatial)[d] = pos;
  }
  return true;
}

}  // namespace

std::string_view DirectionName(Direction d) { return kDirectionNames[static_cast<int>(d)]; }

std::optional<Direction> DirectionFromName(std::string_view name) {
  for (int i = 0; i < 6; ++i) {
    if (kDirectionNames[i] == name) return static_cast<Direction>(i);
  }
  return std::nullopt;
}

Result<ConvDims> ParseDimLabels(std::string_view labels) {
  size_t us = labels.find('_');
  size_t arrow = labels.find("->");
  auto bad = [&] {
    return InvalidArgument("dim_labels '" + std::string(labels) +
                           "' is not of the form <input>_<kernel>-><output>, e.g. b01f_01io->b01f");
  };
  if (us == std::string_view::npos || arrow == std::string_view::npos || arrow < us) return bad();
  ConvDims d;
  std::string_view in = labels.substr(0, us);
  std::string_view k = labels.substr(us + 1, arrow - us - 1);
  std::string_view out = labels.substr(arrow + 2);
  if (in.size() != k.size() || in.size() != out.size() || in.size() < 2) return bad();
  if (!DecodePart(in, 'b', 'f', &d.in_batch, &d.in_feature, &d.in_spatial) ||
      !DecodePart(k, 'i', 'o', &d.k_in, &d.k_out, &d.k_spatial) ||
      !DecodePart(out, 'b', 'f', &d.out_batch, &d.out_feature, &d.out_spatial)) {
    return bad();
  }
  return d;
}

bool IsFusionKind(std::string_view kind) {
  return kind == "kLoop" || kind == "kInput" || kind == "kOutput" || kind == "kCustom";
}

bool IsDefaultAttrValue(Attr attr, const AttrValue& value) {
  switch (AttrKindOf(attr)) {
    case AttrKind::kInts:
      return value.ints.empty();
    case AttrKind::kIntLists:
      return value.lists.empty();
    case AttrKind::kInt:
    case AttrKind::kString:
    case AttrKind::kDirection:
    case AttrKind::kComputation:
    case AttrKind::kSlice:
    case AttrKind::kPadding:
    case AttrKind::kWindow:
    case AttrKind::kDimLabels:
    case AttrKind::kFusionKind:
      return false;
  }
  return false;
}

std::string FormatAttrValue(Attr attr, const AttrValue& v,
                            const std::function<std::string(const Computation*)>& comp_name) {
  switch (AttrKindOf(attr)) {
    case AttrKind::kInt:
      return std::to_string(v.i);
    case AttrKind::kInts:
      return IntListToString(v.ints);
    case AttrKind::kIntLists: {
      std::string s = "{";
      for (size_t i = 0; i < v.lists.size(); ++i) s += (i ? "," : "") + IntListToString(v.lists[i]);
      return s + "}";
    }
    case AttrKind::kString:
      return "\"" + v.s + "\"";  // the parser admits no quotes or escapes
    case AttrKind::kDimLabels:
    case AttrKind::kFusionKind:
      return v.s;
    case AttrKind::kDirection:
      return std::string(DirectionName(v.direction));
    case AttrKind::kComputation:
      return comp_name(v.computation);
    case AttrKind::kSlice: {
      std::string s = "{";
      for (size_t i = 0; i < v.slice.size(); ++i) {
        const SliceDim& d = v.slice[i];
        s += (i ? ", [" : "[") + std::to_string(d.start) + ":" + std::to_string(d.limit);
        if (d.stride != 1) s += ":" + std::to_string(d.stride);
        s += "]";
      }
      return s + "}";
    }
    case AttrKind::kPadding: {
      std::string s;
      for (size_t i = 0; i < v.padding.size(); ++i) {
        const PadDim& d = v.padding[i];
        s += (i ? "x" : "") + std::to_string(d.lo) + "_" + std::to_string(d.hi);
        if (d.interior != 0) s += "_" + std::to_string(d.interior);
      }
      return s;
    }
    case AttrKind::kWindow:
      return FormatWindow(v.window);
  }
  return "";
}

}  // namespace detrain::ir
