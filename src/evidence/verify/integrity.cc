// The integrity phase (verifier.h): the manifest, every file's size and Merkle root, the step
// chain, the checkpoints, the final weights and the split — and the helpers all phases use.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "attest/canonical_json.h"
#include "attest/merkle.h"
#include "attest/prng/lineage.h"
#include "base/file_io.h"
#include "base/fs.h"
#include "evidence/bundle/bundle_files.h"
#include "evidence/bundle/bundle_reader.h"
#include "evidence/sign/attestations.h"
#include "evidence/verify/manifest_check.h"
#include "evidence/verify/verifier_internal.h"

namespace detrain::verify::internal {

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

std::string NonCanonicalAt(const std::string& text, const std::string& canonical) {
  size_t i = 0;
  while (i < text.size() && i < canonical.size() && text[i] == canonical[i]) ++i;
  const size_t from = i < 24 ? 0 : i - 24;
  std::string near = text.substr(from, 64);
  for (char& c : near) {
    if (c < 0x20 || c > 0x7e) c = '.';  // a snippet of text, safe to print
  }
  return "first difference at byte " + std::to_string(i) + ", near: " + near;
}

std::string FloatText(uint32_t bits) {
  float f = bundle::FloatOfBits(bits);
  char s[64];
  std::snprintf(s, sizeof(s), "%.9g (0x%08x)", static_cast<double>(f), bits);
  return s;
}

// Everything read from the bundle by the integrity phase, used by the later ones.
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
    Result<int> fd = OpenBelow(dir, files[f].first);
    if (fd.ok()) {
      fds[f] = *fd;
    } else {
      error = fd.status();
    }
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
  Result<std::vector<std::string>> present = bundle::CheckBundleTree(b.dir);
  if (!present.ok()) return FailStatus(present.status());
  std::set<std::string> listed = {bundle::kManifest, bundle::kFinalWeights};
  std::vector<std::pair<std::string, uint64_t>> files;
  std::vector<std::string> recorded_roots;
  for (size_t i = 0; i < b.manifest.files.size(); ++i) {
    const Manifest::File& f = b.manifest.files[i];
    const std::string& path = f.path;
    if (!listed.insert(path).second) {
      return Fail("manifest.json lists " + path + " twice (field \"files[" + std::to_string(i) +
                  "].path\")");
    }
    files.emplace_back(path, f.size);
    recorded_roots.push_back(f.merkle_root);
    if (std::optional<int64_t> done = bundle::CheckpointStepsOf(path)) b.checkpoints[*done] = path;
  }
  for (const std::string& p : *present) {
    // Signed statements about the finished bundle: outside the manifest, checked by the
    // signatures phase.
    if (p.rfind(std::string(sign::kAttestationDir) + "/", 0) == 0) continue;
    if (listed.count(p) == 0) {
      if (p == bundle::kProgress) return Fail("progress.json is present: the bundle is incomplete");
      return Fail("extra file " + p + ": not listed in manifest.json (field \"files\")");
    }
  }
  std::set<std::string> have(present->begin(), present->end());
  for (const std::string& p : listed) {
    if (have.count(p) == 0) return Fail("missing file " + p + " (listed in manifest.json)");
  }
  for (const auto& [path, size] : files) {
    Result<uint64_t> actual = bundle::BundleFileSize(b.dir, path);
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
  Result<std::string> text =
      bundle::ReadBundleFile(b.dir, bundle::kSteps, bundle::kMaxLogFileBytes);
  if (!text.ok()) return FailStatus(text.status());
  Result<bundle::ParsedSteps> steps = bundle::ParseSteps(*text);
  if (!steps.ok()) return FailStatus(steps.status());
  b.steps = std::move(*steps);
  if (!b.steps.error.empty()) {
    return Fail("steps.jsonl line " + std::to_string(b.steps.error_line) + ": " + b.steps.error);
  }
  const Manifest& m = b.manifest;
  if (Hex(b.steps.genesis) != m.steps.genesis) {
    return Fail(
        "steps.jsonl line 1: field \"genesis\" differs from manifest.json's \"steps.genesis\"");
  }
  if (bundle::DigestPolicyName(b.steps.policy) != m.steps.state_digest) {
    return Fail(
        "steps.jsonl line 1: field \"state_digest\" differs from manifest.json's "
        "\"steps.state_digest\"");
  }
  const int64_t count = m.steps.count;
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
      return Fail("steps.jsonl line " + std::to_string(i + 2) + ": step " + std::to_string(i) +
                  ": its hash does not chain from step " +
                  std::to_string(static_cast<int64_t>(i) - 1) +
                  " (field \"hash\", or a field it covers — step, batch, key, "
                  "learning_rate_bits, loss_bits, state, roots, eval bits — or an earlier "
                  "record was altered)");
    }
    prev = r.hash;
  }
  if (Hex(prev) != m.final.step_hash) {
    return Fail("steps.jsonl line " + std::to_string(b.steps.records.size() + 1) +
                ": the last record's field \"hash\" differs from manifest.json's "
                "\"final.step_hash\"");
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
      return Fail(
          "steps.jsonl line " + std::to_string(line + 1) + " is not the canonical form of its " +
          (line == 0 ? std::string("header") : "record") + ": " +
          (why.empty() ? "whitespace, key order or number spelling differ; " +
                             NonCanonicalAt(std::string(got), canonical.ok() ? *canonical : "")
                       : why));
    }
    pos = end + 1;
  }
  // A complete run has every step, and its last record's roots are the final state's; a
  // stopped one has fewer (the final roots are checked against the replayed state).
  const int64_t planned = m.run.steps;
  if (b.stopped ? count >= planned : count != planned) {
    return Fail(std::string("manifest.json says the run ") +
                (b.stopped ? "stopped" : "is complete") + ", but steps.jsonl holds " +
                std::to_string(count) + " of its " + std::to_string(planned) +
                " steps (fields \"status\", \"steps.count\" and \"run.steps\")");
  }
  if (!b.stopped) {
    if (b.steps.records.empty()) return Fail("the bundle has no step records");
    const StepRecord& last = b.steps.records.back();
    const bool params =
        last.params_root.has_value() && Hex(*last.params_root) == m.final.params_root;
    if (!params || Hex(*last.optimizer_root) != m.final.optimizer_root) {
      return Fail(
          "manifest.json's final params_root or optimizer_root differs from the roots in the "
          "record of step " +
          std::to_string(last.step) + " (field \"final." +
          (params ? "optimizer_root" : "params_root") + "\"; steps.jsonl line " +
          std::to_string(last.step + 2) + ", field \"roots\")");
    }
  }
  return std::nullopt;
}

// The IR type of a state tensor's safetensors dtype (a state is f32 or s32; schemas/bundle.md).
std::optional<ir::ElementType> StateType(const SafeTensor& t) {
  std::optional<ir::ElementType> type = ir::ElementTypeFromSafetensors(t.dtype);
  if (type != ir::ElementType::kF32 && type != ir::ElementType::kS32) return std::nullopt;
  return type;
}

Result<Digest256> RootsOfFile(const SafetensorsFile& f, ThreadPool* pool) {
  std::vector<attest::TensorView> views;
  for (const SafeTensor& t : f.tensors) {
    std::optional<ir::ElementType> type = StateType(t);
    if (!type.has_value())
      return DataLoss("tensor \"" + t.name + "\" is " + t.dtype + ", not F32 or I32");
    attest::TensorView v;
    v.name = t.name;
    v.dtype = ir::ElementTypeName(*type);
    v.shape = t.shape;
    v.data = t.data;
    views.push_back(v);
  }
  return attest::StateSha256Root(views, pool);
}

// The __metadata__ of a safetensors file, reading only its header (the tensors are checked
// against their step record's roots when replay loads them, or in the recompile phase).
Result<std::map<std::string, std::string>> SafetensorsMetadata(const std::string& dir,
                                                               const std::string& relative) {
  const std::string path = JoinPath(dir, relative);
  DETRAIN_ASSIGN_OR_RETURN(uint64_t size, bundle::BundleFileSize(dir, relative));
  DETRAIN_ASSIGN_OR_RETURN(int fd, OpenBelow(dir, relative));
  std::string head(8, '\0');
  std::string header;
  Status st;
  if (size < 8 || ::pread(fd, head.data(), 8, 0) != 8) {
    st = DataLoss(path + ": shorter than a safetensors header");
  } else {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
      n = (n << 8) | static_cast<unsigned char>(head[static_cast<size_t>(i)]);
    if (n > size - 8) {
      st = DataLoss(path + ": safetensors header length " + std::to_string(n) +
                    " exceeds the file's " + std::to_string(size - 8) + " bytes after it");
    } else if (n > kMaxSafetensorsHeaderBytes) {
      st = DataLoss(path + ": safetensors header length " + std::to_string(n) +
                    " exceeds the limit of " + std::to_string(kMaxSafetensorsHeaderBytes) +
                    " bytes");
    } else {
      header.resize(n);
      if (::pread(fd, header.data(), n, 8) != static_cast<ssize_t>(n)) {
        st = IoError(path + ": short read");
      }
    }
  }
  ::close(fd);
  DETRAIN_RETURN_IF_ERROR(st);
  // Only "__metadata__" is kept: the header may list a million tensors.
  bool is_object = false;
  Result<std::optional<json>> parsed = attest::ParseJsonMember(header, "__metadata__", &is_object);
  if (!parsed.ok()) return DataLoss(path + ": header: " + std::string(parsed.status().message()));
  std::map<std::string, std::string> out;
  if (!is_object) return DataLoss(path + ": the safetensors header is not an object");
  if (parsed->has_value()) {
    const json& m = **parsed;
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
  const int64_t every = b.manifest.run.checkpoint_every;
  const int64_t planned = b.manifest.run.steps;
  const int64_t count = static_cast<int64_t>(b.steps.records.size());
  if (every > 0) {
    for (int64_t done = every; done <= count && done < planned; done += every) {
      if (b.checkpoints.count(done) == 0) {
        return Fail("missing checkpoint " + bundle::CheckpointPath(done) +
                    " (the schedule writes one after every " + std::to_string(every) +
                    " steps: manifest.json's field \"run.checkpoint_every\")");
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
    Result<std::map<std::string, std::string>> m = SafetensorsMetadata(b.dir, path);
    if (!m.ok()) return FailStatus(m.status());
    auto meta = [&](const char* k) {
      auto it = m->find(k);
      return it == m->end() ? std::string() : it->second;
    };
    if (meta("detrain.steps_done") != std::to_string(done)) {
      return Fail(path + ": holds the state after " + meta("detrain.steps_done") +
                  " steps, but its name says " + std::to_string(done) +
                  " (__metadata__ \"detrain.steps_done\")");
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
                    std::to_string(done - 1) + "'s record gives \"" + value +
                    "\" (steps.jsonl line " + std::to_string(done + 1) + ", field \"" +
                    (key == "detrain.step_hash"              ? "hash"
                     : key.find("root") != std::string::npos ? "roots"
                                                             : "step") +
                    "\")");
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
  DETRAIN_ASSIGN_OR_RETURN(std::string bytes,
                           bundle::ReadBundleFile(b.dir, path, bundle::kMaxTensorFileBytes));
  Result<SafetensorsFile> f = ParseSafetensors(bytes);
  if (!f.ok()) return DataLoss(path + ": " + std::string(f.status().message()));
  Result<std::string> canonical = SerializeSafetensors(*f);
  if (!canonical.ok() || *canonical != bytes) {
    return DataLoss(path + ": not the bytes the writer produces for its tensors and metadata (" +
                    (canonical.ok() ? FirstDifference(bytes, *canonical, false) + "; " +
                                          NonCanonicalAt(bytes, *canonical)
                                    : "") +
                    ")");
  }
  return f;
}

// A checkpoint's tensors are the state its step record's SHA-256 roots name.
Check CheckCheckpointState(const Bundle& b, int64_t done, const runtime::TrainState& state,
                           ThreadPool* pool) {
  const std::string& path = b.checkpoints.at(done);
  const StepRecord& r = b.steps.records[static_cast<size_t>(done - 1)];
  Result<std::pair<Digest256, Digest256>> roots = runtime::StateRoots(state, pool);
  if (!roots.ok()) return FailStatus(roots.status(), path);
  if (roots->first != *r.params_root || roots->second != *r.optimizer_root) {
    return Fail(path + ": its tensors are not the state step " + std::to_string(done - 1) +
                "'s record names (SHA-256 roots differ)");
  }
  return std::nullopt;
}

Status BundleRun::LoadCheckpoint(int64_t steps_done, runtime::TrainState* state) const {
  auto it = b_.checkpoints.find(steps_done);
  if (it == b_.checkpoints.end()) {
    return NotFound("no checkpoint after " + std::to_string(steps_done) + " steps");
  }
  const std::string& path = it->second;
  DETRAIN_ASSIGN_OR_RETURN(SafetensorsFile f, ReadCheckpoint(b_, path));
  if (Status s = runtime::LoadState(f, state); !s.ok()) {
    return DataLoss(path + ": " + std::string(s.message()));
  }
  ThreadPool pool(1);
  if (Check c = CheckCheckpointState(b_, steps_done, *state, &pool)) return DataLoss(c->message);
  return Status::Ok();
}

std::vector<int64_t> BundleRun::Checkpoints() const {
  std::vector<int64_t> done;
  for (const auto& [k, path] : b_.checkpoints) done.push_back(k);
  return done;
}

Digest256 BundleRun::HashBefore(int64_t t) const {
  return t == 0 ? b_.steps.genesis : b_.steps.records[static_cast<size_t>(t - 1)].hash;
}

// The first metadata entry or tensor where two safetensors files differ, for messages ("" when
// neither parses or they hold the same things).
std::string SafetensorsDifference(const std::string& have, const std::string& want) {
  Result<SafetensorsFile> a = ParseSafetensors(have), e = ParseSafetensors(want);
  if (!a.ok() || !e.ok()) return "";
  std::set<std::string> keys;
  for (const auto& [k, v] : a->metadata) keys.insert(k);
  for (const auto& [k, v] : e->metadata) keys.insert(k);
  for (const std::string& k : keys) {
    auto x = a->metadata.find(k), y = e->metadata.find(k);
    if (x == a->metadata.end()) return "__metadata__ \"" + k + "\" is missing";
    if (y == e->metadata.end()) return "__metadata__ \"" + k + "\" is not one the writer records";
    if (x->second != y->second) {
      return "__metadata__ \"" + k + "\" is \"" + x->second + "\", expected \"" + y->second + "\"";
    }
  }
  for (size_t i = 0; i < std::max(a->tensors.size(), e->tensors.size()); ++i) {
    if (i >= a->tensors.size()) return "tensor \"" + e->tensors[i].name + "\" is missing";
    if (i >= e->tensors.size()) return "tensor \"" + a->tensors[i].name + "\" is extra";
    const SafeTensor &x = a->tensors[i], &y = e->tensors[i];
    if (x.name != y.name) return "tensor \"" + x.name + "\" where \"" + y.name + "\" belongs";
    if (x.dtype != y.dtype) {
      return "tensor \"" + x.name + "\" field \"dtype\" is " + x.dtype + ", expected " + y.dtype;
    }
    if (x.shape != y.shape) return "tensor \"" + x.name + "\" field \"shape\" differs";
    if (x.data != y.data) return "tensor \"" + x.name + "\" holds other values";
  }
  return "the header's layout (\"data_offsets\", key order or padding) differs: " +
         NonCanonicalAt(have, want);
}

Check CheckFinalWeights(Bundle& b) {
  Result<std::string> bytes =
      bundle::ReadBundleFile(b.dir, bundle::kFinalWeights, bundle::kMaxTensorFileBytes);
  if (!bytes.ok()) return FailStatus(bytes.status());
  Result<SafetensorsFile> f = ParseSafetensors(*bytes);
  if (!f.ok()) return FailStatus(f.status(), bundle::kFinalWeights);
  const Manifest::Final& fin = b.manifest.final;
  ThreadPool pool(std::max(1u, std::thread::hardware_concurrency()));
  Result<Digest256> root = RootsOfFile(*f, &pool);
  if (!root.ok() || Hex(*root) != fin.params_root) {
    return Fail(std::string(bundle::kFinalWeights) +
                ": its tensors are not the final parameters (SHA-256 root differs)");
  }
  // The exact bytes the final state and the root digest give.
  runtime::TrainState params;
  for (const SafeTensor& t : f->tensors) {
    runtime::StateTensor s;
    s.name = t.name;
    s.role = plan::ParamRole::kParameter;
    std::optional<ir::ElementType> type = StateType(t);
    if (!type.has_value()) return Fail("final weights: bad tensor dtype");
    s.value = ir::Literal(ir::Shape(*type, t.shape));
    if (s.value.bytes().size() != t.data.size()) return Fail("final weights: bad tensor size");
    s.value.mutable_bytes() = t.data;
    params.push_back(std::move(s));
  }
  bundle::FinalState fs;
  fs.steps_done = fin.steps_done;
  attest::ParseDigestHex(fin.step_hash, &fs.step_hash);
  attest::ParseDigestHex(fin.params_root, &fs.params_root);
  Result<std::string> expected = bundle::FinalWeightsBytes(params, fs, b.root_digest);
  if (!expected.ok() || *expected != *bytes) {
    return Fail(std::string(bundle::kFinalWeights) +
                ": its metadata or layout differs from what the bundle's root digest and final "
                "state give (" +
                (expected.ok() ? SafetensorsDifference(*bytes, *expected) + "; " +
                                     FirstDifference(*bytes, *expected, false)
                               : "") +
                ")");
  }
  return std::nullopt;
}

Check CheckSplit(Bundle& b) {
  Result<SafetensorsFile> f = bundle::ReadBundleSafetensors(b.dir, bundle::kSplitFile);
  if (!f.ok()) return FailStatus(f.status());
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
  const int64_t rows = b.manifest.data_rows;
  // Before allocating one flag per row: `rows` comes from the manifest and may be huge.
  if (rows < 0 ||
      static_cast<uint64_t>(rows) != (train->data.size() + validation->data.size()) / 8) {
    return Fail(std::string(bundle::kSplitFile) + " holds " +
                std::to_string((train->data.size() + validation->data.size()) / 8) +
                " row indices; manifest.json says the data has " + std::to_string(rows) +
                " rows (field \"data.rows\")");
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

// environment.json is recorded, not claimed (schemas/bundle.md §4.10): no value is checked, but
// it must be one canonical JSON object, as the writer writes it (no key twice, no other spelling).
Check CheckEnvironment(const Bundle& b) {
  // Absent and unlisted: recompile names it among the files a bundle of this run holds.
  if (!PathExists(JoinPath(b.dir, bundle::kEnvironment))) return std::nullopt;
  Result<std::string> text = bundle::ReadBundleFile(b.dir, bundle::kEnvironment, 1 << 20);
  if (!text.ok()) return FailStatus(text.status());
  Result<json> j = attest::ParseJson(*text);
  if (!j.ok()) return FailStatus(j.status(), bundle::kEnvironment);
  if (!j->is_object()) return Fail(std::string(bundle::kEnvironment) + ": expected a JSON object");
  Result<std::string> canonical = attest::CanonicalJson(*j);
  if (!canonical.ok()) return FailStatus(canonical.status(), bundle::kEnvironment);
  if (*canonical + "\n" != *text) {
    return Fail(std::string(bundle::kEnvironment) +
                " is not in canonical form: " + NonCanonicalAt(*text, *canonical + "\n"));
  }
  return std::nullopt;
}

// lineage.jsonl parses and every recorded key recomputes from its parent (key-lineage.md §6);
// recompile then compares it with the lineage the run derives.
Check CheckLineage(const Bundle& b) {
  Result<std::string> text =
      bundle::ReadBundleFile(b.dir, bundle::kLineage, bundle::kMaxLogFileBytes);
  if (!text.ok()) return FailStatus(text.status());
  Result<prng::KeyLineage> parsed = prng::KeyLineage::FromJsonl(*text);
  if (!parsed.ok()) return FailStatus(parsed.status(), bundle::kLineage);
  if (Status s = prng::ReplayLineage(*parsed); !s.ok()) return FailStatus(s, bundle::kLineage);
  return std::nullopt;
}

Check Integrity(Bundle& b, const VerifyOptions& o) {
  if (!IsDirectory(b.dir)) return InputError(b.dir + ": no such bundle directory");
  // Before anything is read: a link or special file anywhere makes the bundle unreadable
  // (bundle/bundle_reader.h), as it does for every reader.
  if (Result<std::vector<std::string>> tree = bundle::CheckBundleTree(b.dir); !tree.ok()) {
    return FailStatus(tree.status());
  }
  if (!PathExists(JoinPath(b.dir, bundle::kManifest))) {
    std::string detail;
    if (Result<std::string> p = bundle::ReadBundleFile(b.dir, bundle::kProgress, 1 << 20); p.ok()) {
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
  Result<std::string> text =
      bundle::ReadBundleFile(b.dir, bundle::kManifest, bundle::kMaxJsonFileBytes);
  if (!text.ok()) return FailStatus(text.status(), "manifest.json");
  Result<json> manifest = attest::ParseJson(*text);
  if (!manifest.ok()) return FailStatus(manifest.status(), "manifest.json");
  Result<Manifest> typed = ReadManifest(std::move(*manifest));
  if (!typed.ok()) {
    const Status& s = typed.status();
    return s.code() == StatusCode::kInvalidArgument ? InputError(std::string(s.message()))
                                                    : FailStatus(s, "manifest.json");
  }
  b.manifest = std::move(*typed);
  // The writer writes canonical JSON; any other spelling of the same values is an edit.
  if (Result<std::string> canonical = attest::CanonicalJson(b.manifest.json);
      !canonical.ok() || *canonical + "\n" != *text) {
    return Fail("manifest.json is not in canonical form (it was edited): " +
                NonCanonicalAt(*text, canonical.ok() ? *canonical + "\n" : ""));
  }
  Result<std::string> root = bundle::ManifestRootDigest(b.manifest.json);
  if (!root.ok()) return FailStatus(root.status(), "manifest.json");
  b.root_digest = *root;
  if (*root != b.manifest.root_digest) {
    return Fail(
        "manifest.json: its root digest is not the SHA-256 of its contents (the manifest "
        "was edited)");
  }
  b.stopped = b.manifest.stopped;
  if (Check c = CheckFiles(b, o)) return c;
  if (Check c = CheckSteps(b)) return c;
  if (Check c = CheckCheckpoints(b)) return c;
  if (Check c = CheckFinalWeights(b)) return c;
  if (Check c = CheckSplit(b)) return c;
  if (Check c = CheckLineage(b)) return c;
  if (Check c = CheckEnvironment(b)) return c;
  Result<std::string> data =
      bundle::ReadBundleFile(b.dir, bundle::kDataRecord, bundle::kMaxJsonFileBytes);
  if (!data.ok()) return FailStatus(data.status());
  Result<json> dj = attest::ParseJson(*data);
  if (!dj.ok()) return FailStatus(dj.status(), bundle::kDataRecord);
  b.data_record = std::move(*dj);
  Result<std::vector<DataFileRecord>> data_files = ReadDataFiles(b.data_record);
  if (!data_files.ok()) return FailStatus(data_files.status(), bundle::kDataRecord);
  b.data_files = std::move(*data_files);
  return std::nullopt;
}

}  // namespace detrain::verify::internal
