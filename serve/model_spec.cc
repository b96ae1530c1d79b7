#include "serve/model_spec.h"

#include <cstdlib>
#include <sstream>

#include "ir/error.h"

namespace rnnc::serve {

namespace {

int64_t parse_integer(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end)
    raise_invalid_input(cat("--model ", what, ": '", text, "' is not an integer"));
  return value;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

// "NAME=VALUE" -> {NAME, VALUE}, naming the option when either side is empty.
std::pair<std::string, std::string> assignment(const std::string& text, const std::string& option,
                                               char separator = '=') {
  const size_t at = text.find(separator);
  if (at == std::string::npos || at == 0 || at + 1 == text.size()) {
    raise_invalid_input(
        cat("--model option '", option, "' expects NAME", separator, "VALUE, got '", text, "'"));
  }
  return {text.substr(0, at), text.substr(at + 1)};
}

bool parse_switch(const std::string& value, const std::string& option) {
  if (value == "on" || value == "true" || value == "1") return true;
  if (value == "off" || value == "false" || value == "0") return false;
  raise_invalid_input(cat("--model option '", option, "' expects on or off, got '", value, "'"));
}

}  // namespace

ModelSpec parse_model_spec(const std::string& text) {
  const std::vector<std::string> parts = split(text, ',');
  if (parts.empty()) raise_invalid_input("--model expects NAME=PATH[,option=value...]");
  ModelSpec spec;
  auto [name, path] = assignment(parts[0], "NAME=PATH");
  spec.name = name;
  spec.path = path;
  if (spec.name.find('/') != std::string::npos) {
    raise_invalid_input(
        cat("--model name '", spec.name, "' must not contain '/' (it is a URL path segment)"));
  }
  for (size_t k = 1; k < parts.size(); ++k) {
    auto [option, value] = assignment(parts[k], parts[k]);
    if (option == "fix") {
      auto [input, values] = assignment(value, "fix");
      std::vector<int64_t>& fixed = spec.options.fixed_inputs[input];
      for (const std::string& item : split(values, ':'))
        fixed.push_back(parse_integer(item, "fix " + input));
    } else if (option == "dim") {
      auto [dim, size] = assignment(value, "dim");
      const int64_t n = parse_integer(size, "dim " + dim);
      if (n < 0) raise_invalid_input(cat("--model dim ", dim, ": ", n, " must be >= 0"));
      spec.dims[dim] = n;
    } else if (option == "quantize") {
      spec.options.quantization_config = value;
    } else if (option == "plan") {
      spec.options.plan = parse_plan(value);
    } else if (option == "threads") {
      spec.options.threads = static_cast<int>(parse_integer(value, "threads"));
      if (spec.options.threads < 1) raise_invalid_input("--model threads must be >= 1");
    } else if (option == "state") {
      spec.state.push_back(assignment(value, "state", ':'));
    } else if (option == "batch-axis") {
      auto [tensor, axis] = assignment(value, "batch-axis", ':');
      const int64_t n = parse_integer(axis, "batch-axis " + tensor);
      if (n < -1 || n > 64)
        raise_invalid_input(cat("--model batch-axis ", tensor, ": ", n, " is not -1 or an axis"));
      spec.batch_axes[tensor] = static_cast<int>(n);
    } else if (option == "batching") {
      spec.batching = parse_switch(value, option);
    } else if (option == "max-batch") {
      spec.max_batch = static_cast<int>(parse_integer(value, "max-batch"));
      if (spec.max_batch < 1) raise_invalid_input("--model max-batch must be >= 1");
    } else if (option == "max-wait-us") {
      spec.max_wait_us = static_cast<int>(parse_integer(value, "max-wait-us"));
      if (spec.max_wait_us < 0) raise_invalid_input("--model max-wait-us must be >= 0");
    } else {
      raise_invalid_input(cat("--model '", spec.name, "': unknown option '", option,
                              "' (fix, dim, quantize, plan, threads, state, batch-axis, batching, "
                              "max-batch, max-wait-us)"));
    }
  }
  spec.options.quantization_dims = spec.dims;
  return spec;
}

}  // namespace rnnc::serve
