// A small JSON value for the harness's raw results (benchmarks.json): objects keep insertion
// order so the file reads in the order the report is built.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace rnnc::bench {

class Json {
 public:
  Json() = default;  // null
  Json(double number) : kind_(Kind::kNumber), number_(number) {}
  Json(int number) : Json(static_cast<double>(number)) {}
  Json(int64_t number) : Json(static_cast<double>(number)) {}
  Json(size_t number) : Json(static_cast<double>(number)) {}
  Json(bool flag) : kind_(Kind::kBool), flag_(flag) {}
  Json(std::string text) : kind_(Kind::kString), text_(std::move(text)) {}
  Json(const char* text) : Json(std::string(text)) {}

  static Json object() {
    Json json;
    json.kind_ = Kind::kObject;
    return json;
  }
  static Json array() {
    Json json;
    json.kind_ = Kind::kArray;
    return json;
  }

  // Object member (replaced if present) / array element.
  Json& set(const std::string& key, Json value);
  Json& push(Json value);

  std::string dump(int indent = 1) const;

 private:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  void write(std::string& out, int indent, int depth) const;
  Kind kind_ = Kind::kNull;
  bool flag_ = false;
  double number_ = 0;
  std::string text_;
  std::vector<std::pair<std::string, Json>> members_;  // arrays use empty keys
};

}  // namespace rnnc::bench
