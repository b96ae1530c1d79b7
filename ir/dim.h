// Dim: one tensor dimension. Either a known size, a symbolic expression over named dynamic axes
// (ONNX dim_param: "seq", "batch"), or unknown. Symbolic dims are integer polynomials over axis
// names, so shape inference keeps relations exporters rely on: Reshape([seq, batch, 512] ->
// [-1, 512]) gives [seq*batch, 512], Concat along seq gives 2*seq, Slice(1:) gives seq - 1.
// Unknown (neither value nor name in the model, or not derivable) never compares equal to anything.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace rnnc {

class Dim {
 public:
  Dim() : unknown_(true) {}                     // unknown
  Dim(int64_t value);                           // NOLINT: known sizes convert implicitly
  static Dim symbol(const std::string& name);   // a named dynamic axis
  static Dim unknown() { return Dim(); }

  bool is_known() const;     // a plain integer
  bool is_unknown() const { return unknown_; }
  bool is_symbolic() const;  // depends on at least one axis name
  int64_t value() const;     // requires is_known()

  // Axis names this dim depends on, sorted.
  std::vector<std::string> symbols() const;
  // The value with every axis name bound, or nullopt if a name is unbound, the dim is unknown or
  // the value overflows int64.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t>& bindings) const;

  // A result whose coefficients overflow int64 (a model's absurd dims) is unknown.
  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, const Dim& b);
  // Exact division: this / divisor when every term divides evenly (seq*batch*4 / 4 = seq*batch,
  // seq*batch / batch = seq); unknown otherwise.
  Dim exact_div(const Dim& divisor) const;

  // Structural equality of the canonical polynomials; unknown dims are never equal.
  bool operator==(const Dim& other) const;
  bool operator!=(const Dim& other) const { return !(*this == other); }

  // "128", "seq", "2*seq", "batch*seq", "seq - 1", "?" for unknown.
  std::string to_string() const;

 private:
  using Monomial = std::vector<std::string>;  // sorted axis names, repeated for powers
  std::map<Monomial, int64_t> terms_;         // monomial -> nonzero coefficient; {} -> constant
  bool unknown_ = false;
};

using Shape = std::vector<Dim>;

std::string shape_to_string(const Shape& shape);  // "[seq, batch, 128]"
bool shape_is_known(const Shape& shape);
std::vector<int64_t> shape_values(const Shape& shape);  // requires shape_is_known
Shape shape_from_values(const std::vector<int64_t>& values);

// Whether `text`, a Dim's to_string() (the public TensorInfo::dims form), names one symbol
// ("batch"), not a size, "?" or an expression ("2*batch", "seq + 1").
bool is_symbol_text(const std::string& text);

}  // namespace rnnc
