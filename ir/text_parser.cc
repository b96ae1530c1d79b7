// A hand-written recursive-descent parser over the text, one function per construct of
// docs/ir.md. Newlines are whitespace (the printer's one-statement-per-line layout is not needed to
// parse), and values must be defined above their first use, which the printer's topological order
// guarantees; that keeps "use of undefined value" errors at the exact use.
#include "ir/text_parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "ir/contrib_ops.h"
#include "ir/error.h"
#include "ir/legacy_opsets.h"
#include "ir/op_schema.h"
#include "ir/printer.h"

namespace rnnc {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_identifier_char(char c) { return is_alpha(c) || is_digit(c) || c == '_'; }
bool is_name_char(char c) { return is_identifier_char(c) || c == '.' || c == '-' || c == '/'; }

// Length of the bare name at text[pos] (0 if none). A ':' belongs to the name only inside "::" or
// before a digit, so "%onnx::Add_3: f32[2]" and "%input:0: f32[2]" read as the names they are.
size_t bare_name_length(const std::string& text, size_t pos) {
  size_t end = pos;
  while (end < text.size()) {
    char c = text[end];
    if (is_name_char(c)) {
      ++end;
    } else if (c == ':' && end + 1 < text.size() && text[end + 1] == ':') {
      end += 2;
    } else if (c == ':' && end + 1 < text.size() && is_digit(text[end + 1])) {
      ++end;
    } else {
      break;
    }
  }
  return end - pos;
}

size_t identifier_length(const std::string& text, size_t pos) {
  size_t end = pos;
  while (end < text.size() && is_identifier_char(text[end])) ++end;
  return end - pos;
}

bool is_integer_text(const std::string& text) {
  size_t start = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (start == text.size()) return false;
  return std::all_of(text.begin() + static_cast<std::ptrdiff_t>(start), text.end(), is_digit);
}

uint32_t folded_hash(const Tensor& tensor) {
  uint64_t hash = tensor_hash(tensor);
  return static_cast<uint32_t>(hash ^ (hash >> 32));
}

std::string hex8(uint32_t value) {
  std::ostringstream out;
  out << std::hex;
  out.width(8);
  out.fill('0');
  out << value;
  return out.str();
}

class TextParser {
 public:
  TextParser(const std::string& text, const std::string& source) : text_(text), source_(source) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < text_.size(); ++i) {
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
    }
  }

  std::unique_ptr<Model> parse_model() {
    auto model = std::make_unique<Model>();
    parse_header(*model);
    opsets_ = &model->opsets;
    model->graph = std::make_unique<Graph>("main");
    parse_graph(*model->graph);
    if (!at_end()) fail_expected("end of input after the main graph");
    infer(*model);
    return model;
  }

 private:
  static constexpr int kMaxDepth = 64;

  // ---- positions and errors ------------------------------------------------------------------

  std::string line_column(size_t offset) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    return cat(line, ":", offset - line_starts_[line - 1] + 1);
  }

  [[noreturn]] void fail_at(size_t offset, const std::string& message,
                            ErrorKind kind = ErrorKind::kInvalidModel) const {
    raise(kind, cat(source_, ":", line_column(offset), ": ", message));
  }

  // "expected <what>, got '<next token>'" at the next token.
  [[noreturn]] void fail_expected(const std::string& what) {
    skip_space();
    fail_at(pos_, cat("expected ", what, ", got ", describe_next()));
  }

  std::string describe_next() const {
    if (pos_ >= text_.size()) return "end of input";
    // The quoted string or name starting at `start`, up to its closing quote or the line's end.
    auto quoted_length = [&](size_t start) {
      char quote = text_[start];
      size_t end = start + 1;
      while (end < text_.size() && text_[end] != quote && text_[end] != '\n') {
        end += text_[end] == '\\' ? 2 : 1;
      }
      return std::min(end + 1, text_.size()) - start;
    };
    char c = text_[pos_];
    size_t length = 1;
    if (c == '%' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
      length += quoted_length(pos_ + 1);
    } else if (c == '%') {
      length += bare_name_length(text_, pos_ + 1);
    } else if (c == '"' || c == '\'') {
      length = quoted_length(pos_);
    } else if (is_name_char(c)) {
      length = bare_name_length(text_, pos_);
    }
    std::string token = text_.substr(pos_, std::min<size_t>(length, 40));
    if (length > 40) token += "...";
    return "'" + token + "'";
  }

  // ---- the cursor -----------------------------------------------------------------------------

  // Skips whitespace and `;` comments (to the end of the line).
  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == ';') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool at_end() {
    skip_space();
    return pos_ >= text_.size();
  }

  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }

  bool consume(char c) {
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c, const std::string& context) {
    if (!consume(c)) fail_expected(cat("'", c, "' ", context));
  }

  // The bare name at the cursor, not consumed.
  std::string peek_word() {
    skip_space();
    return text_.substr(pos_, bare_name_length(text_, pos_));
  }

  // The first non-space character after the bare name at the cursor.
  char peek_after_word() {
    size_t saved = pos_;
    pos_ += peek_word().size();
    char next = peek();
    pos_ = saved;
    return next;
  }

  bool consume_keyword(const std::string& keyword) {
    if (peek_word() != keyword) return false;
    pos_ += keyword.size();
    return true;
  }

  std::string read_identifier() {
    skip_space();
    std::string word = text_.substr(pos_, identifier_length(text_, pos_));
    pos_ += word.size();
    return word;
  }

  // ---- lexemes --------------------------------------------------------------------------------

  // A string in `quote`s with the printer's escapes (\" \' \\ \xNN), plus \n \t \r.
  std::string parse_string(char quote = '"') {
    skip_space();
    size_t start = pos_;
    if (pos_ >= text_.size() || text_[pos_] != quote) {
      fail_expected(quote == '"' ? "a string" : "a quoted name");
    }
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') {
        fail_at(start, "unterminated string (missing the closing " + std::string(1, quote) + ")");
      }
      char c = text_[pos_++];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail_at(pos_ - 1, "unterminated escape in a string");
      char escaped = text_[pos_++];
      switch (escaped) {
        case '"':
        case '\'':
        case '\\':
          out += escaped;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'x': {
          auto hex = [](char h) -> int {
            if (is_digit(h)) return h - '0';
            if (h >= 'a' && h <= 'f') return h - 'a' + 10;
            if (h >= 'A' && h <= 'F') return h - 'A' + 10;
            return -1;
          };
          int high = pos_ < text_.size() ? hex(text_[pos_]) : -1;
          int low = pos_ + 1 < text_.size() ? hex(text_[pos_ + 1]) : -1;
          if (high < 0 || low < 0) fail_at(pos_ - 2, "expected two hex digits after '\\x'");
          out += static_cast<char>(high * 16 + low);
          pos_ += 2;
          break;
        }
        default:
          fail_at(pos_ - 2, cat("unknown escape '\\", escaped, "' in a string"));
      }
    }
    return out;
  }

  // A value, graph or attribute name: bare or a quoted string.
  std::string parse_name(const std::string& what) {
    if (peek() == '"') return parse_string();
    size_t length = bare_name_length(text_, pos_);
    if (length == 0) fail_expected(what);
    std::string name = text_.substr(pos_, length);
    pos_ += length;
    return name;
  }

  // '%' name.
  std::string parse_value_name(const std::string& what) {
    if (!consume('%')) fail_expected(what);
    if (peek() != '"' && bare_name_length(text_, pos_) == 0) {
      fail_expected("a value name after '%'");
    }
    return parse_name("a value name after '%'");
  }

  // The text of a number: [+-] digits [. digits] [e [+-] digits], or [+-] inf / nan. Empty if the
  // cursor is not at one.
  std::string number_text() {
    skip_space();
    size_t start = pos_;
    size_t end = pos_;
    if (end < text_.size() && (text_[end] == '-' || text_[end] == '+')) ++end;
    if (end < text_.size() && is_alpha(text_[end])) {
      size_t word = identifier_length(text_, end);
      std::string lower = text_.substr(end, word);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (lower != "inf" && lower != "nan" && lower != "infinity") return "";
      end += word;
    } else {
      size_t digits_start = end;
      while (end < text_.size() && is_digit(text_[end])) ++end;
      if (end < text_.size() && text_[end] == '.') {
        ++end;
        while (end < text_.size() && is_digit(text_[end])) ++end;
      }
      if (end == digits_start || (end == digits_start + 1 && text_[digits_start] == '.')) {
        return "";
      }
      if (end < text_.size() && (text_[end] == 'e' || text_[end] == 'E')) {
        size_t exponent = end + 1;
        if (exponent < text_.size() && (text_[exponent] == '-' || text_[exponent] == '+')) {
          ++exponent;
        }
        if (exponent < text_.size() && is_digit(text_[exponent])) {
          end = exponent;
          while (end < text_.size() && is_digit(text_[end])) ++end;
        }
      }
    }
    pos_ = end;
    return text_.substr(start, end - start);
  }

  int64_t to_int64(const std::string& text, size_t at, const std::string& what) const {
    if (!is_integer_text(text)) fail_at(at, cat(what, " must be an integer, got '", text, "'"));
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) fail_at(at, cat("integer ", text, " is out of range for int64"));
    return value;
  }

  int64_t parse_int(const std::string& what) {
    skip_space();
    size_t at = pos_;
    std::string text = number_text();
    if (text.empty()) fail_expected(what);
    return to_int64(text, at, what);
  }

  // A floating value in `dtype`'s precision (f64 parses as double, everything else as float).
  double to_floating(const std::string& text, size_t at, DType dtype) const {
    errno = 0;
    char* end = nullptr;
    double value = dtype == DType::kFloat64 ? std::strtod(text.c_str(), &end)
                                            : std::strtof(text.c_str(), &end);
    if (end != text.c_str() + text.size()) fail_at(at, cat("bad number '", text, "'"));
    if (errno == ERANGE && std::isinf(value)) {
      fail_at(at, cat("number ", text, " is out of range for ", dtype_name(dtype)));
    }
    return value;
  }

  // ---- types and constants --------------------------------------------------------------------

  DType parse_dtype() {
    skip_space();
    size_t at = pos_;
    std::string word = read_identifier();
    if (word.empty()) fail_expected("an element type (f32, i64, ...)");
    auto dtype = dtype_from_name(word);
    if (!dtype) {
      fail_at(at, cat("unknown element type '", word, "' (expected f32, f64, f16, bf16, i8, i16, ",
                      "i32, i64, u8, u16, u32, u64, bool, string, c64 or c128)"));
    }
    return *dtype;
  }

  // A dim: '?', or a polynomial of sizes and axis names ("2*seq", "batch*seq", "seq - 1").
  Dim parse_dim() {
    if (consume('?')) return Dim::unknown();
    Dim total = parse_dim_term();
    while (true) {
      if (consume('+')) {
        total = total + parse_dim_term();
      } else if (consume('-')) {
        total = total - parse_dim_term();
      } else {
        return total;
      }
    }
  }

  Dim parse_dim_term() {
    bool negative = consume('-');
    Dim product = parse_dim_factor();
    while (consume('*')) product = product * parse_dim_factor();
    return negative ? Dim(0) - product : product;
  }

  Dim parse_dim_factor() {
    char c = peek();
    if (c == '"') return Dim::symbol(parse_string());
    if (is_alpha(c) || c == '_') return Dim::symbol(read_identifier());
    if (is_digit(c)) {
      size_t at = pos_;
      size_t end = pos_;
      while (end < text_.size() && is_digit(text_[end])) ++end;
      std::string digits = text_.substr(pos_, end - pos_);
      pos_ = end;
      return Dim(to_int64(digits, at, "a dim"));
    }
    fail_expected("a dim (a size, an axis name or '?')");
  }

  // A value type: a tensor type, seq<tensor type>, opt<tensor type> or opt<seq<tensor type>>.
  TensorType parse_type() {
    if (peek_word() == "seq" && peek_after_word() == '<') {
      consume_keyword("seq");
      expect('<', "after 'seq'");
      TensorType type = parse_tensor_type();
      expect('>', "after a sequence's element type");
      type.kind = ValueKind::kSequence;
      return type;
    }
    if (peek_word() == "opt" && peek_after_word() == '<') {
      consume_keyword("opt");
      expect('<', "after 'opt'");
      skip_space();
      size_t at = pos_;
      TensorType type = parse_type();
      if (type.kind == ValueKind::kOptionalTensor || type.kind == ValueKind::kOptionalSequence) {
        fail_at(at, "an optional holds a tensor or a sequence, not another optional");
      }
      expect('>', "after an optional's element type");
      type.kind = type.kind == ValueKind::kSequence ? ValueKind::kOptionalSequence
                                                     : ValueKind::kOptionalTensor;
      return type;
    }
    return parse_tensor_type();
  }

  TensorType parse_tensor_type() {
    TensorType type;
    type.dtype = parse_dtype();
    expect('[', "after the element type");
    if (peek() == '?' && text_.compare(pos_, 5, "?rank") == 0) {
      pos_ += 5;
      expect(']', "after '?rank'");
    } else {
      Shape shape;
      if (!consume(']')) {
        do {
          skip_space();
          size_t at = pos_;
          shape.push_back(parse_dim());
          if (shape.back().is_known() && shape.back().value() < 0) {
            fail_at(at, cat("dim ", shape.back().value(), " is negative"));
          }
        } while (consume(','));
        if (!consume(']')) fail_expected("',' or ']' after a dim");
      }
      type.shape = std::move(shape);
    }
    std::string suffix = peek_word();
    if ((suffix == "layout" || suffix == "quant") && peek_after_word() == '=') {
      fail_at(pos_,
              cat("the '", suffix, "=' suffix of a type is not supported by the text parser yet"),
              ErrorKind::kUnsupported);
    }
    return type;
  }

  // dtype '[' sizes ']' '=' '{' values '}' ['#' hash]. `what` names the constant in errors.
  Tensor parse_tensor(const std::string& what) {
    skip_space();
    size_t start = pos_;
    DType dtype = parse_dtype();
    if (dtype == DType::kUndefined) fail_at(start, cat(what, " needs an element type"));
    if (dtype == DType::kComplex64 || dtype == DType::kComplex128) {
      fail_at(start, cat(what, ": ", dtype_name(dtype), " constants are not supported"),
              ErrorKind::kUnsupported);
    }
    expect('[', "after the element type");
    std::vector<int64_t> shape;
    if (!consume(']')) {
      do {
        skip_space();
        size_t at = pos_;
        int64_t size = parse_int("a dim size");
        if (size < 0) fail_at(at, cat(what, ": dim ", size, " is negative"));
        shape.push_back(size);
      } while (consume(','));
      if (!consume(']')) fail_expected("',' or ']' after a dim size");
    }
    expect('=', cat("after the type of ", what));
    expect('{', cat("before the values of ", what));
    std::vector<std::pair<std::string, size_t>> values;  // text, offset
    std::optional<size_t> ellipsis;
    if (!consume('}')) {
      do {
        skip_space();
        size_t at = pos_;
        if (text_.compare(pos_, 3, "...") == 0) {
          ellipsis = at;
          pos_ += 3;
          break;
        }
        if (dtype == DType::kString) {
          values.emplace_back(parse_string(), at);
        } else {
          std::string number = number_text();
          if (number.empty()) fail_expected(cat("a value of ", what));
          values.emplace_back(number, at);
        }
      } while (consume(','));
      if (!consume('}')) fail_expected(cat("',' or '}' after the values of ", what));
    }
    int64_t numel = 0;
    try {
      numel = shape_numel(shape);
    } catch (const Error& e) {
      fail_at(start, cat(what, ": ", e.what()));
    }
    std::string type_text = cat(dtype_name(dtype), shape_to_string(shape_from_values(shape)));
    if (ellipsis) {
      fail_at(*ellipsis, cat(what, " shows ", values.size(), " of its ", numel,
                             " values ('...'): a constant can be parsed only when all its values "
                             "are listed; write them all (keep test constants tiny)"));
    }
    if (static_cast<int64_t>(values.size()) != numel) {
      fail_at(start, cat(what, ": ", type_text, " needs ", numel, " values, got ", values.size()));
    }
    Tensor tensor(dtype, shape);
    for (size_t i = 0; i < values.size(); ++i) {
      store_element(tensor, static_cast<int64_t>(i), values[i].first, values[i].second);
    }
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '#') {
      size_t at = pos_++;
      size_t end = pos_;
      while (end < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[end]))) ++end;
      std::string digits = text_.substr(pos_, end - pos_);
      pos_ = end;
      if (digits.empty() || digits.size() > 8) {
        fail_at(at, cat("expected up to 8 hex digits after '#' (the hash of ", what, ")"));
      }
      auto written = static_cast<uint32_t>(std::strtoul(digits.c_str(), nullptr, 16));
      uint32_t actual = folded_hash(tensor);
      if (written != actual) {
        fail_at(at, cat(what, ": hash #", digits, " does not match the listed values (#",
                        hex8(actual), "): the printer shows only the first 4 values, so list all ",
                        "values exactly, or drop the hash"));
      }
    }
    return tensor;
  }

  void store_element(Tensor& tensor, int64_t i, const std::string& text, size_t at) const {
    DType dtype = tensor.dtype();
    if (dtype == DType::kString) {
      tensor.strings()[static_cast<size_t>(i)] = text;
      return;
    }
    if (is_floating(dtype)) {
      double value = to_floating(text, at, dtype);
      switch (dtype) {
        case DType::kFloat32:
          tensor.data<float>()[i] = static_cast<float>(value);
          break;
        case DType::kFloat64:
          tensor.data<double>()[i] = value;
          break;
        case DType::kFloat16:
          tensor.data<uint16_t>()[i] = float_to_half(static_cast<float>(value));
          break;
        default:
          tensor.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(value));
          break;
      }
      return;
    }
    if (!is_integer_text(text)) {
      fail_at(at, cat("'", text, "' is not an integer (the constant is ", dtype_name(dtype), ")"));
    }
    auto out_of_range = [&]() {
      fail_at(at, cat("value ", text, " is out of range for ", dtype_name(dtype)));
    };
    if (dtype == DType::kUInt64) {
      if (text[0] == '-') out_of_range();
      errno = 0;
      unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
      if (errno == ERANGE) out_of_range();
      tensor.data<uint64_t>()[i] = value;
      return;
    }
    errno = 0;
    long long value = std::strtoll(text.c_str(), nullptr, 10);
    if (errno == ERANGE) out_of_range();
    auto store = [&](auto tag) {
      using T = decltype(tag);
      if (value < static_cast<long long>(std::numeric_limits<T>::lowest()) ||
          value > static_cast<long long>(std::numeric_limits<T>::max())) {
        out_of_range();
      }
      tensor.data<T>()[i] = static_cast<T>(value);
    };
    switch (dtype) {
      case DType::kInt8:
        store(int8_t{});
        break;
      case DType::kInt16:
        store(int16_t{});
        break;
      case DType::kInt32:
        store(int32_t{});
        break;
      case DType::kInt64:
        store(int64_t{});
        break;
      case DType::kUInt8:
        store(uint8_t{});
        break;
      case DType::kUInt16:
        store(uint16_t{});
        break;
      case DType::kUInt32:
        store(uint32_t{});
        break;
      case DType::kBool:
        if (value != 0 && value != 1) fail_at(at, cat("a bool value must be 0 or 1, got ", text));
        tensor.data<bool>()[i] = value != 0;
        break;
      default:
        RNNC_CHECK(false, "unhandled dtype ", dtype_name(dtype));
    }
  }

  // ---- header ---------------------------------------------------------------------------------

  void parse_header(Model& model) {
    skip_space();
    size_t header_at = pos_;
    if (!consume_keyword("model")) {
      fail_expected("'model' (the header: model ir_version=N opset=N producer=\"...\")");
    }
    std::set<std::string> seen;
    while (peek_word() != "graph") {
      skip_space();
      size_t at = pos_;
      std::string field = read_identifier();
      if (field == "ir_version") {
        if (!seen.insert(field).second) fail_at(at, "'ir_version' is given twice");
        expect('=', "after 'ir_version'");
        model.ir_version = parse_int("the IR version");
      } else if (field == "opset") {
        std::string domain;
        if (consume('(')) {
          size_t end = text_.find_first_of(")\n", pos_);
          if (end == std::string::npos || text_[end] != ')') fail_expected("a domain and ')'");
          domain = text_.substr(pos_, end - pos_);
          pos_ = end + 1;
        }
        if (domain == "ai.onnx") domain.clear();
        expect('=', "after 'opset'");
        int64_t version = parse_int("an opset version");
        if (!model.opsets.emplace(domain, version).second) {
          fail_at(at, cat("the opset of domain '", domain.empty() ? "ai.onnx" : domain,
                          "' is given twice"));
        }
      } else if (field == "producer") {
        if (!seen.insert(field).second) fail_at(at, "'producer' is given twice");
        expect('=', "after 'producer'");
        split_producer(parse_string(), model);
      } else {
        pos_ = at;
        fail_expected("'ir_version=', 'opset=', 'producer=' or 'graph' in the model header");
      }
    }
    auto it = model.opsets.find("");
    if (it == model.opsets.end()) {
      fail_at(header_at, "the model header declares no default-domain opset (add 'opset=N')");
    }
    if (it->second < kMinImportOpset || it->second > kMaxOpset) {
      fail_at(header_at,
              cat("default-domain opset ", it->second, " is not supported (rnnc supports opsets ",
                  kMinImportOpset, " to ", kMaxOpset, ")"),
              ErrorKind::kUnsupported);
    }
  }

  // The printer joins producer name and version with a space; a last word that starts with a digit
  // is taken to be the version ("pytorch 1.13.1").
  static void split_producer(const std::string& producer, Model& model) {
    size_t space = producer.rfind(' ');
    if (space != std::string::npos && space + 1 < producer.size() &&
        is_digit(producer[space + 1])) {
      model.producer_name = producer.substr(0, space);
      model.producer_version = producer.substr(space + 1);
    } else {
      model.producer_name = producer;
    }
  }

  // ---- graphs ---------------------------------------------------------------------------------

  void parse_graph(Graph& graph) {
    if (!consume_keyword("graph")) fail_expected("'graph'");
    graph.set_name(parse_name("a graph name"));
    expect('(', cat("after the name of graph '", graph.name(), "'"));
    std::vector<Value*> awaiting_default;
    if (!consume(')')) {
      do {
        skip_space();
        size_t at = pos_;
        std::string name = parse_value_name("a graph input ('%name: type')");
        check_new_name(graph, name, at);
        expect(':', cat("after graph input '%", name, "'"));
        Value* input = graph.add_input(name, parse_type());
        defined_at_[input] = at;
        if (consume('=')) {
          if (!consume_keyword("default")) fail_expected("'default' after '='");
          awaiting_default.push_back(input);
        }
      } while (consume(','));
      if (!consume(')')) fail_expected("',' or ')' after a graph input");
    }
    expect('{', cat("to open the body of graph '", graph.name(), "'"));
    while (true) {
      skip_space();
      size_t at = pos_;
      std::string word = peek_word();
      char after = peek_after_word();
      if (word == "return" && after != '=' && after != '[') break;
      if (word == "const" && after == '%') {
        pos_ += word.size();
        parse_const(graph);
      } else if (word == "default" && after == '%') {
        pos_ += word.size();
        parse_default(graph, awaiting_default);
      } else if (peek() == '%' || peek() == '=' || word == "_") {
        parse_node(graph);
      } else if ((!word.empty() || peek() == '"') && (after == '=' || after == '[')) {
        fail_at(at, "a graph attribute ('name = graph ...') must directly follow its node");
      } else {
        fail_expected(cat("a node, 'const', 'default' or 'return' in graph '", graph.name(), "'"));
      }
    }
    pos_ += std::string("return").size();
    if (peek() != '}') {
      do {
        skip_space();
        size_t at = pos_;
        std::string name = parse_value_name("a returned value ('%name')");
        Value* value = resolve(graph, name, at);
        if (consume(':')) {
          skip_space();
          size_t type_at = pos_;
          TensorType declared = parse_type();
          if (value->type.dtype == DType::kUndefined && !value->type.shape) {
            value->type = declared;
          } else if (declared.to_string() != value->type.to_string()) {
            fail_at(type_at,
                    cat("return type ", declared.to_string(), " of '%", name,
                        "' differs from its type ", value->type.to_string(), defined_here(value)));
          }
        }
        graph.add_output(value);
      } while (consume(','));
    }
    if (!consume('}'))
      fail_expected(cat("',' or '}' after the return values of '", graph.name(), "'"));
    for (Value* input : awaiting_default) {
      fail_at(defined_at_[input],
              cat("input '%", input->name(), "' is declared '= default' but ", "graph '",
                  graph.name(), "' has no 'default %", input->name(), " = ...' line"));
    }
  }

  // 'const' '%' name ':' tensor
  void parse_const(Graph& graph) {
    skip_space();
    size_t at = pos_;
    std::string name = parse_value_name("a constant name ('%name')");
    check_new_name(graph, name, at);
    expect(':', cat("after constant '%", name, "'"));
    Value* value = graph.add_initializer(name, parse_tensor(cat("constant '%", name, "'")));
    defined_at_[value] = at;
  }

  // 'default' '%' name '=' tensor, for an input declared '= default'.
  void parse_default(Graph& graph, std::vector<Value*>& awaiting_default) {
    skip_space();
    size_t at = pos_;
    std::string name = parse_value_name("an input name ('%name')");
    Value* input = graph.find_local_value(name);
    auto it = std::find(awaiting_default.begin(), awaiting_default.end(), input);
    if (input && input->is_constant() && input->is_graph_input()) {
      fail_at(at, cat("the default of '%", name, "' is given twice"));
    }
    if (!input || it == awaiting_default.end()) {
      fail_at(at, cat("'%", name, "' is not an input of graph '", graph.name(),
                      "' declared '= default'"));
    }
    expect('=', cat("after 'default %", name, "'"));
    skip_space();
    size_t tensor_at = pos_;
    Tensor data = parse_tensor(cat("the default of '%", name, "'"));
    TensorType data_type{data.dtype(), shape_from_values(data.shape()), {}};
    if (data_type.to_string() != input->type.to_string()) {
      fail_at(tensor_at, cat("the default of '%", name, "' is ", data_type.to_string(),
                             " but the input is declared ", input->type.to_string()));
    }
    input->set_constant(std::make_shared<const Tensor>(std::move(data)));
    awaiting_default.erase(it);
  }

  // outputs '=' [domain.]op ['name'] '(' inputs ')' ['{' attributes '}'] graph-attributes
  void parse_node(Graph& graph) {
    skip_space();
    size_t node_at = pos_;
    struct Output {
      std::string name;  // empty: omitted
      std::optional<TensorType> type;
      size_t at;
    };
    std::vector<Output> outputs;
    if (peek() != '=') {
      do {
        skip_space();
        size_t at = pos_;
        if (peek() == '%') {
          Output output{parse_value_name("a node output"), std::nullopt, at};
          if (consume(':')) output.type = parse_type();
          outputs.push_back(std::move(output));
        } else if (peek_word() == "_") {
          ++pos_;
          outputs.push_back({"", std::nullopt, at});
        } else {
          fail_expected("a node output ('%name: type' or '_')");
        }
      } while (consume(','));
    }
    if (!consume('=')) fail_expected("',' or '=' after the node outputs");
    skip_space();
    size_t op_at = pos_;
    size_t op_end = pos_;
    while (op_end < text_.size() && (is_identifier_char(text_[op_end]) || text_[op_end] == '.')) {
      ++op_end;
    }
    std::string qualified = text_.substr(pos_, op_end - pos_);
    if (qualified.empty()) fail_expected("an operator name");
    pos_ = op_end;
    size_t dot = qualified.rfind('.');
    std::string domain = dot == std::string::npos ? "" : qualified.substr(0, dot);
    std::string op_type = dot == std::string::npos ? qualified : qualified.substr(dot + 1);
    if (domain == "ai.onnx") domain.clear();
    if (op_type.empty()) fail_at(op_at, cat("expected an operator name after '", qualified, "'"));
    auto opset = opsets_->find(domain);
    if (opset == opsets_->end()) {
      fail_at(op_at, cat("operator domain '", domain, "' has no opset in the model header (add ",
                         "'opset(", domain, ")=N')"));
    }
    std::optional<std::string> node_name;
    if (peek() == '\'') node_name = parse_string('\'');
    expect('(', cat("before the inputs of ", qualified));
    std::vector<Value*> inputs;
    if (!consume(')')) {
      do {
        skip_space();
        size_t at = pos_;
        if (peek() == '%') {
          std::string name = parse_value_name("a node input");
          inputs.push_back(resolve(graph, name, at));
        } else if (peek_word() == "_") {
          ++pos_;
          inputs.push_back(nullptr);
        } else {
          fail_expected("a node input ('%name' or '_')");
        }
      } while (consume(','));
      if (!consume(')')) fail_expected("')' after node inputs");
    }
    std::map<std::string, Attribute> attributes;
    if (consume('{') && !consume('}')) {
      do {
        skip_space();
        size_t at = pos_;
        std::string name = parse_name("an attribute name");
        if (attributes.count(name)) fail_at(at, cat("attribute '", name, "' is given twice"));
        expect('=', cat("after attribute '", name, "'"));
        attributes[name] = parse_attribute_value(name);
      } while (consume(','));
      if (!consume('}')) fail_expected("',' or '}' after a node attribute");
    }

    std::set<std::string> names;
    std::vector<std::string> output_names;
    for (const Output& output : outputs) {
      if (!output.name.empty()) {
        check_new_name(graph, output.name, output.at);
        if (!names.insert(output.name).second) {
          fail_at(output.at, cat("value '%", output.name, "' is defined twice by this node"));
        }
      }
      output_names.push_back(output.name);
    }
    Node* node =
        graph.add_node(op_type, node_name ? *node_name : cat(op_type, "_", graph.nodes().size()),
                       inputs, output_names, static_cast<int>(opset->second), domain);
    node_at_[node] = node_at;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (Value* value = node->output(i)) {
        defined_at_[value] = outputs[i].at;
        if (outputs[i].type) value->type = *outputs[i].type;
      }
    }
    parse_graph_attributes(graph, *node, attributes);
    for (auto& [name, attribute] : attributes) node->set_attr(name, std::move(attribute));
  }

  // Blocks after a node line: 'name = graph ...' and 'name[i] = graph ...'. Their bodies may use
  // values defined above the node, but not the node's own outputs.
  void parse_graph_attributes(Graph& graph, Node& node,
                              std::map<std::string, Attribute>& attributes) {
    for (Value* output : node.outputs()) {
      if (output) hidden_.insert(output);
    }
    while (true) {
      skip_space();
      size_t saved = pos_;
      if (peek() != '"' && (bare_name_length(text_, pos_) == 0 || peek_word() == "_")) break;
      std::string name = parse_name("an attribute name");
      std::optional<int64_t> index;
      size_t index_at = 0;
      if (consume('[')) {
        skip_space();
        index_at = pos_;
        index = parse_int("a graph index");
        if (!consume(']')) {
          pos_ = saved;
          break;
        }
      }
      if (!consume('=')) {
        pos_ = saved;
        break;
      }
      // Only a graph attribute starts with "name =" here.
      if (peek_word() != "graph") fail_expected(cat("'graph' after '", name, " ='"));
      if (++depth_ > kMaxDepth) fail_at(saved, cat("graphs nested deeper than ", kMaxDepth));
      auto body = std::make_shared<Graph>(name, &graph);
      parse_graph(*body);
      --depth_;
      auto existing = attributes.find(name);
      if (!index) {
        if (existing != attributes.end()) {
          fail_at(saved, cat("attribute '", name, "' is given twice"));
        }
        Attribute attribute;
        attribute.kind = Attribute::Kind::kGraph;
        attribute.g = std::move(body);
        attributes[name] = std::move(attribute);
        continue;
      }
      if (existing == attributes.end()) {
        Attribute attribute;
        attribute.kind = Attribute::Kind::kGraphs;
        existing = attributes.emplace(name, std::move(attribute)).first;
      } else if (existing->second.kind != Attribute::Kind::kGraphs ||
                 (existing->second.graphs.empty() && *index == 0)) {
        fail_at(saved, cat("attribute '", name, "' is given twice"));
      }
      auto& graphs = existing->second.graphs;
      if (*index != static_cast<int64_t>(graphs.size())) {
        fail_at(index_at, cat("expected '", name, "[", graphs.size(), "]', got index ", *index,
                              " (graph lists are written in order from 0)"));
      }
      graphs.push_back(std::move(body));
    }
    for (Value* output : node.outputs()) hidden_.erase(output);
  }

  // ---- attributes -----------------------------------------------------------------------------

  Attribute parse_attribute_value(const std::string& name) {
    std::string what = cat("attribute '", name, "'");
    Attribute a;
    char c = peek();
    size_t at = pos_;
    if (c == '"') {
      a.kind = Attribute::Kind::kString;
      a.s = parse_string();
      return a;
    }
    if (c == '[') {
      parse_list(a, std::nullopt, what);
      return a;
    }
    if (is_alpha(c)) {
      size_t length = identifier_length(text_, pos_);
      std::string word = text_.substr(pos_, length);
      bool bracket = pos_ + length < text_.size() && text_[pos_ + length] == '[';
      static const std::map<std::string, Attribute::Kind> kListKinds = {
          {"ints", Attribute::Kind::kInts},
          {"floats", Attribute::Kind::kFloats},
          {"strings", Attribute::Kind::kStrings},
          {"tensors", Attribute::Kind::kTensors},
          {"graphs", Attribute::Kind::kGraphs}};
      if (word == "type" && pos_ + length < text_.size() && text_[pos_ + length] == '<') {
        pos_ += length;
        expect('<', "after 'type'");
        a.kind = Attribute::Kind::kType;
        a.tp = parse_type();
        expect('>', "after a type attribute's type");
        return a;
      }
      auto kind = kListKinds.find(word);
      if (kind != kListKinds.end() && bracket) {
        pos_ += length;
        parse_list(a, kind->second, what);
        return a;
      }
      if (dtype_from_name(word) && bracket) {
        a.kind = Attribute::Kind::kTensor;
        a.t = parse_tensor(what);
        return a;
      }
    }
    std::string number = number_text();
    if (number.empty()) {
      fail_expected(cat("a value for ", what, " (a number, string, tensor or list)"));
    }
    if (is_integer_text(number)) {
      a.kind = Attribute::Kind::kInt;
      a.i = to_int64(number, at, what);
    } else {
      a.kind = Attribute::Kind::kFloat;
      a.f = static_cast<float>(to_floating(number, at, DType::kFloat32));
    }
    return a;
  }

  // '[' elements ']'; `kind` is set when the list was written with its kind (ints[...]).
  void parse_list(Attribute& a, std::optional<Attribute::Kind> kind, const std::string& what) {
    skip_space();
    size_t at = pos_;
    expect('[', cat("to open the list of ", what));
    if (consume(']')) {
      if (!kind) {
        fail_at(at, cat("the empty list of ", what, " needs its kind: write ints[], floats[], ",
                        "strings[] or tensors[]"));
      }
      a.kind = *kind;
      return;
    }
    if (kind == Attribute::Kind::kGraphs) {
      fail_at(at, cat("the graphs of ", what, " are written as 'name[i] = graph ...' blocks ",
                      "after the node"));
    }
    char first = peek();
    if (!kind) {
      if (first == '"')
        kind = Attribute::Kind::kStrings;
      else if (is_alpha(first) &&
               dtype_from_name(text_.substr(pos_, identifier_length(text_, pos_))))
        kind = Attribute::Kind::kTensors;
    }
    if (kind == Attribute::Kind::kStrings) {
      a.kind = *kind;
      do {
        a.strings.push_back(parse_string());
      } while (consume(','));
    } else if (kind == Attribute::Kind::kTensors) {
      a.kind = *kind;
      do {
        a.tensors.push_back(parse_tensor(cat("tensor ", a.tensors.size(), " of ", what)));
      } while (consume(','));
    } else {
      std::vector<std::pair<std::string, size_t>> numbers;
      do {
        skip_space();
        size_t number_at = pos_;
        std::string number = number_text();
        if (number.empty()) fail_expected(cat("a number in the list of ", what));
        numbers.emplace_back(number, number_at);
      } while (consume(','));
      if (!kind) {
        bool all_integers = std::all_of(numbers.begin(), numbers.end(),
                                        [](const auto& n) { return is_integer_text(n.first); });
        kind = all_integers ? Attribute::Kind::kInts : Attribute::Kind::kFloats;
      }
      a.kind = *kind;
      for (const auto& [number, number_at] : numbers) {
        if (a.kind == Attribute::Kind::kInts) {
          a.ints.push_back(to_int64(number, number_at, cat("an element of ", what)));
        } else {
          a.floats.push_back(static_cast<float>(to_floating(number, number_at, DType::kFloat32)));
        }
      }
    }
    if (!consume(']')) fail_expected(cat("',' or ']' in the list of ", what));
  }

  // ---- names ----------------------------------------------------------------------------------

  std::string defined_here(const Value* value) const {
    auto it = defined_at_.find(value);
    return it == defined_at_.end() ? "" : cat(" (defined at ", line_column(it->second), ")");
  }

  void check_new_name(const Graph& graph, const std::string& name, size_t at) const {
    if (Value* existing = graph.find_local_value(name)) {
      fail_at(at, cat("value '%", name, "' is already defined", defined_here(existing)));
    }
  }

  Value* resolve(const Graph& graph, const std::string& name, size_t at) const {
    Value* value = graph.find_value(name);
    if (!value) fail_at(at, cat("use of undefined value '%", name, "'"));
    if (hidden_.count(value)) {
      fail_at(at, cat("'%", name, "' is an output of the node that holds this graph; its ",
                      "nested graphs cannot use it"));
    }
    return value;
  }

  // ---- inference ------------------------------------------------------------------------------

  // Inference errors name the node ("Add 'a' (opset 14): ..."); prefix the line it was written on.
  void infer(Model& model) const {
    try {
      normalize_legacy_opsets(model);
      expand_contrib_ops(model);
      infer_graph(*model.graph);
    } catch (const Error& e) {
      std::string message = e.what();
      const std::pair<const Node* const, size_t>* best = nullptr;
      size_t best_length = 0;
      for (const auto& entry : node_at_) {
        std::string described = entry.first->describe();
        if (message.compare(0, described.size(), described) == 0 &&
            described.size() > best_length) {
          best = &entry;
          best_length = described.size();
        }
      }
      if (best) fail_at(best->second, message, e.kind());
      raise(e.kind(), cat(source_, ": ", message));
    }
  }

  const std::string& text_;
  const std::string& source_;
  std::vector<size_t> line_starts_;
  size_t pos_ = 0;
  int depth_ = 0;
  const std::map<std::string, int64_t>* opsets_ = nullptr;
  std::map<const Value*, size_t> defined_at_;
  std::map<const Node*, size_t> node_at_;
  std::set<const Value*> hidden_;
};

}  // namespace

bool is_bare_ir_name(const std::string& name) {
  return !name.empty() && bare_name_length(name, 0) == name.size();
}

bool is_bare_dim_symbol(const std::string& name) {
  return !name.empty() && !is_digit(name[0]) && identifier_length(name, 0) == name.size();
}

std::unique_ptr<Model> parse_model_text(const std::string& text, const std::string& source_name) {
  return TextParser(text, source_name).parse_model();
}

std::unique_ptr<Model> parse_model_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(ErrorKind::kIo, cat("cannot open IR text file '", path, "'"));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) raise(ErrorKind::kIo, cat("cannot read IR text file '", path, "'"));
  return parse_model_text(buffer.str(), path);
}

}  // namespace rnnc
