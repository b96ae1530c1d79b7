// What both front ends answer about the server and its models: names, version, extensions, and
// the model lookups behind ModelReady / ModelMetadata, with their errors.
#pragma once

#include <string>

#include "serve/inference_service.h"

namespace rnnc::serve {

inline constexpr const char* kServerName = "rnnc";
// Each model has one version; requests may name it or leave it out.
inline constexpr const char* kModelVersion = "1";
inline constexpr const char* kModelPlatform = "rnnc_onnx";
// The protocol extensions the server implements (docs/serving.md has the coverage table).
inline constexpr const char* kServerExtensions[] = {"binary_tensor_data", "sequence",
                                                    "sequence(string_id)", "model_stream_infer"};

// RequestError (NOT_FOUND) for a version other than "" or kModelVersion.
void check_model_version(const std::string& model, const std::string& version);
// NOT_FOUND for an unknown model or version; false while the model compiles.
bool model_ready(const InferenceService& service, const std::string& name,
                 const std::string& version);
// The model, ready: NOT_FOUND for an unknown model or version, UNAVAILABLE while it compiles.
const ServedModel& ready_model(const InferenceService& service, const std::string& name,
                               const std::string& version);
// "stateN->state, lstm.Y_h->lstm.initial_h": the state the server carries for a sequence (what a
// stateless client passes itself), output -> input.
std::string carried_state_text(const ServedModel& model);

}  // namespace rnnc::serve
