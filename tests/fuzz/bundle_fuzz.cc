// libFuzzer harness: the bundle verifier as a whole (verify::VerifyBundle) on mutations of the
// committed golden bundle audit-bundles/v1/tiny. The pristine bundle is copied to a scratch
// directory once; each input edits one of its files, the verifier runs its integrity and
// recompile phases (no replay), and the file is restored. The input:
//   byte 0     which file (index into the bundle's files in sorted order, modulo their number)
//   byte 1     how: bits 0-1 0 replace the file by the payload; 1 overwrite the payload at the
//              offset; 2 truncate at the offset (payload unused); 3 insert the payload there.
//              Bit 2: reseal — give the edited file its new size and Merkle root in the
//              manifest's file list, recompute the root digest and write it into the manifest
//              and the final weights' metadata, as a forger would; so the edit gets past the
//              file-list check to the parsers and cross-checks behind it (the step log, the
//              checkpoints, the stages, recompilation) instead of stopping at the first digest.
//              Bit 3: run the recompile phase too (about a second under ASan; without it an
//              execution is integrity only and takes milliseconds).
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

#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "base/budget.h"
#include "base/safetensors.h"
#include "evidence/bundle/bundle_format.h"
#include "evidence/verify/verifier.h"
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

const PristineFile& FileNamed(const std::string& rel) {
  for (const PristineFile& f : Files()) {
    if (f.path == BundleDir() + "/" + rel) return f;
  }
  detrain::fuzz::PropertyFailed("bundle_fuzz: the golden bundle has no file", rel);
}

// The manifest and final weights that make `edited` (the new bytes of `file`) pass the
// file-list check: {manifest bytes, weights bytes}. Aborts when the golden bundle itself is not
// what this code assumes (then every finding would be noise).
std::pair<std::string, std::string> Seal(const PristineFile& file, std::string_view edited) {
  using detrain::fuzz::PropertyFailed;
  const PristineFile& manifest_file = FileNamed(detrain::bundle::kManifest);
  const PristineFile& weights_file = FileNamed(detrain::bundle::kFinalWeights);
  auto manifest = detrain::attest::ParseJson(manifest_file.bytes);
  if (!manifest.ok()) PropertyFailed("bundle_fuzz: golden manifest", manifest.status().ToString());
  const std::string rel = file.path.substr(BundleDir().size() + 1);
  for (nlohmann::json& entry : (*manifest)["files"]) {
    if (entry["path"] == rel) {
      entry["size"] = edited.size();
      entry["merkle_root"] = detrain::bundle::Hex(detrain::attest::MerkleRoot(edited, nullptr));
    }
  }
  manifest->erase("root_digest");
  auto root = detrain::bundle::ManifestRootDigest(*manifest);
  if (!root.ok()) PropertyFailed("bundle_fuzz: root digest", root.status().ToString());
  (*manifest)["root_digest"] = *root;
  auto manifest_bytes = detrain::bundle::CanonicalLine(*manifest);
  auto weights = detrain::ParseSafetensors(weights_file.bytes);
  if (!manifest_bytes.ok() || !weights.ok()) PropertyFailed("bundle_fuzz: sealing", rel);
  weights->metadata["detrain.bundle_root"] = *root;
  auto weights_bytes = detrain::SerializeSafetensors(*weights);
  if (!weights_bytes.ok()) PropertyFailed("bundle_fuzz: sealing the weights", rel);
  return {*manifest_bytes, *weights_bytes};
}

detrain::verify::VerifyReport Verify(bool recompile) {
  detrain::verify::VerifyOptions options;
  options.bundle = BundleDir();
  options.replay = false;
  options.recompile = recompile;
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
  // Sealing an unedited file must give back the golden manifest and weights byte for byte.
  auto sealed = Seal(FileNamed(detrain::bundle::kSteps), FileNamed(detrain::bundle::kSteps).bytes);
  if (sealed.first != FileNamed(detrain::bundle::kManifest).bytes ||
      sealed.second != FileNamed(detrain::bundle::kFinalWeights).bytes) {
    detrain::fuzz::PropertyFailed("bundle_fuzz: sealing the golden bundle changes it", "");
  }
  detrain::verify::VerifyReport report = Verify(/*recompile=*/true);
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
  switch (data[1] & 0x3) {
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
  const PristineFile& manifest = FileNamed(detrain::bundle::kManifest);
  const PristineFile& weights = FileNamed(detrain::bundle::kFinalWeights);
  const bool reseal = (data[1] & 0x4) != 0 && &file != &manifest && &file != &weights;
  detrain::fuzz::WriteBytes(file.path, edited);
  if (reseal) {
    auto [manifest_bytes, weights_bytes] = Seal(file, edited);
    detrain::fuzz::WriteBytes(manifest.path, manifest_bytes);
    detrain::fuzz::WriteBytes(weights.path, weights_bytes);
  }
  (void)Verify((data[1] & 0x8) != 0);
  detrain::fuzz::WriteBytes(file.path, file.bytes);
  if (reseal) {
    detrain::fuzz::WriteBytes(manifest.path, manifest.bytes);
    detrain::fuzz::WriteBytes(weights.path, weights.bytes);
  }
  return 0;
}
