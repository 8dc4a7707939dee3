// The one set of rules by which an untrusted bundle directory is read. Every reader of a bundle —
// verify, inspect, diff, the HTML report, signing — opens its files through these functions:
//
//   - the tree holds regular files and directories only: a symbolic link anywhere below the
//     bundle's directory, a FIFO, a device or a socket makes the bundle unreadable, by name
//     (CheckBundleTree), and is never followed or opened — also one put there after the tree
//     was checked (the reads open one path component at a time without following links:
//     base/file_io.h ReadFileBelow);
//   - paths are relative to the bundle, without '.', '..' or empty components;
//   - each kind of file is read only up to its limit below, before anything else is allocated.
//
// The bundle's own directory may be named through a link: the auditor named it.
//
// Thread safety: pure functions of the file system.
#ifndef DETRAIN_EVIDENCE_BUNDLE_BUNDLE_READER_H_
#define DETRAIN_EVIDENCE_BUNDLE_BUNDLE_READER_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "base/safetensors.h"
#include "base/status.h"

namespace detrain::bundle {

// Largest file of each kind a reader reads (a bundle that needs more was not written by detrain).
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{256} << 20;   // manifest, data, environment
inline constexpr uint64_t kMaxLogFileBytes = uint64_t{4} << 30;      // steps.jsonl, lineage.jsonl
inline constexpr uint64_t kMaxStageFileBytes = uint64_t{1} << 30;    // stages/, program/
inline constexpr uint64_t kMaxTensorFileBytes = uint64_t{64} << 30;  // safetensors, data/files

// Every regular file of the bundle (relative, sorted); an error naming the first link or special
// file, e.g. "B: stages/01.source.hlo: not a regular file or directory (a symbolic link); a
// bundle holds regular files and directories only".
Result<std::vector<std::string>> CheckBundleTree(const std::string& dir);

// `relative` in the bundle at `dir`, read under the rules above.
Result<std::string> ReadBundleFile(const std::string& dir, std::string_view relative,
                                   uint64_t limit);
Result<uint64_t> BundleFileSize(const std::string& dir, std::string_view relative);
// A regular file at `relative`, reached without links.
bool BundleHasFile(const std::string& dir, std::string_view relative);
// A safetensors file (checkpoint, final weights, split), parsed as hostile input.
Result<SafetensorsFile> ReadBundleSafetensors(const std::string& dir, std::string_view relative);
// A JSON file (attest::ParseJson: depth and size bounded), at most kMaxJsonFileBytes.
Result<nlohmann::json> ReadBundleJson(const std::string& dir, std::string_view relative);

}  // namespace detrain::bundle

#endif  // DETRAIN_EVIDENCE_BUNDLE_BUNDLE_READER_H_
