// See fused_loops.h.
#include "runtime/cpu/fused_loops.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "attest/sha256.h"
#include "compiler/ir/op_enums.h"
#include "runtime/cpu/isa_kernels.h"

extern char** environ;

#ifndef DETRAIN_CXX_COMPILER
#define DETRAIN_CXX_COMPILER "c++"
#endif
#ifndef DETRAIN_CXX_COMPILER_ID
#define DETRAIN_CXX_COMPILER_ID "GNU"
#endif

namespace detrain::runtime::cpu {
namespace {

// The loops' `unary` on ISA kIsa: the evaluator's way to crmath's array forms (the generator
// calls only ops that have one: fused_loop.cc IsArrayUnary).
template <Isa kIsa>
void UnaryArray(int op, const float* in, float* out, int64_t n) {
  ArrayUnaryOn(kIsa, static_cast<ir::UnaryOp>(op), in, out, n);
}

using UnaryFn = void (*)(int, const float*, float*, int64_t);

UnaryFn UnaryFor(Isa isa) {
  switch (isa) {
    case Isa::kAvx512:
      return &UnaryArray<Isa::kAvx512>;
    case Isa::kAvx2:
      return &UnaryArray<Isa::kAvx2>;
    case Isa::kScalar:
      break;
  }
  return &UnaryArray<Isa::kScalar>;
}

// The target flag for `isa`: the vector unit the evaluator's file of that path compiles for.
std::vector<std::string> TargetFlags(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
    case Isa::kAvx512:
      return {"-march=x86-64-v4"};
    case Isa::kAvx2:
      return {"-march=x86-64-v3"};
    case Isa::kScalar:
      return {"-march=x86-64"};
  }
#endif
  (void)isa;
  return {};
}

// The last `limit` bytes of the file at `path` (a compiler's messages).
std::string Tail(const std::filesystem::path& path, size_t limit) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  std::string text = s.str();
  return text.size() > limit ? "..." + text.substr(text.size() - limit) : text;
}

// Runs argv (no shell) with stdout and stderr into `log`; its exit status, or an error.
Result<int> Spawn(const std::vector<std::string>& argv, const std::filesystem::path& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return Unavailable("cannot run the C++ compiler '" + argv[0] + "': " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status)
                           : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

// A private directory for one compile, removed with everything in it when this goes.
class TempDir {
 public:
  static Result<TempDir> Make() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / "detrain-loops-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr)
      return Unavailable("cannot make a directory in " + base.string() + ": " +
                         std::strerror(errno));
    TempDir d;
    d.path_ = tmpl;
    return d;
  }
  TempDir() = default;
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

Status WriteFile(const std::filesystem::path& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return Unavailable("cannot write " + path.string());
  return Status::Ok();
}

// The compiled-loop cache (docs/fused-loops.md): $XDG_CACHE_HOME/detrain/loops, else
// $HOME/.cache/detrain/loops, made 0700; none where neither is set or the directory is not this
// user's alone (a library there is code this process would run). The two variables choose only
// where compiled code is kept, as TMPDIR does for the compile itself: no value, stage or digest
// depends on them (DESIGN.md §2) — a library is found by the digest of its source, and the
// source's bits are the evaluator's.
bool PrivateToMe(const std::filesystem::path& p, bool directory) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return false;
  const bool kind = directory ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode);
  return kind && st.st_uid == ::geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

std::optional<std::filesystem::path> CacheDir() {
  std::filesystem::path base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && x[0] == '/') {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h != nullptr && h[0] == '/') {
    base = std::filesystem::path(h) / ".cache";
  } else {
    return std::nullopt;
  }
  const std::filesystem::path dir = base / "detrain" / "loops";
  std::error_code ec;
  std::filesystem::create_directories(dir.parent_path(), ec);
  ::mkdir(dir.c_str(), 0700);
  if (!PrivateToMe(dir, /*directory=*/true)) return std::nullopt;
  return dir;
}

// Where the library of `source` compiled by `compiler` with `flags` is kept: named by the
// SHA-256 of all three and of the compiler file's size and time (a changed compiler misses).
std::optional<std::filesystem::path> CachedLibrary(const std::string& compiler,
                                                   const std::vector<std::string>& flags,
                                                   const std::string& source) {
  const std::optional<std::filesystem::path> dir = CacheDir();
  if (!dir) return std::nullopt;
  struct stat st;
  std::string id = compiler + "\n";
  if (::stat(compiler.c_str(), &st) == 0) {
    id += std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
          std::to_string(st.st_mtim.tv_nsec) + "\n";
  }
  for (const std::string& f : flags) id += f + "\n";
  return *dir / (attest::Sha256Hex(id + source) + ".so");
}

bool SafeToLoad(const std::filesystem::path& lib) { return PrivateToMe(lib, /*directory=*/false); }

// Copies a just-compiled library into the cache: a private temporary file renamed into place,
// so that a concurrent reader sees the whole library or none. Best effort.
void Keep(const std::filesystem::path& lib, const std::filesystem::path& cached) {
  const std::filesystem::path tmp =
      cached.string() + ".tmp." + std::to_string(static_cast<long>(::getpid()));
  std::error_code ec;
  std::filesystem::copy_file(lib, tmp, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) ::chmod(tmp.c_str(), 0700);
  if (ec || ::rename(tmp.c_str(), cached.c_str()) != 0) std::filesystem::remove(tmp, ec);
}

}  // namespace

FusedLoops::FusedLoops(Isa isa, std::string compiler)
    : isa_(isa), compiler_(std::move(compiler)), unary_(UnaryFor(isa)) {}

FusedLoops::~FusedLoops() {
  for (void* h : handles_) ::dlclose(h);
}

std::string FusedLoops::Compiler() { return DETRAIN_CXX_COMPILER; }

void FusedLoops::Request(const codegen::cpu::LoopSpec& spec, LoopFn* slot) {
  // The text without its name identifies the function: the S shards' copies of one program
  // share one.
  std::string text = codegen::cpu::LoopFunction(spec, "@");
  auto [it, added] = names_.try_emplace(text, "dt_loop" + std::to_string(names_.size()));
  if (added) {
    const size_t at = text.find('@');
    unbuilt_.emplace_back(it->second, text.replace(at, 1, it->second));
  }
  pending_.emplace_back(it->second, slot);
  ++requests_;
}

Status FusedLoops::Build() {
  Status st = Compile();
  if (st.ok()) {
    for (const auto& [name, slot] : pending_) *slot = loaded_.at(name);
  }
  // Either way the requests are answered: a failed Build leaves their slots null (the kernels
  // keep the evaluator, or their device is discarded) and holds no pointer into them.
  pending_.clear();
  return st;
}

Status FusedLoops::Compile() {
  if (unbuilt_.empty()) return Status::Ok();
  std::string source(codegen::cpu::LoopPrelude());
  for (const auto& [name, text] : unbuilt_) source += "\n" + text;
  // IEEE arithmetic as the evaluator's files are compiled (DESIGN.md §2): no contraction, no
  // fast math. -fno-math-errno only lets sqrt be the instruction (errno is not a value).
  std::vector<std::string> flags = {
      "-std=c++20",      "-O2",   "-ffp-contract=off", "-fno-fast-math",
      "-fno-math-errno", "-fPIC", "-shared",           "-w"};
  // GCC's -O2 cost model ("very cheap") leaves the block loops scalar where a block's start
  // is not a constant, and "cheap" those with many operands; "dynamic" (-O3's) vectorizes them
  // all. Clang's -O2 vectorizes them as they are.
  if (std::string_view(DETRAIN_CXX_COMPILER_ID) == "GNU" && compiler_ == Compiler())
    flags.push_back("-fvect-cost-model=dynamic");
  for (std::string& f : TargetFlags(isa_)) flags.push_back(std::move(f));
  const std::optional<std::filesystem::path> cached = CachedLibrary(compiler_, flags, source);
  void* handle = nullptr;
  if (cached && SafeToLoad(*cached)) handle = ::dlopen(cached->c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    DETRAIN_ASSIGN_OR_RETURN(TempDir dir, TempDir::Make());
    const std::filesystem::path src = dir.path() / "loops.cc", lib = dir.path() / "loops.so",
                                log = dir.path() / "compiler.log";
    DETRAIN_RETURN_IF_ERROR(WriteFile(src, source));
    std::vector<std::string> argv = {compiler_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    for (const char* a : {"-o", lib.c_str(), src.c_str()}) argv.push_back(a);
    DETRAIN_ASSIGN_OR_RETURN(int rc, Spawn(argv, log));
    if (rc != 0) {
      return Unavailable("generated loops: the C++ compiler '" + compiler_ + "' failed (exit " +
                         std::to_string(rc) + "):\n" + Tail(log, 2000));
    }
    handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      return Unavailable(std::string("generated loops: cannot load the compiled loops: ") +
                         (why != nullptr ? why : "?"));
    }
    ++compiles_;
    if (cached) Keep(lib, *cached);
  }
  std::map<std::string, LoopFn> found;
  for (const auto& [name, text] : unbuilt_) {
    void* fn = ::dlsym(handle, name.c_str());
    if (fn == nullptr) {
      ::dlclose(handle);
      return Internal("generated loops: " + name + " is missing from the compiled library");
    }
    found[name] = reinterpret_cast<LoopFn>(fn);
  }
  handles_.push_back(handle);
  loaded_.merge(found);
  unbuilt_.clear();
  return Status::Ok();
}

}  // namespace detrain::runtime::cpu
