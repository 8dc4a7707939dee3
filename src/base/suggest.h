// "Did you mean" suggestions for error messages: the closest of a list of names by edit
// distance (insertions, deletions and substitutions of bytes).
//
// Thread safety: pure functions. Determinism: ties go to the earliest candidate.
#ifndef DETRAIN_BASE_SUGGEST_H_
#define DETRAIN_BASE_SUGGEST_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace detrain {

size_t EditDistance(std::string_view a, std::string_view b);

// " (did you mean 'x'?)" for the first candidate closest to `name` within `max_distance` edits,
// or "" when none is that close.
std::string DidYouMean(std::string_view name, const std::vector<std::string>& candidates,
                       size_t max_distance = 2);

}  // namespace detrain

#endif  // DETRAIN_BASE_SUGGEST_H_
