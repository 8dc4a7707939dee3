// See environment.h.
#include "evidence/bundle/environment.h"

#include <google/protobuf/stubs/common.h>
#include <openssl/crypto.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <xxhash.h>

#include <fstream>
#include <thread>

namespace detrain::bundle {
namespace {

std::string CpuModel() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

}  // namespace

nlohmann::json EnvironmentJson(const runtime::ExecutorOptions& options, Isa isa,
                               const std::vector<std::string>& devices,
                               const std::string& detrain_version, const std::string& program) {
  std::string absolute = program;
  if (absolute.empty() || absolute[0] != '/') {
    char cwd[4096];
    if (::getcwd(cwd, sizeof(cwd)) != nullptr) absolute = std::string(cwd) + "/" + program;
  }
  struct utsname u;
  nlohmann::json machine = nlohmann::json::object();
  if (::uname(&u) == 0) {
    machine = {{"system", u.sysname}, {"release", u.release}, {"arch", u.machine}};
  }
  machine["cpu"] = CpuModel();
  machine["hardware_threads"] = std::thread::hardware_concurrency();
  return {{"format", "detrain.environment"},
          {"format_version", 1},
          {"note", "recorded for the auditor; not part of the reproducibility claim"},
          {"machine", machine},
          {"backend", runtime::BackendName(options.backend)},
          {"device_list", devices},
          {"program", absolute},
          {"isa", IsaName(isa)},
          {"threads", options.threads},
          {"devices", options.devices},
          {"detrain", detrain_version},
          {"toolchain",
           {{"compiler", __VERSION__},
            {"openssl", OpenSSL_version(OPENSSL_VERSION)},
            {"protobuf", std::to_string(GOOGLE_PROTOBUF_VERSION)},
            {"xxhash", std::to_string(XXH_versionNumber())}}}};
}

}  // namespace detrain::bundle
