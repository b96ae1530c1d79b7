// Einsum equation parsing (einsum.h).
#include "ir/shape_inference/einsum.h"

#include <algorithm>
#include <map>

#include "ir/error.h"

namespace rnnc {

namespace {

constexpr int kLetters = 52;

int letter_label(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// One term: its letters in order, and where its ellipsis sits (-1: none).
struct Term {
  std::vector<int> letters;
  int ellipsis_at = -1;
};

}  // namespace

std::string einsum_label_name(int label) {
  if (label < 26) return std::string(1, static_cast<char>('a' + label));
  if (label < kLetters) return std::string(1, static_cast<char>('A' + label - 26));
  return cat("...", label - kLetters);
}

EinsumEquation parse_einsum(const Node& node, const std::vector<int64_t>& ranks) {
  std::string text;
  for (char c : node.attr_string("equation", "")) {
    if (c != ' ') text += c;
  }
  auto fail = [&](const std::string& message) {
    raise_invalid_model(cat(node.describe(), ": attribute 'equation' = '",
                            node.attr_string("equation", ""), "' ", message));
  };
  if (!node.has_attr("equation")) {
    raise_invalid_model(cat(node.describe(), ": attribute 'equation' is required"));
  }
  size_t arrow = text.find("->");
  if (arrow != std::string::npos && text.find("->", arrow + 2) != std::string::npos) {
    fail("has more than one '->'");
  }
  auto parse_term = [&](const std::string& term) {
    Term parsed;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0) {
        if (parsed.ellipsis_at >= 0) fail("has two ellipses in one term");
        parsed.ellipsis_at = static_cast<int>(parsed.letters.size());
        i += 2;
        continue;
      }
      int label = letter_label(term[i]);
      if (label < 0) fail(cat("has '", term[i], "', which is not a letter or '...'"));
      parsed.letters.push_back(label);
    }
    return parsed;
  };
  std::vector<Term> terms;
  std::string left = text.substr(0, arrow);
  for (size_t start = 0;;) {
    size_t comma = left.find(',', start);
    terms.push_back(parse_term(left.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size()) {
    fail(cat("has ", terms.size(), " input terms for ", ranks.size(), " inputs"));
  }
  // The ellipsis covers the dims the letters leave; its rank is the widest such cover.
  int ellipsis_rank = 0;
  int any_cover = -1;  // the dims an ellipsis covers, once one is seen
  std::vector<int> covers;
  for (size_t i = 0; i < terms.size(); ++i) {
    int cover = static_cast<int>(ranks[i]) - static_cast<int>(terms[i].letters.size());
    if (cover < 0 || (cover > 0 && terms[i].ellipsis_at < 0)) {
      fail(cat("gives input ", i, " ", terms[i].letters.size(), " letters",
               terms[i].ellipsis_at >= 0 ? " and '...'" : "", " but it has rank ", ranks[i]));
    }
    // ONNX requires every '...' to cover the same number of dims (its shape inference rejects
    // numpy's broadcast of shorter ones); 1s among them still broadcast.
    if (terms[i].ellipsis_at >= 0 && !covers.empty() && any_cover >= 0 && cover != any_cover) {
      fail(cat("has '...' covering ", any_cover, " dims in one input and ", cover, " in input ", i,
               " (every '...' must cover the same number)"));
    }
    if (terms[i].ellipsis_at >= 0) any_cover = cover;
    covers.push_back(cover);
    ellipsis_rank = std::max(ellipsis_rank, cover);
  }
  EinsumEquation equation;
  equation.labels = kLetters + ellipsis_rank;
  std::map<int, int> occurrences;
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> axes;
    for (size_t j = 0; j <= terms[i].letters.size(); ++j) {
      if (static_cast<int>(j) == terms[i].ellipsis_at) {
        any_ellipsis = true;
        for (int k = 0; k < covers[i]; ++k)
          axes.push_back(kLetters + ellipsis_rank - covers[i] + k);
      }
      if (j < terms[i].letters.size()) {
        axes.push_back(terms[i].letters[j]);
        ++occurrences[terms[i].letters[j]];
      }
    }
    equation.inputs.push_back(axes);
  }
  if (arrow == std::string::npos) {
    if (any_ellipsis) {
      for (int k = 0; k < ellipsis_rank; ++k) equation.output.push_back(kLetters + k);
    }
    std::vector<std::pair<char, int>> once;  // ASCII order: uppercase first
    for (const auto& [label, count] : occurrences) {
      if (count == 1) once.emplace_back(einsum_label_name(label)[0], label);
    }
    std::sort(once.begin(), once.end());
    for (const auto& [name, label] : once) equation.output.push_back(label);
    return equation;
  }
  Term out = parse_term(text.substr(arrow + 2));
  std::vector<bool> used(static_cast<size_t>(kLetters), false);
  for (size_t j = 0; j <= out.letters.size(); ++j) {
    if (static_cast<int>(j) == out.ellipsis_at) {
      for (int k = 0; k < ellipsis_rank; ++k) equation.output.push_back(kLetters + k);
    }
    if (j == out.letters.size()) break;
    int label = out.letters[j];
    if (!occurrences.count(label)) {
      fail(cat("has output letter '", einsum_label_name(label), "', which no input has"));
    }
    if (used[static_cast<size_t>(label)]) {
      fail(cat("repeats output letter '", einsum_label_name(label), "'"));
    }
    used[static_cast<size_t>(label)] = true;
    equation.output.push_back(label);
  }
  if (out.ellipsis_at < 0 && ellipsis_rank > 0) {
    fail("drops the ellipsis dims from the output (write '...' after '->')");
  }
  return equation;
}

}  // namespace rnnc
