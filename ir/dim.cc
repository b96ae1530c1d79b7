#include "ir/dim.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>

#include "ir/error.h"

namespace rnnc {

Dim::Dim(int64_t value) {
  if (value != 0) terms_[{}] = value;
}

Dim Dim::symbol(const std::string& name) {
  Dim dim;
  dim.unknown_ = false;
  dim.terms_[{name}] = 1;
  return dim;
}

bool Dim::is_known() const {
  return !unknown_ && (terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()));
}

bool Dim::is_symbolic() const { return !unknown_ && !is_known(); }

int64_t Dim::value() const {
  RNNC_CHECK(is_known(), "dim ", to_string(), " is not a known size");
  return terms_.empty() ? 0 : terms_.begin()->second;
}

std::vector<std::string> Dim::symbols() const {
  std::vector<std::string> names;
  for (const auto& [monomial, coefficient] : terms_) {
    names.insert(names.end(), monomial.begin(), monomial.end());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::optional<int64_t> Dim::evaluate(const std::map<std::string, int64_t>& bindings) const {
  if (unknown_) return std::nullopt;
  int64_t total = 0;
  for (const auto& [monomial, coefficient] : terms_) {
    int64_t term = coefficient;
    for (const auto& name : monomial) {
      auto it = bindings.find(name);
      if (it == bindings.end() || __builtin_mul_overflow(term, it->second, &term)) {
        return std::nullopt;
      }
    }
    if (__builtin_add_overflow(total, term, &total)) return std::nullopt;
  }
  return total;
}

Dim operator+(const Dim& a, const Dim& b) {
  if (a.unknown_ || b.unknown_) return Dim::unknown();
  Dim sum = a;
  for (const auto& [monomial, coefficient] : b.terms_) {
    int64_t& slot = sum.terms_[monomial];
    if (__builtin_add_overflow(slot, coefficient, &slot)) return Dim::unknown();
    if (slot == 0) sum.terms_.erase(monomial);
  }
  return sum;
}

Dim operator-(const Dim& a, const Dim& b) { return a + Dim(-1) * b; }

Dim operator*(const Dim& a, const Dim& b) {
  if (a.unknown_ || b.unknown_) return Dim::unknown();
  Dim product(0);
  for (const auto& [ma, ca] : a.terms_) {
    for (const auto& [mb, cb] : b.terms_) {
      Dim::Monomial monomial = ma;
      monomial.insert(monomial.end(), mb.begin(), mb.end());
      std::sort(monomial.begin(), monomial.end());
      int64_t term = 0;
      int64_t& slot = product.terms_[monomial];
      if (__builtin_mul_overflow(ca, cb, &term) || __builtin_add_overflow(slot, term, &slot)) {
        return Dim::unknown();
      }
      if (slot == 0) product.terms_.erase(monomial);
    }
  }
  return product;
}

Dim Dim::exact_div(const Dim& divisor) const {
  if (unknown_ || divisor.unknown_ || divisor.terms_.size() != 1) return Dim::unknown();
  const auto& [divisor_monomial, divisor_coefficient] = *divisor.terms_.begin();
  if (divisor_coefficient == 0) return Dim::unknown();
  Dim quotient(0);
  for (const auto& [monomial, coefficient] : terms_) {
    // The smallest int64 over -1 overflows.
    if (divisor_coefficient == -1 && coefficient == std::numeric_limits<int64_t>::min()) {
      return Dim::unknown();
    }
    if (coefficient % divisor_coefficient != 0) return Dim::unknown();
    // Remove each factor of the divisor's monomial from this monomial (multiset difference).
    Monomial remaining = monomial;
    for (const auto& name : divisor_monomial) {
      auto it = std::find(remaining.begin(), remaining.end(), name);
      if (it == remaining.end()) return Dim::unknown();
      remaining.erase(it);
    }
    quotient.terms_[remaining] = coefficient / divisor_coefficient;
  }
  return quotient;
}

bool Dim::operator==(const Dim& other) const {
  if (unknown_ || other.unknown_) return false;
  return terms_ == other.terms_;
}

std::string Dim::to_string() const {
  if (unknown_) return "?";
  if (terms_.empty()) return "0";
  std::ostringstream out;
  bool first = true;
  // Symbolic terms first (highest degree first), the constant last: "2*seq + 1".
  std::vector<std::pair<Monomial, int64_t>> ordered(terms_.begin(), terms_.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) {
    return x.first.size() > y.first.size();
  });
  for (const auto& [monomial, coefficient] : ordered) {
    // As unsigned: the smallest int64 coefficient has no positive int64 magnitude.
    const uint64_t magnitude = coefficient < 0 ? uint64_t{0} - static_cast<uint64_t>(coefficient)
                                               : static_cast<uint64_t>(coefficient);
    if (first) {
      if (coefficient < 0) out << "-";
    } else {
      out << (coefficient < 0 ? " - " : " + ");
    }
    first = false;
    bool wrote = false;
    if (magnitude != 1 || monomial.empty()) {
      out << magnitude;
      wrote = true;
    }
    for (const auto& name : monomial) {
      if (wrote) out << "*";
      out << name;
      wrote = true;
    }
  }
  return out.str();
}

std::string shape_to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ", ";
    out += shape[i].to_string();
  }
  return out + "]";
}

bool shape_is_known(const Shape& shape) {
  return std::all_of(shape.begin(), shape.end(), [](const Dim& d) { return d.is_known(); });
}

std::vector<int64_t> shape_values(const Shape& shape) {
  std::vector<int64_t> values;
  values.reserve(shape.size());
  for (const auto& dim : shape) values.push_back(dim.value());
  return values;
}

Shape shape_from_values(const std::vector<int64_t>& values) {
  return Shape(values.begin(), values.end());
}

bool is_symbol_text(const std::string& text) {
  if (text.empty() || text == "?" || (text[0] >= '0' && text[0] <= '9')) return false;
  return text.find_first_of(" +-*/%()") == std::string::npos;
}

}  // namespace rnnc
