// See types.h.
#include "frontend/types.h"

#include <algorithm>

namespace detrain::frontend {

ir::ElementType ToElementType(DType t) {
  switch (t) {
    case DType::kF32:
      return ir::ElementType::kF32;
    case DType::kS32:
      return ir::ElementType::kS32;
    case DType::kPred:
      return ir::ElementType::kPred;
  }
  return ir::ElementType::kF32;
}

std::optional<DType> DTypeFromElementType(ir::ElementType t) {
  for (DType d : {DType::kF32, DType::kS32, DType::kPred}) {
    if (ToElementType(d) == t) return d;
  }
  return std::nullopt;
}

const char* DTypeName(DType t) { return ir::ElementTypeName(ToElementType(t)).data(); }

bool ParseDType(const std::string& name, DType* out) {
  std::optional<ir::ElementType> t = ir::ElementTypeFromName(name);
  std::optional<DType> d = t ? DTypeFromElementType(*t) : std::nullopt;
  if (!d) return false;
  *out = *d;
  return true;
}

std::string Type::ToString() const {
  if (kind == ValueKind::kKey) return "key";
  if (kind == ValueKind::kLiteral) return "number";
  std::string s = DTypeName(dtype);
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ',';
    s += dims[i].ToString();
  }
  s += ']';
  return s;
}

bool BroadcastDims(const std::vector<DimValue>& a, const std::vector<DimValue>& b,
                   std::vector<DimValue>* out, std::string* why) {
  size_t n = std::max(a.size(), b.size());
  std::vector<DimValue> r(n);
  for (size_t i = 0; i < n; ++i) {
    // i counts from the right.
    bool has_a = i < a.size(), has_b = i < b.size();
    const DimValue* da = has_a ? &a[a.size() - 1 - i] : nullptr;
    const DimValue* db = has_b ? &b[b.size() - 1 - i] : nullptr;
    DimValue& d = r[n - 1 - i];
    if (!da)
      d = *db;
    else if (!db)
      d = *da;
    else if (*da == *db)
      d = *da;
    else if (da->size == 1)
      d = *db;
    else if (db->size == 1)
      d = *da;
    else {
      *why = "dimensions " + da->ToString() + " and " + db->ToString() + " cannot be broadcast";
      return false;
    }
  }
  *out = std::move(r);
  return true;
}

}  // namespace detrain::frontend
