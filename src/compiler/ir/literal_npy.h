// Conversion between IR literals and .npy arrays (base/npy.h): pred <-> |b1, s32 <-> <i4,
// u32 <-> <u4, s64 <-> <i8, u64 <-> <u8, f32 <-> <f4. Bytes are copied unchanged (NaN payloads
// included); a |b1 byte other than 0 or 1 is rejected.
//
// Thread safety: pure functions.
#ifndef DETRAIN_COMPILER_IR_LITERAL_NPY_H_
#define DETRAIN_COMPILER_IR_LITERAL_NPY_H_

#include "base/npy.h"
#include "compiler/ir/literal.h"

namespace detrain::ir {

// The one mapping between the two element-type vocabularies (a bijection: base/npy.h lists
// exactly the IR's types).
ElementType ElementTypeFromNpy(NpyDtype dtype);
NpyDtype NpyFromElementType(ElementType type);

Result<Literal> LiteralFromNpy(const NpyArray& array);
// `literal` must be an array (not a tuple).
NpyArray LiteralToNpy(const Literal& literal);

}  // namespace detrain::ir

#endif  // DETRAIN_COMPILER_IR_LITERAL_NPY_H_
