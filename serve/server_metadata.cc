#include "serve/server_metadata.h"

#include "ir/error.h"

namespace rnnc::serve {

void check_model_version(const std::string& model, const std::string& version) {
  if (!version.empty() && version != kModelVersion) {
    raise_request(StatusCode::kNotFound, cat("model '", model, "' has no version '", version,
                                             "' (versions: '", kModelVersion, "')"));
  }
}

namespace {

const ServedModel& known_model(const InferenceService& service, const std::string& name,
                               const std::string& version) {
  const ServedModel* model = service.find(name);
  if (!model) {
    raise_request(StatusCode::kNotFound,
                  cat("unknown model '", name, "' (models: ", service.model_names(), ")"));
  }
  check_model_version(name, version);
  return *model;
}

}  // namespace

bool model_ready(const InferenceService& service, const std::string& name,
                 const std::string& version) {
  return known_model(service, name, version).ready() && service.ready();
}

const ServedModel& ready_model(const InferenceService& service, const std::string& name,
                               const std::string& version) {
  const ServedModel& model = known_model(service, name, version);
  if (!model.ready()) {
    raise_request(StatusCode::kUnavailable,
                  cat("model '", name, "' is not ready (still compiling)"));
  }
  return model;
}

std::string carried_state_text(const ServedModel& model) {
  std::string text;
  for (const auto& [output, input] : model.carried_state()) {
    text += (text.empty() ? "" : ", ") + output + "->" + input;
  }
  return text;
}

}  // namespace rnnc::serve
