#include "tests/conformance/findings.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace rnnc::conformance {

namespace {

// Splits on spaces, keeping "quoted text" (the quotes dropped) as one token.
std::vector<std::string> tokens(const std::string& text) {
  std::vector<std::string> out;
  std::string current;
  bool quoted = false;
  bool any = false;
  for (char c : text) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) out.push_back(current);
      current.clear();
      any = false;
    } else {
      current += c;
      any = true;
    }
  }
  if (any) out.push_back(current);
  return out;
}

bool has_feature(const std::set<std::string>& features, const std::string& wanted) {
  size_t bar = wanted.find('|');
  if (bar != std::string::npos) {
    return has_feature(features, wanted.substr(0, bar)) ||
           has_feature(features, wanted.substr(bar + 1));
  }
  if (!wanted.empty() && wanted.back() == '*') {
    std::string prefix = wanted.substr(0, wanted.size() - 1);
    for (const auto& feature : features) {
      if (feature.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }
  return features.count(wanted) != 0;
}

}  // namespace

std::vector<Finding> load_findings(const std::string& path) {
  std::ifstream in(path);
  if (!in) raise(ErrorKind::kIo, cat("cannot read findings list '", path, "'"));
  std::vector<Finding> findings;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    size_t colon = line.find(" : ");
    if (colon == std::string::npos) {
      raise_invalid_input(cat(path, ":", number,
                              ": expected '<id> <ops> <outcome> [features] "
                              ": <explanation>'"));
    }
    std::vector<std::string> words = tokens(line.substr(0, colon));
    if (words.size() < 3) {
      raise_invalid_input(cat(path, ":", number, ": needs an id, an op (or *) and an outcome"));
    }
    Finding finding;
    finding.id = words[0];
    if (words[1] != "*") {
      std::stringstream ops(words[1]);
      std::string op;
      while (std::getline(ops, op, ',')) finding.ops.push_back(op);
    }
    finding.outcome = words[2];
    if (finding.outcome != "mismatch" && finding.outcome != "error" && finding.outcome != "crash" &&
        finding.outcome != "any") {
      raise_invalid_input(cat(path, ":", number, ": outcome '", finding.outcome,
                              "' is not mismatch, error, crash or any"));
    }
    for (size_t k = 3; k < words.size(); ++k) {
      const std::string& word = words[k];
      if (word.rfind("msg~", 0) == 0)
        finding.message_contains.push_back(word.substr(4));
      else if (word[0] == '!')
        finding.excluded.push_back(word.substr(1));
      else
        finding.required.push_back(word);
    }
    finding.explanation = line.substr(colon + 3);
    findings.push_back(finding);
  }
  return findings;
}

const Finding* match_finding(const std::vector<Finding>& findings, const TestMeta& meta,
                             const std::string& outcome, const std::string& message) {
  std::set<std::string> features = meta.features();
  for (const Finding& finding : findings) {
    if (!finding.ops.empty() &&
        std::find(finding.ops.begin(), finding.ops.end(), meta.op) == finding.ops.end()) {
      continue;
    }
    if (finding.outcome != "any" && finding.outcome != outcome) continue;
    bool matches = true;
    for (const auto& wanted : finding.required) matches = matches && has_feature(features, wanted);
    for (const auto& unwanted : finding.excluded) {
      matches = matches && !has_feature(features, unwanted);
    }
    for (const auto& text : finding.message_contains) {
      matches = matches && message.find(text) != std::string::npos;
    }
    if (matches) return &finding;
  }
  return nullptr;
}

}  // namespace rnnc::conformance
