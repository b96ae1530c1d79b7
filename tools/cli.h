// A small command-line parser for the `rnnc` subcommands: each command declares its options
// (name, whether it takes a value, help), and the parser rejects anything else with one clear line.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph_opt/pass.h"

namespace rnnc::cli {

struct Option {
  std::string name;  // without the leading "--"
  std::string value_name;  // "" for a flag
  std::string help;
};

struct Command {
  std::string name;
  std::string usage;  // "rnnc run MODEL [options]"
  std::string summary;
  std::vector<Option> options;
  int (*run)(const struct Parsed&);
};

struct Parsed {
  const Command* command = nullptr;
  std::vector<std::string> positional;
  std::map<std::string, std::vector<std::string>> values;  // option -> every value given

  bool has(const std::string& name) const { return values.count(name) != 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
};

// Parses argv after the subcommand name. Throws rnnc::Error (kInvalidInput) on unknown options or
// a missing value. Returns false if --help was given (help already printed).
bool parse(const Command& command, int argc, char** argv, Parsed& parsed);
void print_help(const Command& command);

// "seq=17" -> {"seq", "17"}; throws naming the option when there is no '='.
std::pair<std::string, std::string> split_assignment(const std::string& text,
                                                     const std::string& option);

// --fix NAME=VALUE and --dim NAME=N: what the specialize pass compiles in (rnnc optimize,
// rnnc compile, rnnc quantize).
// --dim NAME=N options (repeatable) as a map; kInvalidInput for a malformed or negative size.
std::map<std::string, int64_t> parse_dims(const Parsed& args);
PassContext parse_specialization(const Parsed& args, const Graph& graph);
// --fix NAME=V[,V...] options as ModelOptions::fixed_inputs takes them (rnnc run, rnnc streams);
// kInvalidInput naming a value that is not an integer.
std::map<std::string, std::vector<int64_t>> parse_fixed_inputs(const Parsed& args);

// --max-error F: the quantization guard's budget as a fraction of each output's range, in (0, 1];
// 0 when not given. kInvalidInput naming the option otherwise.
double parse_max_error(const Parsed& args);

// The --target option's help (lowering/kernel_target.h has the names).
extern const char* const kTargetHelp;

}  // namespace rnnc::cli
