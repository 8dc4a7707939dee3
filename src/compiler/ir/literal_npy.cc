// See literal_npy.h.
#include "compiler/ir/literal_npy.h"

namespace detrain::ir {

ElementType ElementTypeFromNpy(NpyDtype d) {
  switch (d) {
    case NpyDtype::kBool:
      return ElementType::kPred;
    case NpyDtype::kF32:
      return ElementType::kF32;
    case NpyDtype::kS32:
      return ElementType::kS32;
    case NpyDtype::kU32:
      return ElementType::kU32;
    case NpyDtype::kS64:
      return ElementType::kS64;
    case NpyDtype::kU64:
      return ElementType::kU64;
  }
  return ElementType::kF32;
}

NpyDtype NpyFromElementType(ElementType t) {
  switch (t) {
    case ElementType::kPred:
      return NpyDtype::kBool;
    case ElementType::kF32:
      return NpyDtype::kF32;
    case ElementType::kS32:
      return NpyDtype::kS32;
    case ElementType::kU32:
      return NpyDtype::kU32;
    case ElementType::kS64:
      return NpyDtype::kS64;
    case ElementType::kU64:
      return NpyDtype::kU64;
  }
  return NpyDtype::kF32;
}

Result<Literal> LiteralFromNpy(const NpyArray& array) {
  Literal lit(Shape(ElementTypeFromNpy(array.dtype), array.shape));
  if (lit.bytes().size() != array.data.size())
    return InvalidArgument(".npy data size does not match its shape");
  if (array.dtype == NpyDtype::kBool) {
    for (char c : array.data) {
      if (c != 0 && c != 1)
        return InvalidArgument(".npy bool array holds a byte other than 0 or 1");
    }
  }
  lit.mutable_bytes() = array.data;
  return lit;
}

NpyArray LiteralToNpy(const Literal& literal) {
  NpyArray array;
  array.dtype = NpyFromElementType(literal.shape().type());
  array.shape = literal.shape().dims();
  array.data = literal.bytes();
  return array;
}

}  // namespace detrain::ir
