// libFuzzer harness: bundle archives (bundle::UnpackBundle, evidence/bundle/archive.h). The input
// is the archive. Properties: an accepted archive unpacks to exactly as many regular files as it
// reports, all inside the destination (ListFiles finds no link or special file there), and
// nothing is ever written outside it; a refused one leaves no destination behind.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "base/fs.h"
#include "evidence/bundle/archive.h"
#include "fuzz_util.h"

using detrain::fuzz::PropertyFailed;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = detrain::fuzz::ScratchDir();
  const std::string archive = dir + "/in.tar", out = dir + "/out/bundle";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  detrain::fuzz::WriteBytes(archive, bytes);
  std::error_code ec;
  std::filesystem::remove_all(dir + "/out", ec);
  std::filesystem::create_directories(dir + "/out", ec);
  (void)detrain::bundle::IsArchive(archive);
  auto files = detrain::bundle::UnpackBundle(archive, out);
  if (files.ok()) {
    auto listed = detrain::ListFiles(out);
    if (!listed.ok()) PropertyFailed("an accepted archive unpacked to something unlistable", bytes);
    if (listed->size() != *files) PropertyFailed("unpacked file count differs", bytes);
  } else if (detrain::PathExists(out)) {
    PropertyFailed("a refused archive left its destination", bytes);
  }
  // Nothing but in.tar and out/ in the scratch directory.
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != "in.tar" && name != "out") PropertyFailed("wrote outside the destination", bytes);
  }
  for (const auto& e : std::filesystem::directory_iterator(dir + "/out", ec)) {
    if (e.path().filename() != "bundle") PropertyFailed("left a temporary behind", bytes);
  }
  return 0;
}
