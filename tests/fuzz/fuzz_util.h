// Small helpers shared by the libFuzzer harnesses (tests/fuzz/*_fuzz.cc; docs/reliability.md,
// "Fuzzing"): a per-process scratch directory for the entry points that read files, and a
// check that aborts with a message, which libFuzzer reports as a crash with this input.
//
// Thread safety: libFuzzer calls a harness from one thread; these helpers assume that.
#ifndef DETRAIN_TESTS_FUZZ_FUZZ_UTIL_H_
#define DETRAIN_TESTS_FUZZ_FUZZ_UTIL_H_

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace detrain::fuzz {

// A fresh directory for this process, under $TMPDIR (or /tmp), removed at exit.
inline const std::string& ScratchDir() {
  // Never destroyed: the exit handler that removes the directory runs after static destructors.
  static const std::string* const dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string base = (tmp != nullptr && *tmp != '\0') ? tmp : "/tmp";
    auto* d = new std::string(base + "/detrain-fuzz-" + std::to_string(getpid()));
    std::filesystem::remove_all(*d);
    std::filesystem::create_directories(*d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(ScratchDir(), ec);
    });
    return d;
  }();
  return *dir;
}

// Writes `bytes` to `path` (truncating); aborts if it cannot: the harness itself is broken then.
inline void WriteBytes(const std::string& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    std::fprintf(stderr, "fuzz harness: cannot write %s\n", path.c_str());
    std::abort();
  }
}

// A property of the code under test does not hold: report it as a crash with this input.
[[noreturn]] inline void PropertyFailed(std::string_view what, std::string_view detail) {
  std::fprintf(stderr, "fuzz property failed: %.*s\n%.*s\n", static_cast<int>(what.size()),
               what.data(), static_cast<int>(detail.size()), detail.data());
  std::abort();
}

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

}  // namespace detrain::fuzz

#endif  // DETRAIN_TESTS_FUZZ_FUZZ_UTIL_H_
