// See npz.h.
#include "base/npz.h"

#include "base/suggest.h"

namespace detrain {
namespace {

constexpr std::string_view kSuffix = ".npy";

std::string ArrayName(const std::string& member) {
  bool npy = member.size() > kSuffix.size() &&
             member.compare(member.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0;
  return npy ? member.substr(0, member.size() - kSuffix.size()) : member;
}

Result<NpyArray> ParseMember(std::string_view bytes, const ZipEntry& entry,
                             const std::string& array) {
  Result<std::string> data = ExtractZipEntry(bytes, entry);
  const std::string where = "array '" + PrintableName(array) + "'";
  if (!data.ok()) return data.status().WithContext(where);
  Result<NpyArray> a = ParseNpy(std::move(*data));
  if (!a.ok()) return a.status().WithContext(where + " (" + PrintableName(entry.name) + ")");
  return a;
}

}  // namespace

Result<std::map<std::string, NpyArray>> ParseNpz(std::string_view bytes,
                                                 const std::vector<std::string>& names,
                                                 uint64_t max_total_size) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ZipEntry> entries, ReadZipDirectory(bytes, max_total_size));
  std::vector<const ZipEntry*> members;
  for (const std::string& name : names) {
    const ZipEntry* found = nullptr;
    for (const std::string& member : {name, name + std::string(kSuffix)}) {
      for (const ZipEntry& e : entries) {
        if (found == nullptr && e.name == member) found = &e;
      }
    }
    if (found == nullptr) {
      std::vector<std::string> held;
      std::string list;
      for (const ZipEntry& e : entries) {
        held.push_back(ArrayName(e.name));
        list += (list.empty() ? "" : ", ") + PrintableName(held.back());
      }
      return NotFound("no array '" + PrintableName(name) + "'" + DidYouMean(name, held) +
                      (held.empty() ? "; the archive is empty" : "; the archive holds: " + list));
    }
    members.push_back(found);
  }
  // Everything to extract is accounted before the first byte is inflated (a member asked for
  // under two names is extracted, and counted, twice).
  DETRAIN_RETURN_IF_ERROR(CheckExtractionBudget(members));
  std::map<std::string, NpyArray> out;
  for (size_t i = 0; i < names.size(); ++i) {
    DETRAIN_ASSIGN_OR_RETURN(out[names[i]], ParseMember(bytes, *members[i], names[i]));
  }
  return out;
}

Result<std::map<std::string, NpyArray>> ParseNpz(std::string_view bytes, uint64_t max_total_size) {
  DETRAIN_ASSIGN_OR_RETURN(std::vector<ZipEntry> entries, ReadZipDirectory(bytes, max_total_size));
  std::map<std::string, const ZipEntry*> by_array;
  for (const ZipEntry& e : entries) {
    const std::string array = ArrayName(e.name);
    if (!by_array.emplace(array, &e).second) {
      const std::string n = PrintableName(array);
      return DataLoss("members '" + n + "' and '" + n + ".npy' both name array '" + n + "'");
    }
  }
  std::vector<const ZipEntry*> members;
  for (const ZipEntry& e : entries) members.push_back(&e);
  DETRAIN_RETURN_IF_ERROR(CheckExtractionBudget(members));
  std::map<std::string, NpyArray> out;
  for (const auto& [array, e] : by_array) {
    DETRAIN_ASSIGN_OR_RETURN(out[array], ParseMember(bytes, *e, array));
  }
  return out;
}

}  // namespace detrain
