// detrain's op semantics in one include (docs/ir.md, DESIGN.md §2): the scalar rule of every
// elementwise op and conversion (scalar.h, convert.h) and every canonical evaluation order
// (orders.h). Header-only, host and CUDA device (nvcc and NVRTC); no allocation, no
// std::function, no containers, no exceptions. This directory is the only place an op's scalar
// meaning or a summation order is written; everything else calls it.
//
// Thread safety: pure functions. Determinism: results are functions of operand bits alone.
#ifndef DETRAIN_COMPILER_SEMANTICS_SEMANTICS_H_
#define DETRAIN_COMPILER_SEMANTICS_SEMANTICS_H_

#include "compiler/semantics/convert.h"
#include "compiler/semantics/element_traits.h"
#include "compiler/semantics/orders.h"
#include "compiler/semantics/scalar.h"

#endif  // DETRAIN_COMPILER_SEMANTICS_SEMANTICS_H_
