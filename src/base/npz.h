// NumPy .npz archives (numpy.savez, numpy.savez_compressed): a zip archive (base/zip.h, which
// treats it as hostile input) of .npy members (base/npy.h), one per array, named
// "<array>.npy". Arrays are looked up as numpy's NpzFile does: the member of exactly that name,
// else "<name>.npy"; only the arrays asked for are extracted and parsed.
//
// Memory: the members to extract are accounted against the memory budget (base/budget.h) from
// their declared sizes before any is extracted (zip.h, CheckExtractionBudget), and each array is
// parsed in place, so an array costs its data once, not twice.
//
// Errors name the array (the caller adds the file): NotFound for an array the archive does not
// hold (listing those it does), DataLoss or InvalidArgument from the zip and .npy readers and
// the budget.
//
// Thread safety: pure functions of the bytes.
#ifndef DETRAIN_BASE_NPZ_H_
#define DETRAIN_BASE_NPZ_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/npy.h"
#include "base/status.h"
#include "base/zip.h"

namespace detrain {

// The arrays named in `names`, keyed by those names.
Result<std::map<std::string, NpyArray>> ParseNpz(std::string_view bytes,
                                                 const std::vector<std::string>& names,
                                                 uint64_t max_total_size = kZipMaxTotalSize);

// Every member, keyed by its array name (the member name less a trailing ".npy").
Result<std::map<std::string, NpyArray>> ParseNpz(std::string_view bytes,
                                                 uint64_t max_total_size = kZipMaxTotalSize);

}  // namespace detrain

#endif  // DETRAIN_BASE_NPZ_H_
