// libFuzzer harness: the bundle verifier as a whole (verify::VerifyBundle) on mutations of the
// committed golden bundle audit-bundles/v1/tiny. The pristine bundle is copied to a scratch
// directory once; each input edits one of its files, the verifier runs its integrity and
// recompile phases (no replay, so an execution takes milliseconds, not seconds), and the file is
// restored. The input:
//   byte 0     which file (index into the bundle's files in sorted order, modulo their number)
//   byte 1     how (modulo 4): 0 replace the file by the payload; 1 overwrite the payload at the
//              offset; 2 truncate at the offset (payload unused); 3 insert the payload there
//   bytes 2-5  the offset, little-endian, modulo (file size + 1)
//   the rest   the payload
// Whatever the edit, VerifyBundle reports an outcome; it never crashes. The unedited bundle
// must verify (checked once at start-up: otherwise every finding would be noise).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "attest/verify/verifier.h"
#include "base/budget.h"
#include "fuzz_util.h"

namespace {

struct PristineFile {
  std::string path;  // in the scratch copy
  std::string bytes;
};

std::vector<PristineFile>& Files() {
  static std::vector<PristineFile> files;
  return files;
}

std::string BundleDir() { return detrain::fuzz::ScratchDir() + "/tiny"; }

detrain::verify::VerifyReport Verify() {
  detrain::verify::VerifyOptions options;
  options.bundle = BundleDir();
  options.replay = false;
  options.recompile = true;
  options.integrity_threads = 1;
  return detrain::verify::VerifyBundle(options);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  namespace fs = std::filesystem;
  detrain::SetMemoryBudget({int64_t{256} << 20, int64_t{1} << 30});
  const fs::path golden = fs::path(DETRAIN_SOURCE_DIR) / "audit-bundles/v1/tiny";
  fs::copy(golden, BundleDir(), fs::copy_options::recursive);
  for (const auto& entry : fs::recursive_directory_iterator(BundleDir())) {
    if (!entry.is_regular_file()) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    Files().push_back({entry.path().string(), bytes.str()});
  }
  std::sort(Files().begin(), Files().end(),
            [](const PristineFile& a, const PristineFile& b) { return a.path < b.path; });
  detrain::verify::VerifyReport report = Verify();
  if (Files().empty() || report.outcome != detrain::verify::Outcome::kVerified) {
    std::fprintf(stderr, "bundle_fuzz: the pristine bundle does not verify: %s\n",
                 report.message.c_str());
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 6) return 0;
  const PristineFile& file = Files()[data[0] % Files().size()];
  const uint32_t raw_offset = static_cast<uint32_t>(data[2]) | static_cast<uint32_t>(data[3]) << 8 |
                              static_cast<uint32_t>(data[4]) << 16 |
                              static_cast<uint32_t>(data[5]) << 24;
  const size_t offset = raw_offset % (file.bytes.size() + 1);
  std::string_view payload = detrain::fuzz::AsText(data + 6, size - 6);
  std::string edited = file.bytes;
  switch (data[1] % 4) {
    case 0:
      edited = std::string(payload);
      break;
    case 1:
      edited.resize(std::max(edited.size(), offset + payload.size()));
      edited.replace(offset, payload.size(), payload);
      break;
    case 2:
      edited.resize(offset);
      break;
    case 3:
      edited.insert(offset, payload);
      break;
  }
  detrain::fuzz::WriteBytes(file.path, edited);
  (void)Verify();
  detrain::fuzz::WriteBytes(file.path, file.bytes);
  return 0;
}
