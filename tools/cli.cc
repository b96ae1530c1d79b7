#include "tools/cli.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "graph_opt/specialize.h"
#include "ir/error.h"

namespace rnnc::cli {

std::string Parsed::get(const std::string& name, const std::string& fallback) const {
  auto it = values.find(name);
  return it == values.end() || it->second.empty() ? fallback : it->second.back();
}

const std::vector<std::string>& Parsed::all(const std::string& name) const {
  static const std::vector<std::string> kNone;
  auto it = values.find(name);
  return it == values.end() ? kNone : it->second;
}

int64_t Parsed::get_int(const std::string& name, int64_t fallback) const {
  if (!has(name)) return fallback;
  std::string text = get(name);
  try {
    size_t used = 0;
    int64_t value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  raise_invalid_input(cat("--", name, " expects an integer, got '", text, "'"));
}

double parse_max_error(const Parsed& args) {
  if (!args.has("max-error")) return 0;
  const std::string text = args.get("max-error");
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(value > 0 && value <= 1)) {
    raise_invalid_input(cat("--max-error expects a number in (0, 1] (a fraction of each output's "
                            "range, e.g. 0.02), got '", text, "'"));
  }
  return value;
}

void print_help(const Command& command) {
  std::cout << "usage: " << command.usage << "\n\n" << command.summary << "\n";
  if (command.options.empty()) return;
  std::cout << "\noptions:\n";
  for (const auto& option : command.options) {
    std::string left = (option.name.size() == 1 ? "  -" : "  --") + option.name + (option.value_name.empty() ? "" : " " + option.value_name);
    if (left.size() < 28) left.append(28 - left.size(), ' ');
    else left += "\n" + std::string(28, ' ');
    std::cout << left << option.help << "\n";
  }
  std::cout << "  --help                    show this help\n";
}

bool parse(const Command& command, int argc, char** argv, Parsed& parsed) {
  parsed.command = &command;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      print_help(command);
      return false;
    }
    // Long options are --name; a one-letter option may also be spelled -x (as -o).
    bool short_option = arg.size() == 2 && arg[0] == '-' && arg[1] != '-';
    if (!short_option && (arg.rfind("--", 0) != 0 || arg == "--")) {
      parsed.positional.push_back(arg);
      continue;
    }
    std::string name = arg.substr(short_option ? 1 : 2);
    std::string value;
    bool inline_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    const Option* option = nullptr;
    for (const auto& candidate : command.options) {
      if (candidate.name == name) option = &candidate;
    }
    if (!option) {
      raise_invalid_input(cat("unknown option '--", name, "' for 'rnnc ", command.name,
                              "' (see rnnc ", command.name, " --help)"));
    }
    if (option->value_name.empty()) {
      if (inline_value) raise_invalid_input(cat("option '--", name, "' takes no value"));
    } else if (!inline_value) {
      if (i + 1 >= argc) {
        raise_invalid_input(cat("option '--", name, "' needs a value (", option->value_name, ")"));
      }
      value = argv[++i];
    }
    parsed.values[name].push_back(value);
  }
  return true;
}

std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    raise_invalid_input(cat("--", option, " expects NAME=VALUE, got '", text, "'"));
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

std::map<std::string, int64_t> parse_dims(const Parsed& args) {
  std::map<std::string, int64_t> dims;
  for (const auto& text : args.all("dim")) {
    auto [name, value] = split_assignment(text, "dim");
    size_t used = 0;
    int64_t size = -1;
    try {
      size = std::stoll(value, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != value.size() || size < 0) {
      raise_invalid_input(cat("--dim ", name, ": '", value, "' is not a non-negative integer"));
    }
    dims[name] = size;
  }
  return dims;
}

const char* const kTargetHelp =
    "the CPU features kernels may use: host (default: this CPU's, from CPUID), x86-64 (SSE2: any "
    "x86-64), x86-64-v2 (SSE4.2), x86-64-v3 (AVX2, FMA; alias avx2, x86-64-avx2), x86-64-v4 "
    "(AVX-512 F/CD/BW/DQ/VL), x86-64-v4-vnni (v4 plus AVX512-VNNI), zen4, sapphirerapids; default "
    "$RNNC_TARGET, else host";

PassContext parse_specialization(const Parsed& args, const Graph& graph) {
  PassContext context;
  for (const auto& text : args.all("fix")) {
    auto [name, value] = split_assignment(text, "fix");
    context.fixed_inputs[name] = parse_fixed_input(graph, name, value);
  }
  context.fixed_dims = parse_dims(args);
  return context;
}

std::map<std::string, std::vector<int64_t>> parse_fixed_inputs(const Parsed& args) {
  std::map<std::string, std::vector<int64_t>> fixed;
  for (const auto& text : args.all("fix")) {
    auto [name, value] = split_assignment(text, "fix");
    std::vector<int64_t>& values = fixed[name];
    std::stringstream items(value);
    for (std::string item; std::getline(items, item, ',');) {
      char* end = nullptr;
      const long long parsed = std::strtoll(item.c_str(), &end, 10);
      if (item.empty() || *end) {
        raise_invalid_input(cat("--fix ", name, ": '", item, "' is not an integer"));
      }
      values.push_back(parsed);
    }
  }
  return fixed;
}

}  // namespace rnnc::cli
