// See verifier.h. Each phase is a function that returns OK or the failure it found; the first
// failure ends verification.
#include "attest/verify/verifier.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "attest/bundle/bundle_files.h"
#include "attest/bundle/bundle_format.h"
#include "attest/bundle/step_runner.h"
#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "attest/prng/lineage.h"
#include "attest/verify/manifest_check.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "driver/compile.h"

namespace detrain::verify {
namespace {

using attest::Digest256;
using bundle::Hex;
using bundle::StepRecord;
using nlohmann::json;

constexpr uint64_t kMaxJsonFile = uint64_t{256} << 20;  // manifest, data record, step log

// A failure with its outcome (a plain Status cannot say "incomplete" or "input error").
struct Failure {
  Outcome outcome = Outcome::kFailed;
  std::string message;
};
using Check = std::optional<Failure>;

Check Fail(std::string m) { return Failure{Outcome::kFailed, std::move(m)}; }
Check InputError(std::string m) { return Failure{Outcome::kInputError, std::move(m)}; }
Check FailStatus(const Status& s, const std::string& context = "") {
  const std::string m(s.message());
  if (context.empty() || m.rfind(context, 0) == 0) return Fail(m);
  return Fail(context + ": " + m);
}

Result<std::string> ReadBounded(const std::string& path, uint64_t limit) {
  DETRAIN_ASSIGN_OR_RETURN(uint64_t size, RegularFileSize(path));
  if (size > limit) {
    return DataLoss(path + ": " + std::to_string(size) + " bytes, more than the " +
                    std::to_string(limit) + " this file may have");
  }
  return ReadFile(path);
}

// The first line (1-based) where two texts differ, with both lines, or the first byte.
std::string FirstDifference(const std::string& a, const std::string& b, bool text) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  if (i == n && a.size() == b.size()) return "identical";
  if (!text) {
    return "first differing byte at offset " + std::to_string(i) + " (sizes " +
           std::to_string(a.size()) + " and " + std::to_string(b.size()) + ")";
  }
  size_t line = 1 + static_cast<size_t>(
                        std::count(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(i), '\n'));
  auto line_at = [&](const std::string& s) {
    size_t begin = s.rfind('\n', i == 0 ? 0 : i - 1);
    begin = (begin == std::string::npos || i == 0) ? 0 : begin + 1;
    size_t end = s.find('\n', begin);
    std::string l = s.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    if (l.size() > 160) l = l.substr(0, 160) + "...";
    return l;
  };
  return "first difference on line " + std::to_string(line) + ":\n    bundle:     " + line_at(a) +
         "\n    recompiled: " + line_at(b);
}

// The first field where two JSON values differ, as `"a.b[2]": recorded X, expected Y` ("" when
// equal). Depth is bounded: attest::ParseJson rejects nesting deeper than it allows.
std::string JsonDifference(const json& recorded, const json& expected, const std::string& path) {
  if (recorded == expected) return "";
  auto at = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (recorded.is_object() && expected.is_object()) {
    std::set<std::string> keys;
    for (auto it = recorded.begin(); it != recorded.end(); ++it) keys.insert(it.key());
    for (auto it = expected.begin(); it != expected.end(); ++it) keys.insert(it.key());
    for (const std::string& k : keys) {
      if (!recorded.contains(k)) return "\"" + at(k) + "\" is missing";
      if (!expected.contains(k)) return "\"" + at(k) + "\" is not a field of this format";
      std::string d = JsonDifference(recorded[k], expected[k], at(k));
      if (!d.empty()) return d;
    }
  }
  if (recorded.is_array() && expected.is_array() && recorded.size() == expected.size()) {
    for (size_t i = 0; i < recorded.size(); ++i) {
      std::string d =
          JsonDifference(recorded[i], expected[i], path + "[" + std::to_string(i) + "]");
      if (!d.empty()) return d;
    }
  }
  auto text = [](const json& j) {
    std::string t = j.dump(-1, ' ', false, json::error_handler_t::replace);
    return t.size() > 160 ? t.substr(0, 160) + "..." : t;
  };
  return "\"" + path + "\": recorded " + text(recorded) + ", expected " + text(expected);
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

std::string FloatText(uint32_t bits) {
  float f = bundle::FloatOfBits(bits);
  char s[64];
  std::snprintf(s, sizeof(s), "%.9g (0x%08x)", static_cast<double>(f), bits);
  return s;
}

// Everything read from the bundle by the integrity phase, used by the later ones.
struct Bundle {
  std::string dir;
  json manifest;
  json data_record;
  bundle::ParsedSteps steps;
  std::string root_digest;
  std::map<int64_t, std::string> checkpoints;  // steps_done -> relative path
  bool stopped = false;
};

// ---- integrity ------------------------------------------------------------------------------

// Merkle roots of many files at once: every 1 MiB chunk of every file is one task.
Result<std::vector<Digest256>> MerkleRoots(
    const std::string& dir, const std::vector<std::pair<std::string, uint64_t>>& files,
    int threads) {
  struct Chunk {
    size_t file;
    uint64_t offset;
  };
  std::vector<Chunk> chunks;
  std::vector<std::vector<Digest256>> leaves(files.size());
  for (size_t f = 0; f < files.size(); ++f) {
    uint64_t n = files[f].second == 0 ? 0 : (files[f].second - 1) / attest::kMerkleChunkSize + 1;
    leaves[f].resize(n);
    for (uint64_t c = 0; c < n; ++c) chunks.push_back({f, c * attest::kMerkleChunkSize});
  }
  std::vector<int> fds(files.size(), -1);
  Status error;
  std::mutex mu;
  for (size_t f = 0; f < files.size(); ++f) {
    fds[f] = ::open(JoinPath(dir, files[f].first).c_str(), O_RDONLY | O_CLOEXEC);
    if (fds[f] < 0) error = IoError(ErrnoMessage(files[f].first, errno));
  }
  if (error.ok()) {
    ThreadPool pool(static_cast<size_t>(std::max(1, threads)));
    pool.ParallelFor(chunks.size(), [&](size_t i) {
      const Chunk& c = chunks[i];
      const uint64_t size =
          std::min<uint64_t>(attest::kMerkleChunkSize, files[c.file].second - c.offset);
      // One buffer per worker thread, reused for every chunk it hashes.
      thread_local std::string buf;
      buf.resize(size);
      size_t done = 0;
      while (done < size) {
        ssize_t r = ::pread(fds[c.file], buf.data() + done, size - done,
                            static_cast<off_t>(c.offset + done));
        if (r <= 0) {
          std::lock_guard<std::mutex> lock(mu);
          error = DataLoss(files[c.file].first + ": shorter than its recorded size");
          return;
        }
        done += static_cast<size_t>(r);
      }
      leaves[c.file][c.offset / attest::kMerkleChunkSize] = attest::MerkleLeafHash(buf);
    });
  }
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
  DETRAIN_RETURN_IF_ERROR(error);
  std::vector<Digest256> roots;
  for (auto& l : leaves) roots.push_back(attest::MerkleRootOfLeaves(std::move(l)));
  return roots;
}

Check CheckFiles(Bundle& b, const VerifyOptions& o) {
  Result<std::vector<std::string>> present = ListFiles(b.dir);
  if (!present.ok()) return FailStatus(present.status(), b.dir);
  std::set<std::string> listed = {bundle::kManifest, bundle::kFinalWeights};
  std::vector<std::pair<std::string, uint64_t>> files;
  std::vector<std::string> recorded_roots;
  for (const json& f : b.manifest["files"]) {
    const std::string path = f["path"].get<std::string>();
    if (!listed.insert(path).second) return Fail("manifest.json lists " + path + " twice");
    files.emplace_back(path, f["size"].get<uint64_t>());
    recorded_roots.push_back(f["merkle_root"].get<std::string>());
    if (std::optional<int64_t> done = bundle::CheckpointStepsOf(path)) b.checkpoints[*done] = path;
  }
  for (const std::string& p : *present) {
    if (listed.count(p) == 0) {
      if (p == bundle::kProgress) return Fail("progress.json is present: the bundle is incomplete");
      return Fail("extra file " + p + ": not listed in manifest.json");
    }
  }
  std::set<std::string> have(present->begin(), present->end());
  for (const std::string& p : listed) {
    if (have.count(p) == 0) return Fail("missing file " + p + " (listed in manifest.json)");
  }
  for (const auto& [path, size] : files) {
    Result<uint64_t> actual = RegularFileSize(JoinPath(b.dir, path));
    if (!actual.ok()) return FailStatus(actual.status());
    if (*actual != size) {
      return Fail(path + ": " + std::to_string(*actual) + " bytes; manifest.json records " +
                  std::to_string(size));
    }
  }
  int threads = o.integrity_threads > 0
                    ? o.integrity_threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Result<std::vector<Digest256>> roots = MerkleRoots(b.dir, files, threads);
  if (!roots.ok()) return FailStatus(roots.status());
  for (size_t i = 0; i < files.size(); ++i) {
    if (Hex((*roots)[i]) != recorded_roots[i]) {
      return Fail(files[i].first + ": content differs from manifest.json (Merkle root " +
                  Hex((*roots)[i]) + ", recorded " + recorded_roots[i] + ")");
    }
  }
  return std::nullopt;
}

Check CheckSteps(Bundle& b) {
  Result<std::string> text = ReadBounded(JoinPath(b.dir, bundle::kSteps), kMaxJsonFile * 16);
  if (!text.ok()) return FailStatus(text.status());
  Result<bundle::ParsedSteps> steps = bundle::ParseSteps(*text);
  if (!steps.ok()) return FailStatus(steps.status());
  b.steps = std::move(*steps);
  if (!b.steps.error.empty()) {
    return Fail("steps.jsonl line " + std::to_string(b.steps.error_line) + ": " + b.steps.error);
  }
  const json& m = b.manifest;
  if (Hex(b.steps.genesis) != m["steps"]["genesis"].get<std::string>()) {
    return Fail("steps.jsonl: its genesis hash differs from manifest.json's");
  }
  if (bundle::DigestPolicyName(b.steps.policy) != m["steps"]["state_digest"].get<std::string>()) {
    return Fail("steps.jsonl: its state digest policy differs from manifest.json's");
  }
  const int64_t count = m["steps"]["count"].get<int64_t>();
  if (static_cast<int64_t>(b.steps.records.size()) != count) {
    return Fail("steps.jsonl holds " + std::to_string(b.steps.records.size()) +
                " step records; manifest.json says " + std::to_string(count));
  }
  Digest256 prev = b.steps.genesis;
  for (size_t i = 0; i < b.steps.records.size(); ++i) {
    const StepRecord& r = b.steps.records[i];
    if (r.step != static_cast<int64_t>(i)) {
      return Fail("steps.jsonl line " + std::to_string(i + 2) + " is the record of step " +
                  std::to_string(r.step) + "; expected step " + std::to_string(i) +
                  " (records are missing, repeated or out of order)");
    }
    if (bundle::ChainHash(r, prev) != r.hash) {
      return Fail("step " + std::to_string(i) + ": its hash does not chain from step " +
                  std::to_string(static_cast<int64_t>(i) - 1) +
                  " (the record or an earlier one was altered)");
    }
    prev = r.hash;
  }
  if (Hex(prev) != m["final"]["step_hash"].get<std::string>()) {
    return Fail("the last step record's hash differs from manifest.json's final step hash");
  }
  // The chain covers the hashed fields only; every line must also be exactly what the writer
  // writes for its record, so no readable copy or extra field can be edited unseen.
  size_t pos = 0;
  for (size_t line = 0; line <= b.steps.records.size(); ++line) {
    const size_t end = text->find('\n', pos);  // ParseSteps found every newline
    const json want = line == 0 ? bundle::StepsHeaderJson(b.steps.genesis, b.steps.policy)
                                : bundle::StepRecordJson(b.steps.records[line - 1]);
    Result<std::string> canonical = attest::CanonicalJson(want);
    const std::string_view got = std::string_view(*text).substr(pos, end - pos);
    if (!canonical.ok() || got != *canonical) {
      Result<json> parsed = attest::ParseJson(got);
      std::string why = parsed.ok() ? JsonDifference(*parsed, want, "") : "";
      return Fail("steps.jsonl line " + std::to_string(line + 1) +
                  " is not the canonical form of its " +
                  (line == 0 ? std::string("header") : "record") + ": " +
                  (why.empty() ? "whitespace, key order or number spelling differ" : why));
    }
    pos = end + 1;
  }
  // A complete run has every step, and its last record's roots are the final state's; a
  // stopped one has fewer (the final roots are checked against the replayed state).
  const int64_t planned = m["run"]["steps"].get<int64_t>();
  if (b.stopped ? count >= planned : count != planned) {
    return Fail(std::string("manifest.json says the run ") +
                (b.stopped ? "stopped" : "is complete") + ", but steps.jsonl holds " +
                std::to_string(count) + " of its " + std::to_string(planned) + " steps");
  }
  if (!b.stopped) {
    if (b.steps.records.empty()) return Fail("the bundle has no step records");
    const StepRecord& last = b.steps.records.back();
    if (!last.params_root.has_value() ||
        Hex(*last.params_root) != m["final"]["params_root"].get<std::string>() ||
        Hex(*last.optimizer_root) != m["final"]["optimizer_root"].get<std::string>()) {
      return Fail(
          "manifest.json's final params_root or optimizer_root differs from the roots in the "
          "record of step " +
          std::to_string(last.step));
    }
  }
  return std::nullopt;
}

Result<Digest256> RootsOfFile(const SafetensorsFile& f, ThreadPool* pool) {
  std::vector<attest::TensorView> views;
  for (const SafeTensor& t : f.tensors) {
    attest::TensorView v;
    v.name = t.name;
    v.dtype = t.dtype == "I32" ? "s32" : "f32";
    v.shape = t.shape;
    v.data = t.data;
    views.push_back(v);
  }
  return attest::StateSha256Root(views, pool);
}

// The __metadata__ of a safetensors file, reading only its header (the tensors are checked
// against their step record's roots when replay loads them, or in the recompile phase).
Result<std::map<std::string, std::string>> SafetensorsMetadata(const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(uint64_t size, RegularFileSize(path));
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return IoError(ErrnoMessage(path, errno));
  std::string head(8, '\0');
  std::string header;
  Status st;
  if (size < 8 || ::pread(fd, head.data(), 8, 0) != 8) {
    st = DataLoss(path + ": shorter than a safetensors header");
  } else {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
      n = (n << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
    if (n > size - 8 || n > (uint64_t{100} << 20)) {
      st = DataLoss(path + ": safetensors header length " + std::to_string(n) +
                    " exceeds the file's " + std::to_string(size - 8) + " bytes after it");
    } else {
      header.resize(n);
      if (::pread(fd, header.data(), n, 8) != static_cast<ssize_t>(n)) {
        st = IoError(path + ": short read");
      }
    }
  }
  ::close(fd);
  DETRAIN_RETURN_IF_ERROR(st);
  DETRAIN_ASSIGN_OR_RETURN(json j, attest::ParseJson(header));
  std::map<std::string, std::string> out;
  if (!j.is_object()) return DataLoss(path + ": the safetensors header is not an object");
  if (j.contains("__metadata__")) {
    const json& m = j["__metadata__"];
    if (!m.is_object()) return DataLoss(path + ": __metadata__ is not an object");
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->is_string()) return DataLoss(path + ": __metadata__ values must be strings");
      out[it.key()] = it->get<std::string>();
    }
  }
  return out;
}

// Integrity: the bundle holds exactly the checkpoints the schedule writes (after every
// checkpoint_every steps, before the last), and each one's name, metadata and step record agree.
Check CheckCheckpoints(Bundle& b) {
  const int64_t every = b.manifest["run"]["checkpoint_every"].get<int64_t>();
  const int64_t planned = b.manifest["run"]["steps"].get<int64_t>();
  const int64_t count = static_cast<int64_t>(b.steps.records.size());
  if (every > 0) {
    for (int64_t done = every; done <= count && done < planned; done += every) {
      if (b.checkpoints.count(done) == 0) {
        return Fail("missing checkpoint " + bundle::CheckpointPath(done) +
                    " (the schedule writes one after every " + std::to_string(every) + " steps)");
      }
    }
  }
  for (const auto& [done, path] : b.checkpoints) {
    if (every == 0 || done % every != 0 || done >= planned) {
      return Fail(path + ": not a checkpoint the schedule writes (every " + std::to_string(every) +
                  " steps, before the last of " + std::to_string(planned) + ")");
    }
  }
  for (const auto& [done, path] : b.checkpoints) {
    if (done < 1 || done > static_cast<int64_t>(b.steps.records.size())) {
      return Fail(path + ": a checkpoint after step " + std::to_string(done - 1) +
                  ", but the run has " + std::to_string(b.steps.records.size()) + " steps");
    }
    const StepRecord& r = b.steps.records[static_cast<size_t>(done - 1)];
    if (!r.params_root.has_value()) {
      return Fail(path + ": step " + std::to_string(done - 1) + "'s record has no SHA-256 roots");
    }
    Result<std::map<std::string, std::string>> m = SafetensorsMetadata(JoinPath(b.dir, path));
    if (!m.ok()) return FailStatus(m.status());
    auto meta = [&](const char* k) {
      auto it = m->find(k);
      return it == m->end() ? std::string() : it->second;
    };
    if (meta("detrain.steps_done") != std::to_string(done)) {
      return Fail(path + ": holds the state after " + meta("detrain.steps_done") +
                  " steps, but its name says " + std::to_string(done));
    }
    // Exactly the metadata the writer records.
    const std::map<std::string, std::string> want = {
        {"detrain.format", bundle::kCheckpointFormat},
        {"detrain.steps_done", std::to_string(done)},
        {"detrain.step_hash", Hex(r.hash)},
        {"detrain.params_root", Hex(*r.params_root)},
        {"detrain.optimizer_root", Hex(*r.optimizer_root)}};
    for (const auto& [key, value] : want) {
      if (meta(key.c_str()) != value) {
        return Fail(path + ": metadata \"" + key + "\" is \"" + meta(key.c_str()) + "\"; step " +
                    std::to_string(done - 1) + "'s record gives \"" + value + "\"");
      }
    }
    for (const auto& [key, value] : *m) {
      if (want.count(key) == 0) {
        return Fail(path + ": metadata \"" + key + "\" is not one the writer records");
      }
    }
  }
  return std::nullopt;
}

// A checkpoint, parsed, and checked to be exactly the bytes the writer produces for its tensors
// and metadata (nothing hidden in the header or its padding).
Result<SafetensorsFile> ReadCheckpoint(const Bundle& b, const std::string& path) {
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes, ReadFile(JoinPath(b.dir, path)));
  Result<SafetensorsFile> f = ParseSafetensors(bytes);
  if (!f.ok()) return DataLoss(path + ": " + std::string(f.status().message()));
  Result<std::string> canonical = SerializeSafetensors(*f);
  if (!canonical.ok() || *canonical != bytes) {
    return DataLoss(path + ": not the bytes the writer produces for its tensors and metadata (" +
                    (canonical.ok() ? FirstDifference(bytes, *canonical, false) : "") + ")");
  }
  return f;
}

// A checkpoint's tensors are the state its step record's SHA-256 roots name.
Check CheckCheckpointState(const Bundle& b, int64_t done, const runtime::TrainState& state,
                           ThreadPool* pool) {
  const std::string& path = b.checkpoints.at(done);
  const StepRecord& r = b.steps.records[static_cast<size_t>(done - 1)];
  Result<std::pair<Digest256, Digest256>> roots = bundle::StateRoots(state, pool);
  if (!roots.ok()) return FailStatus(roots.status(), path);
  if (roots->first != *r.params_root || roots->second != *r.optimizer_root) {
    return Fail(path + ": its tensors are not the state step " + std::to_string(done - 1) +
                "'s record names (SHA-256 roots differ)");
  }
  return std::nullopt;
}

Check CheckFinalWeights(Bundle& b) {
  const std::string path = JoinPath(b.dir, bundle::kFinalWeights);
  Result<std::string> bytes = ReadBounded(path, uint64_t{64} << 30);
  if (!bytes.ok()) return FailStatus(bytes.status());
  Result<SafetensorsFile> f = ParseSafetensors(*bytes);
  if (!f.ok()) return FailStatus(f.status(), bundle::kFinalWeights);
  const json& fin = b.manifest["final"];
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  Result<Digest256> root = RootsOfFile(*f, &pool);
  if (!root.ok() || Hex(*root) != fin["params_root"].get<std::string>()) {
    return Fail(std::string(bundle::kFinalWeights) +
                ": its tensors are not the final parameters (SHA-256 root differs)");
  }
  // The exact bytes the final state and the root digest give.
  runtime::TrainState params;
  for (const SafeTensor& t : f->tensors) {
    runtime::StateTensor s;
    s.name = t.name;
    s.role = codegen::ParamRole::kParameter;
    s.value = ir::Literal(
        ir::Shape(t.dtype == "I32" ? ir::ElementType::kS32 : ir::ElementType::kF32, t.shape));
    if (s.value.bytes().size() != t.data.size()) return Fail("final weights: bad tensor size");
    s.value.mutable_bytes() = t.data;
    params.push_back(std::move(s));
  }
  bundle::FinalState fs;
  fs.steps_done = fin["steps_done"].get<int64_t>();
  attest::ParseDigestHex(fin["step_hash"].get<std::string>(), &fs.step_hash);
  attest::ParseDigestHex(fin["params_root"].get<std::string>(), &fs.params_root);
  Result<std::string> expected = bundle::FinalWeightsBytes(params, fs, b.root_digest);
  if (!expected.ok() || *expected != *bytes) {
    return Fail(std::string(bundle::kFinalWeights) +
                ": its metadata or layout differs from what the bundle's root digest and final "
                "state give (" +
                (expected.ok() ? FirstDifference(*bytes, *expected, false) : "") + ")");
  }
  return std::nullopt;
}

Check CheckSplit(Bundle& b) {
  Result<SafetensorsFile> f = ReadSafetensorsFile(JoinPath(b.dir, bundle::kSplitFile));
  if (!f.ok()) return FailStatus(f.status(), bundle::kSplitFile);
  const SafeTensor* train = nullptr;
  const SafeTensor* validation = nullptr;
  for (const SafeTensor& t : f->tensors) {
    if (t.name == "train_index") train = &t;
    if (t.name == "validation_index") validation = &t;
  }
  if (train == nullptr || validation == nullptr || train->dtype != "I64" ||
      validation->dtype != "I64") {
    return Fail(std::string(bundle::kSplitFile) + ": no I64 train_index and validation_index");
  }
  const int64_t rows = b.manifest["data"]["rows"].get<int64_t>();
  // Before allocating one flag per row: `rows` comes from the manifest and may be huge.
  if (rows < 0 ||
      static_cast<uint64_t>(rows) != (train->data.size() + validation->data.size()) / 8) {
    return Fail(std::string(bundle::kSplitFile) + " holds " +
                std::to_string((train->data.size() + validation->data.size()) / 8) +
                " row indices; manifest.json says the data has " + std::to_string(rows) + " rows");
  }
  std::vector<uint8_t> seen(static_cast<size_t>(rows), 0);
  for (const SafeTensor* t : {train, validation}) {
    for (size_t i = 0; i + 8 <= t->data.size(); i += 8) {
      int64_t r;
      std::memcpy(&r, t->data.data() + i, 8);
      if (r < 0 || r >= rows)
        return Fail("the split names row " + std::to_string(r) + " of " + std::to_string(rows));
      if (seen[static_cast<size_t>(r)]++) {
        return Fail("the split is not disjoint: row " + std::to_string(r) + " is used twice");
      }
    }
  }
  if (static_cast<int64_t>((train->data.size() + validation->data.size()) / 8) != rows) {
    return Fail("the split does not cover every row");
  }
  return std::nullopt;
}

Check Integrity(Bundle& b, const VerifyOptions& o) {
  if (!IsDirectory(b.dir)) return InputError(b.dir + ": no such bundle directory");
  const std::string manifest_path = JoinPath(b.dir, bundle::kManifest);
  if (!PathExists(manifest_path)) {
    std::string detail;
    if (Result<std::string> p = ReadBounded(JoinPath(b.dir, bundle::kProgress), 1 << 20); p.ok()) {
      Result<json> j = attest::ParseJson(*p);
      if (j.ok() && j->is_object() && j->contains("steps_done") && j->contains("steps") &&
          (*j)["steps_done"].is_number_integer() && (*j)["steps"].is_number_integer()) {
        detail = ": the run did not finish; its last checkpoint holds " +
                 std::to_string((*j)["steps_done"].get<int64_t>()) + " of " +
                 std::to_string((*j)["steps"].get<int64_t>()) + " steps";
      }
    }
    if (!PathExists(JoinPath(b.dir, bundle::kSteps)) && detail.empty()) {
      return InputError(b.dir + ": not a bundle (no manifest.json)");
    }
    return Failure{Outcome::kIncomplete,
                   "the bundle is incomplete (no manifest.json)" + detail +
                       "; continue it with: detrain run PROGRAM --attest -o " + b.dir +
                       " --resume"};
  }
  Result<std::string> text = ReadBounded(manifest_path, kMaxJsonFile);
  if (!text.ok()) return FailStatus(text.status(), "manifest.json");
  Result<json> manifest = attest::ParseJson(*text);
  if (!manifest.ok()) return FailStatus(manifest.status(), "manifest.json");
  b.manifest = std::move(*manifest);
  if (Status s = CheckFormatVersion(b.manifest); !s.ok()) {
    return s.code() == StatusCode::kInvalidArgument ? InputError(std::string(s.message()))
                                                    : FailStatus(s);
  }
  if (Status s = CheckManifest(b.manifest); !s.ok()) return FailStatus(s, "manifest.json");
  // The writer writes canonical JSON; any other spelling of the same values is an edit.
  if (Result<std::string> canonical = attest::CanonicalJson(b.manifest);
      !canonical.ok() || *canonical + "\n" != *text) {
    return Fail("manifest.json is not in canonical form (it was edited)");
  }
  Result<std::string> root = bundle::ManifestRootDigest(b.manifest);
  if (!root.ok()) return FailStatus(root.status(), "manifest.json");
  b.root_digest = *root;
  if (*root != b.manifest["root_digest"].get<std::string>()) {
    return Fail(
        "manifest.json: its root digest is not the SHA-256 of its contents (the manifest "
        "was edited)");
  }
  b.stopped = b.manifest["status"] == "stopped";
  if (Check c = CheckFiles(b, o)) return c;
  if (Check c = CheckSteps(b)) return c;
  if (Check c = CheckCheckpoints(b)) return c;
  if (Check c = CheckFinalWeights(b)) return c;
  if (Check c = CheckSplit(b)) return c;
  Result<std::string> data = ReadBounded(JoinPath(b.dir, bundle::kDataRecord), kMaxJsonFile);
  if (!data.ok()) return FailStatus(data.status());
  Result<json> dj = attest::ParseJson(*data);
  if (!dj.ok()) return FailStatus(dj.status(), bundle::kDataRecord);
  b.data_record = std::move(*dj);
  if (Status s = CheckDataRecord(b.data_record); !s.ok()) return FailStatus(s, bundle::kDataRecord);
  return std::nullopt;
}

// ---- recompile ------------------------------------------------------------------------------

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Where each data file is read from: --data DIR, the embedded copy, or the program's path.
Check ResolveData(const Bundle& b, const VerifyOptions& o,
                  std::map<std::string, std::string>* out) {
  for (const json& f : b.data_record["files"]) {
    const std::string written = f["path"].get<std::string>();
    const std::string want = f["sha256"].get<std::string>();
    std::vector<std::string> candidates;
    if (!o.data_dir.empty()) candidates.push_back(JoinPath(o.data_dir, BaseName(written)));
    if (f.contains("embedded"))
      candidates.push_back(JoinPath(b.dir, f["embedded"].get<std::string>()));
    if (!written.empty() && written[0] == '/') {
      candidates.push_back(written);
    } else {
      candidates.push_back(JoinPath(JoinPath(b.dir, bundle::kProgramDir), written));
      // Where the run found it (environment.json's hint; the digest decides).
      Result<std::string> env = ReadBounded(JoinPath(b.dir, bundle::kEnvironment), 1 << 20);
      Result<json> ej = env.ok() ? attest::ParseJson(*env) : Result<json>(env.status());
      if (ej.ok() && ej->is_object() && ej->contains("program") && (*ej)["program"].is_string()) {
        const std::string p = (*ej)["program"].get<std::string>();
        candidates.push_back(JoinPath(p.substr(0, p.rfind('/') + 1), written));
      }
    }
    std::string found, looked;
    for (const std::string& c : candidates) {
      looked += "\n    " + c;
      if (!PathExists(c)) continue;
      Result<std::string> bytes = ReadFile(c);
      if (!bytes.ok()) return FailStatus(bytes.status());
      const std::string got = attest::Sha256Hex(*bytes);
      if (got != want) {
        return Fail("dataset " + written + " at " + c + " is not the one the run used: SHA-256 " +
                    got + ", expected " + want);
      }
      found = c;
      break;
    }
    if (found.empty()) {
      return InputError("dataset " + written + " (SHA-256 " + want + ") not found; looked at:" +
                        looked + "\n  point --data at a directory that holds it");
    }
    std::string absolute = found;
    if (absolute[0] != '/') {
      char cwd[4096];
      if (::getcwd(cwd, sizeof(cwd)) != nullptr) absolute = std::string(cwd) + "/" + found;
    }
    (*out)[written] = absolute;
  }
  return std::nullopt;
}

// What the recompile phase builds and the replay phase uses.
struct Replayable {
  driver::CompileResult compiled;
  std::unique_ptr<runtime::TrainingData> data;
  bundle::StepSchedule schedule;
  std::string stage_chain;
  int64_t seed = 0;
  runtime::TrainState layout;  // the state's names and shapes
};

// Every file the run writes when it starts (program/, stages/, data/, run.json) is what the
// recompiled run writes, byte for byte, and so is manifest.json (but for the file list, checked
// by integrity, and its root digest): no field of either can say something the run did not.
Check CheckStaticsAndManifest(const Bundle& b, const Replayable& r,
                              const std::map<std::string, std::string>& data_files) {
  const json& run = b.manifest["run"];
  if (!run.contains("embed_data") || !run["embed_data"].is_boolean()) {
    return Fail("manifest.json: field \"run.embed_data\": expected true or false");
  }
  bundle::RunOptions options;
  options.program = b.manifest["program"]["path"].get<std::string>();
  options.embed_data = run["embed_data"].get<bool>();
  bundle::BundleStatics statics;
  statics.options = &options;
  statics.compiled = &r.compiled;
  statics.data = r.data.get();
  statics.schedule = &r.schedule;
  statics.data_files = data_files;
  Result<std::vector<std::pair<std::string, std::string>>> files = bundle::StaticFiles(statics);
  if (!files.ok()) return FailStatus(files.status());
  for (const auto& [rel, bytes] : *files) {
    if (rel == bundle::kEnvironment) continue;
    Result<std::string> have = ReadFile(JoinPath(b.dir, rel));
    if (!have.ok()) return Fail(rel + ": missing (recompiling the run writes it)");
    if (*have != bytes) {
      auto ends_with = [&](std::string_view suffix) {
        return rel.size() >= suffix.size() &&
               rel.compare(rel.size() - suffix.size(), suffix.size(), suffix) == 0;
      };
      const bool binary = ends_with(".pb") || ends_with(".safetensors") ||
                          rel.rfind(bundle::kEmbeddedDataDir, 0) == 0;
      return Fail(rel + " differs from what recompiling the program gives; " +
                  FirstDifference(*have, bytes, !binary));
    }
  }
  bundle::FinalState fin;
  const json& f = b.manifest["final"];
  fin.steps_done = f["steps_done"].get<int64_t>();
  attest::ParseDigestHex(f["step_hash"].get<std::string>(), &fin.step_hash);
  attest::ParseDigestHex(f["params_root"].get<std::string>(), &fin.params_root);
  attest::ParseDigestHex(f["optimizer_root"].get<std::string>(), &fin.optimizer_root);
  fin.genesis = b.steps.genesis;
  fin.stopped = b.stopped;
  if (b.stopped) fin.stop_reason = b.manifest["stop"]["reason"].get<std::string>();
  Result<json> expected = bundle::ManifestJson(statics, fin, b.manifest["files"]);
  if (!expected.ok()) return FailStatus(expected.status());
  json have = b.manifest;
  have.erase("root_digest");
  if (have != *expected) {
    return Fail("manifest.json: " + JsonDifference(have, *expected, ""));
  }
  // The bundle lists exactly the files this run writes.
  std::set<std::string> want = {bundle::kSteps, bundle::kLineage};
  for (const auto& [rel, bytes] : *files) want.insert(rel);
  for (const auto& [done, path] : b.checkpoints) want.insert(path);  // the schedule's (integrity)
  for (const json& entry : b.manifest["files"]) {
    const std::string path = entry["path"].get<std::string>();
    if (want.erase(path) == 0)
      return Fail("manifest.json lists " + path + ", not a file of this run");
  }
  if (!want.empty()) {
    return Fail("manifest.json does not list " + *want.begin() +
                ", which a bundle of this run holds");
  }
  return std::nullopt;
}

Check Recompile(const Bundle& b, const VerifyOptions& o, Replayable* r) {
  driver::CompileOptions copts;
  if (Check c = ResolveData(b, o, &copts.data_files)) return c;
  const std::string program = JoinPath(b.dir, b.manifest["program"]["path"].get<std::string>());
  Result<driver::CompileResult> compiled = driver::Compile(program, copts);
  if (!compiled.ok()) return FailStatus(compiled.status(), "recompiling the bundled program");
  r->compiled = std::move(*compiled);
  // Every stage, in chain order.
  const json& stages = b.manifest["stages"];
  const auto& records = r->compiled.stages.records();
  if (stages.size() != records.size()) {
    return Fail("the bundle records " + std::to_string(stages.size()) +
                " stages; recompiling gives " + std::to_string(records.size()));
  }
  for (size_t i = 0; i < records.size(); ++i) {
    const json& s = stages[i];
    const driver::StageRecord& rec = records[i];
    if (s["stage"] != rec.name || s["sha256"] != rec.sha256) {
      std::string bundled;
      Result<std::string> bytes =
          ReadFile(JoinPath(JoinPath(b.dir, bundle::kStagesDir), rec.file_name));
      if (bytes.ok()) bundled = *bytes;
      const bool text =
          rec.file_name.size() < 3 || rec.file_name.substr(rec.file_name.size() - 3) != ".pb";
      return Fail("stage " + std::to_string(rec.number) + " (" + rec.name +
                  ") differs: recorded sha256 " + s["sha256"].get<std::string>() + ", recompiled " +
                  rec.sha256 + "; " + FirstDifference(bundled, rec.bytes, text));
    }
  }
  frontend::RunConfig& cfg = *r->compiled.config;
  const json& run = b.manifest["run"];
  cfg.train.steps = run["steps"].get<int64_t>();
  r->seed = cfg.train.seed;
  r->schedule.steps = run["steps"].get<int64_t>();
  r->schedule.checkpoint_every = run["checkpoint_every"].get<int64_t>();
  r->schedule.eval_every = run["eval_every"].get<int64_t>();
  r->schedule.policy = b.steps.policy;
  if (r->schedule.checkpoint_every != cfg.train.checkpoint_every ||
      r->schedule.eval_every != cfg.train.eval_every) {
    return Fail("manifest.json's run options differ from the program's");
  }
  // The data: split and statistics recomputed, then the records compared byte for byte.
  runtime::RunKeys keys(cfg.train.seed, cfg.train.prng, cfg.train.shards);
  Result<prng::Key> split_key = keys.SplitKey();
  if (!split_key.ok()) return FailStatus(split_key.status());
  Result<runtime::TrainingData> data =
      runtime::TrainingData::Prepare(cfg, *r->compiled.dataset, *split_key);
  if (!data.ok()) return FailStatus(data.status());
  r->data = std::make_unique<runtime::TrainingData>(std::move(*data));
  Result<std::string> split = bundle::SplitFileBytes(*r->data);
  Result<std::string> bundled_split = ReadFile(JoinPath(b.dir, bundle::kSplitFile));
  if (!split.ok() || !bundled_split.ok() || *split != *bundled_split) {
    return Fail(std::string(bundle::kSplitFile) +
                ": the split or the standardization statistics differ from what the data and the "
                "seed give");
  }
  std::vector<std::pair<std::string, uint64_t>> sizes;
  std::vector<std::string> embedded;
  for (const json& f : b.data_record["files"]) {
    sizes.emplace_back(f["path"].get<std::string>(), f["size"].get<uint64_t>());
    embedded.push_back(f.contains("embedded") ? f["embedded"].get<std::string>() : "");
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    Result<uint64_t> size = RegularFileSize(copts.data_files[sizes[i].first]);
    if (size.ok() && *size != sizes[i].second)
      return Fail("dataset " + sizes[i].first + ": size differs");
  }
  Result<json> dj = bundle::DataJson(cfg, *r->compiled.dataset, *r->data, sizes, embedded);
  if (!dj.ok()) return FailStatus(dj.status());
  if (*dj != b.data_record) {
    Result<std::string> a = attest::CanonicalJson(b.data_record), c = attest::CanonicalJson(*dj);
    return Fail(std::string(bundle::kDataRecord) + " differs from what the data gives; " +
                FirstDifference(a.ok() ? *a : "", c.ok() ? *c : "", true));
  }
  // Genesis: the stage chain and the initial state.
  Result<std::unique_ptr<runtime::Trainer>> trainer =
      runtime::Trainer::Create(r->compiled, r->data.get(), o.executor);
  if (!trainer.ok()) return FailStatus(trainer.status());
  Result<runtime::TrainState> init = (*trainer)->InitialState(&keys);
  if (!init.ok()) return FailStatus(init.status());
  r->layout = (*trainer)->StateLayout();
  Result<std::string> chain = attest::CanonicalJson(driver::StageChainJson(r->compiled.stages));
  if (!chain.ok()) return FailStatus(chain.status());
  r->stage_chain = *chain;
  ThreadPool pool(1);
  Result<Digest256> genesis = bundle::Genesis(r->stage_chain, *init, &pool);
  if (!genesis.ok()) return FailStatus(genesis.status());
  if (*genesis != b.steps.genesis) {
    return Fail(
        "the genesis hash differs: the initial parameters or the stage chain are not what "
        "the program gives");
  }
  // The key lineage: recorded keys recomputed from their parents, and the whole log equal to
  // the one this run derives.
  const int64_t spe = r->data->split().steps_per_epoch;
  // A stopped run also derived (and recorded) the key of the step that stopped it, which has no
  // record; replay confirms the stop with that key.
  const int64_t derived = static_cast<int64_t>(b.steps.records.size()) + (b.stopped ? 1 : 0);
  for (int64_t t = 0; t < derived; ++t) {
    if (!keys.BeginStep(t, spe).ok())
      return Fail("cannot derive the key of step " + std::to_string(t));
  }
  Result<std::string> lineage = ReadBounded(JoinPath(b.dir, bundle::kLineage), kMaxJsonFile * 16);
  if (!lineage.ok()) return FailStatus(lineage.status());
  Result<prng::KeyLineage> parsed = prng::KeyLineage::FromJsonl(*lineage);
  if (!parsed.ok()) return FailStatus(parsed.status(), "lineage.jsonl");
  if (Status s = prng::ReplayLineage(*parsed); !s.ok()) return FailStatus(s, "lineage.jsonl");
  const std::string expected = keys.lineage().ToJsonl();
  if (expected != *lineage) {
    return Fail("lineage.jsonl differs from the keys this run derives; " +
                FirstDifference(*lineage, expected, true));
  }
  return CheckStaticsAndManifest(b, *r, copts.data_files);
}

// Without replay: every checkpoint's tensors against its record's roots (replay does this for
// the checkpoints its segments start from).
Check CheckAllCheckpoints(const Bundle& b, const Replayable& r) {
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  for (const auto& [done, path] : b.checkpoints) {
    Result<SafetensorsFile> f = ReadCheckpoint(b, path);
    if (!f.ok()) return FailStatus(f.status());
    runtime::TrainState state = r.layout;
    if (Status s = bundle::LoadState(*f, &state); !s.ok()) return FailStatus(s, path);
    if (Check c = CheckCheckpointState(b, done, state, &pool)) return c;
  }
  return std::nullopt;
}

// ---- replay ---------------------------------------------------------------------------------

// The first field of `got` that differs from the recorded `want`, described; "" when equal.
std::string CompareRecords(const StepRecord& want, const StepRecord& got) {
  const std::string step = "step " + std::to_string(want.step) + ": ";
  if (want.epoch != got.epoch) {
    return step + "epoch recorded " + std::to_string(want.epoch) + ", replayed " +
           std::to_string(got.epoch);
  }
  if (want.batch != got.batch) return step + "the batch differs (the rows or their values)";
  if (want.key_hi != got.key_hi || want.key_lo != got.key_lo) return step + "the step key differs";
  if (want.learning_rate_bits != got.learning_rate_bits) {
    return step + "learning rate recorded " + FloatText(want.learning_rate_bits) + ", replayed " +
           FloatText(got.learning_rate_bits);
  }
  if (want.loss_bits != got.loss_bits) {
    return step + "loss recorded " + FloatText(want.loss_bits) + ", replayed " +
           FloatText(got.loss_bits);
  }
  for (size_t i = 0; i < want.tensors.size() && i < got.tensors.size(); ++i) {
    if (want.tensors[i] != got.tensors[i]) {
      return step + "tensor " + want.tensors[i].first + " differs after the step (digest " +
             Hex(want.tensors[i].second) + " recorded, " + Hex(got.tensors[i].second) +
             " replayed)";
    }
  }
  if (want.tensors.size() != got.tensors.size() || want.state != got.state) {
    return step + "the state digest differs";
  }
  if (want.params_root != got.params_root || want.optimizer_root != got.optimizer_root) {
    return step + "the SHA-256 roots of the state differ";
  }
  if (want.eval_loss_bits != got.eval_loss_bits) {
    return step + "eval loss recorded " +
           (want.eval_loss_bits ? FloatText(*want.eval_loss_bits) : "none") + ", replayed " +
           (got.eval_loss_bits ? FloatText(*got.eval_loss_bits) : "none");
  }
  if (want.eval_accuracy_bits != got.eval_accuracy_bits) {
    return step + "eval accuracy recorded " +
           (want.eval_accuracy_bits ? FloatText(*want.eval_accuracy_bits) : "none") +
           ", replayed " + (got.eval_accuracy_bits ? FloatText(*got.eval_accuracy_bits) : "none");
  }
  if (want.hash != got.hash) return step + "the step hash differs";
  return "";
}

// For a mismatch whose step is followed by a checkpoint: the first differing element.
std::string ElementDifference(const runtime::TrainState& state, const SafetensorsFile& f) {
  for (const runtime::StateTensor& s : state) {
    for (const SafeTensor& t : f.tensors) {
      if (t.name != s.name || t.data.size() != s.value.bytes().size()) continue;
      const std::string& a = t.data;
      const std::string& b = s.value.bytes();
      for (size_t i = 0; i + 4 <= a.size(); i += 4) {
        if (std::memcmp(a.data() + i, b.data() + i, 4) != 0) {
          uint32_t x, y;
          std::memcpy(&x, a.data() + i, 4);
          std::memcpy(&y, b.data() + i, 4);
          return "; first differing element: " + s.name + "[" + std::to_string(i / 4) +
                 "] (flat index) recorded " + FloatText(x) + ", replayed " + FloatText(y);
        }
      }
    }
  }
  return "";
}

struct Segment {
  int64_t begin = 0, end = 0;  // steps [begin, end)
};

struct SegmentResult {
  int64_t first_bad = -1;  // step of the first mismatch
  std::string message;
  int64_t replayed = 0;
};

SegmentResult ReplaySegment(const Bundle& b, const Replayable& r, const VerifyOptions& o,
                            const Segment& seg, bool confirm_stop) {
  SegmentResult out;
  auto fail = [&](int64_t step, std::string m) {
    out.first_bad = step;
    out.message = std::move(m);
    return out;
  };
  runtime::TrainingData data = *r.data;
  Result<std::unique_ptr<runtime::Trainer>> trainer =
      runtime::Trainer::Create(r.compiled, &data, o.executor);
  if (!trainer.ok()) return fail(seg.begin, std::string(trainer.status().message()));
  runtime::TrainState state;
  if (seg.begin == 0) {
    runtime::RunKeys keys(r.seed, r.compiled.config->train.prng, r.compiled.config->train.shards);
    (void)keys.SplitKey();
    Result<runtime::TrainState> init = (*trainer)->InitialState(&keys);
    if (!init.ok()) return fail(0, std::string(init.status().message()));
    state = std::move(*init);
  } else {
    state = (*trainer)->StateLayout();
    const std::string& path = b.checkpoints.at(seg.begin);
    Result<SafetensorsFile> f = ReadCheckpoint(b, path);
    if (!f.ok()) return fail(seg.begin, std::string(f.status().message()));
    if (Status s = bundle::LoadState(*f, &state); !s.ok()) {
      return fail(seg.begin, path + ": " + std::string(s.message()));
    }
  }
  ThreadPool pool(1);
  if (seg.begin > 0) {
    if (Check c = CheckCheckpointState(b, seg.begin, state, &pool))
      return fail(seg.begin, c->message);
  }
  const std::vector<StepRecord>& recs = b.steps.records;
  for (int64_t t = seg.begin; t < seg.end; ++t) {
    const Digest256 prev = t == 0 ? b.steps.genesis : recs[static_cast<size_t>(t - 1)].hash;
    Result<bundle::StepOutcome> step = bundle::RunStep(
        **trainer, r.schedule, t, runtime::StepKeyOf(r.seed, t), prev, &state, &pool);
    if (!step.ok())
      return fail(t, "step " + std::to_string(t) + ": " + std::string(step.status().message()));
    if (!step->finite) {
      return fail(t, "step " + std::to_string(t) + ": replay gives a non-finite result (" +
                         step->nonfinite + "); the run recorded a finite loss");
    }
    std::string diff = CompareRecords(recs[static_cast<size_t>(t)], step->record);
    if (!diff.empty()) {
      auto next = b.checkpoints.find(t + 1);
      if (next != b.checkpoints.end()) {
        Result<SafetensorsFile> f = ReadSafetensorsFile(JoinPath(b.dir, next->second));
        if (f.ok()) diff += ElementDifference(state, *f);
      }
      return fail(t, diff);
    }
    ++out.replayed;
  }
  if (seg.end == static_cast<int64_t>(recs.size())) {
    // The state after the last step is the one manifest.json's final roots (and so the final
    // weights) name.
    Result<std::pair<Digest256, Digest256>> roots = bundle::StateRoots(state, &pool);
    const json& fin = b.manifest["final"];
    if (!roots.ok() || Hex(roots->first) != fin["params_root"].get<std::string>() ||
        Hex(roots->second) != fin["optimizer_root"].get<std::string>()) {
      return fail(seg.end - 1,
                  "the replayed final state is not manifest.json's (final "
                  "params_root or optimizer_root differ)");
    }
  }
  if (confirm_stop) {
    const int64_t t = seg.end;
    const Digest256 prev = t == 0 ? b.steps.genesis : recs[static_cast<size_t>(t - 1)].hash;
    Result<bundle::StepOutcome> step = bundle::RunStep(
        **trainer, r.schedule, t, runtime::StepKeyOf(r.seed, t), prev, &state, &pool);
    if (!step.ok() || step->finite) {
      return fail(t, "step " + std::to_string(t) +
                         ": the bundle says the run stopped on a non-finite loss here, but the "
                         "replayed loss is finite");
    }
    const std::string reason = "step " + std::to_string(t) + ": " + step->nonfinite;
    if (reason != b.manifest["stop"]["reason"].get<std::string>()) {
      return fail(t, "manifest.json's stop reason is \"" +
                         b.manifest["stop"]["reason"].get<std::string>() + "\"; replay gives \"" +
                         reason + "\"");
    }
  }
  return out;
}

Check Replay(const Bundle& b, const Replayable& r, const VerifyOptions& o, int64_t* replayed) {
  const int64_t n = static_cast<int64_t>(b.steps.records.size());
  int64_t from = o.from_step.value_or(0), to = o.to_step.value_or(n);
  if (from < 0 || to > n || from > to) {
    return InputError("--steps " + std::to_string(from) + ":" + std::to_string(to) +
                      " is outside the bundle's steps 0:" + std::to_string(n));
  }
  // Start at the nearest checkpoint at or before `from`.
  int64_t start = 0;
  for (const auto& [done, path] : b.checkpoints) {
    if (done <= from) start = done;
  }
  std::vector<Segment> segments;
  int64_t begin = start;
  for (const auto& [done, path] : b.checkpoints) {
    if (done > begin && done < to) {
      segments.push_back({begin, done});
      begin = done;
    }
  }
  const bool confirm_stop = b.stopped && to == n;
  // An empty last segment still confirms a stop (a run stopped at step 0 has no records).
  if (begin < to || (confirm_stop && segments.empty())) segments.push_back({begin, to});
  if (segments.empty()) return std::nullopt;
  std::vector<SegmentResult> results(segments.size());
  std::atomic<size_t> done{0};
  ThreadPool pool(
      static_cast<size_t>(std::max(1, std::min<int>(o.jobs, static_cast<int>(segments.size())))));
  std::mutex mu;
  pool.ParallelFor(segments.size(), [&](size_t i) {
    results[i] = ReplaySegment(b, r, o, segments[i], confirm_stop && i + 1 == segments.size());
    size_t k = ++done;
    if (o.progress) {
      std::lock_guard<std::mutex> lock(mu);
      o.progress("replay: segment " + std::to_string(k) + "/" + std::to_string(segments.size()) +
                 " (steps " + std::to_string(segments[i].begin) + ".." +
                 std::to_string(segments[i].end - 1) + ") " +
                 (results[i].first_bad < 0 ? "ok" : "MISMATCH"));
    }
  });
  *replayed = 0;
  for (const SegmentResult& s : results) {
    *replayed += s.replayed;
    if (s.first_bad >= 0) return Fail(s.message);  // segments are in step order
  }
  // The last segment's final state is the recorded final state (its record has the roots).
  return std::nullopt;
}

}  // namespace

int VerifyReport::ExitCode() const {
  switch (outcome) {
    case Outcome::kVerified:
      return 0;
    case Outcome::kInputError:
      return 2;
    default:
      return 1;
  }
}

json VerifyReport::ToJson() const {
  static const char* kNames[] = {"verified", "failed", "incomplete", "input-error"};
  json phases_json = json::array();
  for (const PhaseReport& p : phases) {
    phases_json.push_back(
        {{"phase", p.name}, {"ok", p.ok}, {"message", p.message}, {"seconds", p.seconds}});
  }
  return {{"format", "detrain.verify-report"},
          {"format_version", 1},
          {"outcome", kNames[static_cast<int>(outcome)]},
          {"exit_code", ExitCode()},
          {"message", message},
          {"phases", phases_json},
          {"steps", steps},
          {"steps_replayed", steps_replayed},
          {"status", status},
          {"final_step_hash", final_step_hash},
          {"root_digest", root_digest}};
}

VerifyReport VerifyBundle(const VerifyOptions& o) {
  VerifyReport report;
  Bundle b;
  b.dir = o.bundle;
  while (b.dir.size() > 1 && b.dir.back() == '/') b.dir.pop_back();
  auto run_phase = [&](const char* name, const std::function<Check()>& fn) {
    if (o.progress) o.progress(std::string(name) + ": ...");
    auto start = std::chrono::steady_clock::now();
    Check c = fn();
    PhaseReport p;
    p.name = name;
    p.ok = !c.has_value();
    p.seconds = Seconds(start);
    p.message = c.has_value() ? c->message : "ok";
    report.phases.push_back(p);
    if (c.has_value()) {
      report.outcome = c->outcome;
      report.message = c->message;
    }
    if (o.progress) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.2f s", p.seconds);
      o.progress(std::string(name) + ": " + (p.ok ? "ok" : "FAILED") + " (" + secs + ")");
    }
    return p.ok;
  };
  if (!run_phase("integrity", [&] { return Integrity(b, o); })) return report;
  report.steps = static_cast<int64_t>(b.steps.records.size());
  report.root_digest = b.root_digest;
  report.final_step_hash = b.manifest["final"]["step_hash"].get<std::string>();
  report.status = b.manifest["status"].get<std::string>();
  Replayable r;
  if (o.recompile || o.replay) {
    if (!run_phase("recompile", [&] {
          Check c = Recompile(b, o, &r);
          if (!c.has_value() && !o.replay) c = CheckAllCheckpoints(b, r);
          return c;
        })) {
      return report;
    }
  }
  if (o.replay) {
    if (!run_phase("replay", [&] { return Replay(b, r, o, &report.steps_replayed); })) {
      return report;
    }
  }
  report.outcome = Outcome::kVerified;
  report.message = "verified: " + std::to_string(report.steps) + " steps" +
                   (o.replay      ? ", " + std::to_string(report.steps_replayed) + " replayed"
                    : o.recompile ? ", recompiled, not replayed"
                                  : ", integrity only (not recompiled, not replayed)") +
                   (report.status == "stopped"
                        ? "; the run stopped: " + b.manifest["stop"]["reason"].get<std::string>()
                        : "") +
                   "; final step hash " + report.final_step_hash;
  return report;
}

}  // namespace detrain::verify
