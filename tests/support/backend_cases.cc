#include "tests/support/backend_cases.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

namespace fs = std::filesystem;

namespace rnnc::testing {

std::vector<BackendCase> discover_backend_cases(const std::string& suites) {
  std::vector<BackendCase> cases;
  std::stringstream list(suites);
  std::string suite;
  while (std::getline(list, suite, ',')) {
    const fs::path dir = fs::path(kBackendDataRoot) / suite;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::exists(entry.path() / "model.onnx")) {
        cases.push_back({suite, entry.path().filename().string(), entry.path().string()});
      }
    }
  }
  std::sort(cases.begin(), cases.end(),
            [](const auto& a, const auto& b) { return a.suite + a.name < b.suite + b.name; });
  return cases;
}

std::vector<std::string> backend_data_sets(const std::string& dir) {
  std::vector<std::string> sets;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0) {
      sets.push_back(entry.path().string());
    }
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

std::string backend_case_name(const BackendCase& test_case) {
  std::string name = test_case.suite + "_" + test_case.name;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

}  // namespace rnnc::testing
