// A directory under the system's temporary directory, unique to this process and object, removed
// with everything in it when the object goes. Header-only.
#pragma once

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace rnnc::testing {

class TempDir {
 public:
  // `prefix` names the test in the directory's name: /tmp/<prefix>_<pid>_<n>.
  explicit TempDir(const std::string& prefix, bool create = true)
      : path_(std::filesystem::temp_directory_path() /
              (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(next()))) {
    if (create) std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path() const { return path_.string(); }

 private:
  static int next() {
    static std::atomic<int> counter{0};
    return counter++;
  }
  std::filesystem::path path_;
};

}  // namespace rnnc::testing
