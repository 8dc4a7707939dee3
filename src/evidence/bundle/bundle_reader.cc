// See bundle_reader.h.
#include "evidence/bundle/bundle_reader.h"

#include "attest/canonical_json.h"
#include "base/file_io.h"
#include "base/fs.h"

namespace detrain::bundle {

Result<std::vector<std::string>> CheckBundleTree(const std::string& dir) {
  if (!IsDirectory(dir)) return InvalidArgument(dir + ": no such bundle directory");
  Result<std::vector<std::string>> files = ListFiles(dir);
  if (!files.ok()) {
    return InvalidArgument(dir + ": " + std::string(files.status().message()) +
                           "; a bundle holds regular files and directories only");
  }
  return files;
}

Result<std::string> ReadBundleFile(const std::string& dir, std::string_view relative,
                                   uint64_t limit) {
  return ReadFileBelow(dir, relative, limit);
}

Result<uint64_t> BundleFileSize(const std::string& dir, std::string_view relative) {
  return FileSizeBelow(dir, relative);
}

bool BundleHasFile(const std::string& dir, std::string_view relative) {
  return FileSizeBelow(dir, relative).ok();
}

Result<SafetensorsFile> ReadBundleSafetensors(const std::string& dir, std::string_view relative) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFileBelow(dir, relative, kMaxTensorFileBytes));
  Result<SafetensorsFile> f = ParseSafetensors(bytes);
  if (!f.ok()) {
    return Status(f.status().code(),
                  std::string(relative) + ": " + std::string(f.status().message()));
  }
  return f;
}

Result<nlohmann::json> ReadBundleJson(const std::string& dir, std::string_view relative) {
  DETRAIN_ASSIGN_OR_RETURN(std::string text, ReadFileBelow(dir, relative, kMaxJsonFileBytes));
  return attest::ParseJson(text);
}

}  // namespace detrain::bundle
