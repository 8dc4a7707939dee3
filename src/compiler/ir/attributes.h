// Attribute values of instructions (the attribute names and kinds are in attrs.def) and their
// canonical text. Conventions follow XLA's HLO text: `dimensions={0,1}`, `direction=EQ`,
// `slice={[0:2], [1:5:2]}`, `padding=0_1x2_2_1` (low_high[_interior] per dimension),
// `window={size=2x2 stride=2x2 pad=0_0x1_1 lhs_dilate=1x1 rhs_dilate=1x1}` (fields equal to
// their default are omitted), `dim_labels=b01f_01io->b01f`, `replica_groups={{0,1},{2,3}}`,
// `custom_call_target="detrain.threefry2x32"`, `to_apply=<computation name>`.
//
// Thread safety: values only.
#ifndef DETRAIN_COMPILER_IR_ATTRIBUTES_H_
#define DETRAIN_COMPILER_IR_ATTRIBUTES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "compiler/ir/opcode.h"

namespace detrain::ir {

class Computation;

struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_lo = 0;
  int64_t pad_hi = 0;
  int64_t lhs_dilate = 1;  // "base dilation": holes between input elements
  int64_t rhs_dilate = 1;  // "window dilation": holes between window taps
  friend bool operator==(const WindowDim&, const WindowDim&) = default;
};

struct SliceDim {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  friend bool operator==(const SliceDim&, const SliceDim&) = default;
};

struct PadDim {
  int64_t lo = 0;
  int64_t hi = 0;
  int64_t interior = 0;
  friend bool operator==(const PadDim&, const PadDim&) = default;
};

// Direction is declared in op_enums.h (via opcode.h).
std::string_view DirectionName(Direction d);
std::optional<Direction> DirectionFromName(std::string_view name);

// Convolution dimension numbers, decoded from dim_labels such as `b01f_01io->b01f`
// (b batch, f feature, i/o kernel input/output feature, digits spatial dimensions in order).
struct ConvDims {
  int64_t in_batch = 0, in_feature = 0;
  std::vector<int64_t> in_spatial;
  int64_t k_in = 0, k_out = 0;
  std::vector<int64_t> k_spatial;
  int64_t out_batch = 0, out_feature = 0;
  std::vector<int64_t> out_spatial;
};
Result<ConvDims> ParseDimLabels(std::string_view labels);

// One attribute's value; which field is meaningful depends on AttrKindOf(attr).
struct AttrValue {
  int64_t i = 0;                             // kInt
  std::vector<int64_t> ints;                 // kInts
  std::vector<std::vector<int64_t>> lists;   // kIntLists
  std::string s;                             // kString, kDimLabels
  Direction direction = Direction::kEq;      // kDirection
  const Computation* computation = nullptr;  // kComputation
  std::vector<SliceDim> slice;               // kSlice
  std::vector<PadDim> padding;               // kPadding
  std::vector<WindowDim> window;             // kWindow
};

// Ordered by Attr, which attrs.def keeps in alphabetical order of spelling.
using AttrMap = std::map<Attr, AttrValue>;

// The fusion kinds, spelled as XLA prints them: kLoop (elementwise), kInput (a reduction with
// its elementwise producers), kOutput (a reduction or dot with its elementwise consumers),
// kCustom (a backend's own fusion, e.g. XLA CPU's XNNPACK ones). The kind names how XLA would
// run it; the value is always `calls` applied to the operands.
bool IsFusionKind(std::string_view kind);

// True when `value` equals the default of an optional attribute (then it is not printed).
bool IsDefaultAttrValue(Attr attr, const AttrValue& value);

// Canonical text of the value (what follows `name=`). `computation_name` maps a computation to
// its canonical name.
std::string FormatAttrValue(Attr attr, const AttrValue& value,
                            const std::function<std::string(const Computation*)>& computation_name);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_ATTRIBUTES_H_
