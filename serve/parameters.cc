#include "serve/parameters.h"

#include <algorithm>

#include "ir/error.h"
#include "serve/status.h"

namespace rnnc::serve {

namespace {

constexpr int64_t kMaxTimeoutMicros = 86'400'000'000;  // one day; keeps the deadline in range

const char* type_name(const ParameterValue& value) {
  switch (value.index()) {
    case 0:
      return "bool";
    case 1:
      return "int64";
    case 2:
      return "uint64";
    case 3:
      return "double";
    default:
      return "string";
  }
}

[[noreturn]] void wrong_type(const std::string& name, const ParameterValue& value,
                             const char* expected) {
  raise_request(StatusCode::kInvalidArgument,
                cat("parameter '", name, "' is a ", type_name(value), ", expected ", expected));
}

bool bool_parameter(const std::string& name, const ParameterValue& value) {
  if (const bool* flag = std::get_if<bool>(&value)) return *flag;
  wrong_type(name, value, "a bool");
}

}  // namespace

void apply_request_parameters(const std::map<std::string, ParameterValue>& parameters,
                              InferRequest& request) {
  for (const auto& [name, value] : parameters) {
    if (name == "sequence_id") {
      if (const auto* text = std::get_if<std::string>(&value)) {
        request.sequence.id = *text;
      } else if (const auto* number = std::get_if<int64_t>(&value)) {
        if (*number < 0) {
          raise_request(StatusCode::kInvalidArgument,
                        cat("parameter 'sequence_id' is ", *number, ", must be >= 0"));
        }
        request.sequence.id = *number == 0 ? "" : std::to_string(*number);
      } else if (const auto* unsigned_number = std::get_if<uint64_t>(&value)) {
        request.sequence.id = *unsigned_number == 0 ? "" : std::to_string(*unsigned_number);
      } else {
        wrong_type(name, value, "an integer or a string");
      }
    } else if (name == "sequence_start") {
      request.sequence.start = bool_parameter(name, value);
    } else if (name == "sequence_end") {
      request.sequence.end = bool_parameter(name, value);
    } else if (name == "timeout") {
      int64_t micros = 0;
      if (const auto* number = std::get_if<int64_t>(&value))
        micros = *number;
      else if (const auto* unsigned_number = std::get_if<uint64_t>(&value))
        micros = static_cast<int64_t>(std::min<uint64_t>(*unsigned_number, INT64_MAX));
      else
        wrong_type(name, value, "an integer (microseconds)");
      micros = std::min<int64_t>(micros, kMaxTimeoutMicros);
      if (micros > 0) {
        request.deadline =
            std::min(request.deadline, Clock::now() + std::chrono::microseconds(micros));
      }
    }
  }
  if ((request.sequence.start || request.sequence.end) && request.sequence.id.empty()) {
    raise_request(StatusCode::kInvalidArgument,
                  cat("parameter '", request.sequence.start ? "sequence_start" : "sequence_end",
                      "' needs a non-zero 'sequence_id'"));
  }
}

}  // namespace rnnc::serve
