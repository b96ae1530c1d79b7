#include "tests/conformance/suite.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/onnx_import.h"

namespace fs = std::filesystem;

namespace rnnc::conformance {

std::string TestMeta::type_key() const {
  std::string key;
  for (const auto& [var, type] : types) key += (key.empty() ? "" : ",") + var + "=" + type;
  return key;
}

std::set<std::string> TestMeta::features() const {
  std::set<std::string> all = tags;
  for (const auto& [var, type] : types) all.insert(var + "=" + type);
  all.insert(cat("rank=", rank));
  all.insert(cat("opset=", opset));
  all.insert(boundaries.begin(), boundaries.end());
  return all;
}

namespace {

std::string joined(const std::set<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : " ") + item;
  return text;
}

std::set<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::set<std::string> words;
  std::string word;
  while (in >> word) words.insert(word);
  return words;
}

}  // namespace

void write_meta(const std::string& path, const TestMeta& meta) {
  std::ofstream out(path);
  out << "name " << meta.name << "\n"
      << "op " << meta.op << "\n"
      << "opset " << meta.opset << "\n"
      << "profile " << meta.profile << "\n"
      << "index " << meta.index << "\n"
      << "seed " << meta.seed << "\n";
  out << "types";
  for (const auto& [var, type] : meta.types) out << " " << var << "=" << type;
  out << "\n"
      << "rank " << meta.rank << "\n"
      << "boundaries " << joined(meta.boundaries) << "\n"
      << "tags " << joined(meta.tags) << "\n";
  if (!out) raise(ErrorKind::kIo, cat("cannot write '", path, "'"));
}

TestMeta read_meta(const std::string& path) {
  std::ifstream in(path);
  if (!in) raise(ErrorKind::kIo, cat("cannot read '", path, "'"));
  TestMeta meta;
  std::string line;
  while (std::getline(in, line)) {
    std::string key = line.substr(0, line.find(' '));
    std::string rest = line.size() > key.size() ? line.substr(key.size() + 1) : "";
    if (key == "name")
      meta.name = rest;
    else if (key == "op")
      meta.op = rest;
    else if (key == "opset")
      meta.opset = std::stoi(rest);
    else if (key == "profile")
      meta.profile = rest;
    else if (key == "index")
      meta.index = std::stoi(rest);
    else if (key == "seed")
      meta.seed = std::stoull(rest);
    else if (key == "rank")
      meta.rank = std::stoi(rest);
    else if (key == "boundaries")
      meta.boundaries = split_words(rest);
    else if (key == "tags")
      meta.tags = split_words(rest);
    else if (key == "types") {
      for (const auto& item : split_words(rest)) {
        size_t eq = item.find('=');
        if (eq != std::string::npos) meta.types[item.substr(0, eq)] = item.substr(eq + 1);
      }
    }
  }
  return meta;
}

void write_test_data(const std::string& dir,
                     const std::vector<std::pair<std::string, Tensor>>& inputs,
                     const std::vector<std::pair<std::string, Tensor>>& outputs) {
  fs::path data = fs::path(dir) / "test_data_set_0";
  fs::create_directories(data);
  for (size_t i = 0; i < inputs.size(); ++i) {
    write_tensor_pb((data / cat("input_", i, ".pb")).string(), inputs[i].second, inputs[i].first);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    write_tensor_pb((data / cat("output_", i, ".pb")).string(), outputs[i].second,
                    outputs[i].first);
  }
}

TestFiles read_test(const std::string& dir) {
  TestFiles files;
  files.dir = dir;
  files.model_path = (fs::path(dir) / "model.onnx").string();
  fs::path data = fs::path(dir) / "test_data_set_0";
  for (size_t i = 0;; ++i) {
    fs::path file = data / cat("input_", i, ".pb");
    if (!fs::exists(file)) break;
    std::string name;
    Tensor tensor = read_tensor_pb(file.string(), &name);
    files.inputs.emplace_back(name, tensor);
  }
  for (size_t i = 0;; ++i) {
    fs::path file = data / cat("output_", i, ".pb");
    if (!fs::exists(file)) break;
    files.expected.push_back(read_tensor_pb(file.string()));
  }
  return files;
}

std::vector<std::string> find_tests(const std::string& root) {
  std::vector<std::string> dirs;
  if (!fs::is_directory(root)) raise_invalid_input(cat("'", root, "' is not a directory"));
  for (const auto& entry : fs::directory_iterator(root)) {
    if (entry.is_directory() && fs::exists(entry.path() / "model.onnx")) {
      dirs.push_back(entry.path().string());
    }
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

}  // namespace rnnc::conformance
