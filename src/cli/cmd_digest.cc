// `detrain digest PATH... [--json] [--threads N] [--oms]`: SHA-256 and Merkle digests of files,
// directory digests of directories (schemas/merkle.md, schemas/directory-digest.md).
// Every path is checked before any is hashed, so a bad path produces no partial output.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "attest/dir_digest.h"
#include "attest/merkle.h"
#include "base/file_io.h"
#include "cli/command.h"

namespace detrain::cli {
namespace {

using attest::Sha256;

struct DigestOptions {
  std::vector<std::string> paths;
  bool json = false;
  bool oms = false;
  size_t threads = 0;
};

enum class PathKind { kFile, kDirectory };

Result<PathKind> Classify(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return NotFound(path + ": no such file or directory");
    return IoError(ErrnoMessage(path, errno));
  }
  if (S_ISLNK(st.st_mode)) {
    return InvalidArgument(path +
                           ": is a symbolic link; give the path of the file or directory "
                           "itself (symlinks are not digested)");
  }
  if (S_ISREG(st.st_mode)) return PathKind::kFile;
  if (S_ISDIR(st.st_mode)) return PathKind::kDirectory;
  return InvalidArgument(path + ": not a regular file or directory");
}

// OMS root of a single file: one resource, so SHA-256 of its 32-byte digest.
std::string OmsRootOfFile(const attest::FileDigests& d) {
  return Sha256::ToHex(attest::Sha256Of(
      std::string_view(reinterpret_cast<const char*>(d.sha256.data()), d.sha256.size())));
}

// Progress on stderr for files of 256 MiB or more, when stderr is a terminal.
attest::ProgressFn ProgressFor(const std::string& path) {
  struct stat st;
  if (!::isatty(2) || ::stat(path.c_str(), &st) != 0 || st.st_size < (off_t{256} << 20))
    return nullptr;
  uint64_t total = static_cast<uint64_t>(st.st_size);
  return [path, total](uint64_t done) {
    std::fprintf(stderr, "\rdetrain digest: %s: %3d%% of %.1f GiB", path.c_str(),
                 static_cast<int>(100.0 * static_cast<double>(done) / static_cast<double>(total)),
                 static_cast<double>(total) / (1u << 30));
    if (done >= total) std::fprintf(stderr, "\n");
  };
}

Result<nlohmann::json> DigestOne(const std::string& path, PathKind kind, ThreadPool& pool) {
  nlohmann::json j;
  j["path"] = path;
  if (kind == PathKind::kFile) {
    DETRAIN_ASSIGN_OR_RETURN(attest::FileDigests d,
                             attest::DigestFile(path, pool, ProgressFor(path)));
    j["kind"] = "file";
    j["size"] = d.size;
    j["sha256"] = Sha256::ToHex(d.sha256);
    j["merkle_sha256"] = Sha256::ToHex(d.merkle_root);
    j["merkle_leaves"] = d.leaf_count;
    j["merkle_chunk_size"] = attest::kMerkleChunkSize;
    j["oms_root"] = "sha256:" + OmsRootOfFile(d);
    return j;
  }
  DETRAIN_ASSIGN_OR_RETURN(attest::DirectoryDigest d, attest::DigestDirectory(path, pool));
  j["kind"] = "directory";
  j["files"] = d.files.size();
  j["size"] = d.total_bytes;
  j["dirhash1"] = Sha256::ToHex(d.dirhash1);
  j["oms_root"] = "sha256:" + Sha256::ToHex(d.oms_root);
  j["oms_files"] = d.oms_file_count;
  return j;
}

void PrintText(const nlohmann::json& j) {
  const std::string& path = j["path"].get_ref<const std::string&>();
  if (j["kind"] == "file") {
    uint64_t leaves = j["merkle_leaves"];
    std::cout << path << "\n"
              << "  size      " << j["size"].get<uint64_t>() << " bytes\n"
              << "  sha256    " << j["sha256"].get<std::string>() << "\n"
              << "  merkle    " << j["merkle_sha256"].get<std::string>() << "  (" << leaves
              << (leaves == 1 ? " leaf" : " leaves") << " of 1 MiB)\n";
  } else {
    std::cout << path << "/\n"
              << "  files     " << j["files"].get<uint64_t>() << " (" << j["size"].get<uint64_t>()
              << " bytes)\n"
              << "  dirhash1  " << j["dirhash1"].get<std::string>() << "\n"
              << "  oms       " << j["oms_root"].get<std::string>() << "\n";
  }
}

int RunDigest(const DigestOptions& opts) {
  std::vector<PathKind> kinds;
  for (const auto& p : opts.paths) {
    Result<PathKind> k = Classify(p);
    if (!k.ok()) return ReportError("digest", k.status());
    kinds.push_back(*k);
  }
  ThreadPool pool(opts.threads);
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < opts.paths.size(); ++i) {
    Result<nlohmann::json> j = DigestOne(opts.paths[i], kinds[i], pool);
    if (!j.ok()) return ReportError("digest", j.status());
    all.push_back(std::move(*j));
  }
  if (opts.json) {
    std::cout << JsonOutput(nlohmann::json{{"paths", all}});
  } else if (opts.oms) {
    for (const auto& j : all) {
      std::cout << j["oms_root"].get<std::string>();
      if (all.size() > 1) std::cout << "  " << j["path"].get<std::string>();
      std::cout << "\n";
    }
  } else {
    for (const auto& j : all) PrintText(j);
  }
  return kExitOk;
}

}  // namespace

void RegisterDigestCommand(CLI::App& app, int* exit_code) {
  auto opts = std::make_shared<DigestOptions>();
  CLI::App* cmd = app.add_subcommand(
      "digest",
      "SHA-256 and Merkle digests of files; dirhash1 and OpenSSF model-signing digests of "
      "directories");
  cmd->add_option("PATH", opts->paths, "Files or directories to digest")->required();
  cmd->add_flag("--json", opts->json, "Print one JSON object with every digest");
  cmd->add_flag("--oms", opts->oms,
                "Print only the OpenSSF model-signing root digest (`sha256:<hex>`, as "
                "`model_signing digest` prints it)");
  cmd->add_option("--threads", opts->threads, "Hashing threads (default: all cores)")
      ->check(IntegerIn(1, 1024));
  cmd->footer(
      "Files: size, SHA-256 (as sha256sum prints it) and the Merkle root over 1 MiB chunks.\n"
      "Directories: regular files only, symlinks rejected; dirhash1 and the OMS root.\n"
      "Formats: schemas/merkle.md, schemas/directory-digest.md. Digests do not depend on "
      "--threads.");
  cmd->callback([opts, exit_code] { *exit_code = RunDigest(*opts); });
}

}  // namespace detrain::cli
