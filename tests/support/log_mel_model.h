// A wake-word model in the shape of issue 30's log-mel front-end, built with the graph API (no
// PyTorch): an STFT as two Convs (Hann-windowed cosine and sine rows, window 64, hop 32), the
// power spectrum re^2 + im^2, a triangular mel filterbank as a MatMul (33 bins -> 16 bands),
// Log(mel + 1e-6), then a GRU (hidden 32) over the frames and a Gemm classifier on its last
// state:
//
//   audio f32[1, 1, 1056] -> Conv 're', Conv 'im' -> Mul, Mul, Add 'power' -> Transpose
//     -> MatMul 'mel' -> Add, Log -> features f32[1, 32, 16]
//     -> Transpose -> GRU 'gru' -> Reshape -> Gemm 'classifier' -> logits f32[1, 4]
//
// The power spectrum spans many decades within a frame (a tone's bin against the noise floor),
// so 8-bit activations for the mel MatMul round the quiet bins to zero and Log turns that into
// errors of several units; the GRU's input (log-mel, a few units wide) quantizes well.
#pragma once

#include <memory>

#include "ir/graph.h"

namespace rnnc::testing {

constexpr int64_t kLogMelSamples = 1056, kLogMelFrames = 32, kLogMelBands = 16, kLogMelClasses = 4;

std::unique_ptr<Model> make_log_mel_gru_model();

// Test audio, unlike the quantization guard's generated inputs: a linear chirp from 200 Hz to
// 6 kHz at 16 kHz plus white noise, at the given peak amplitude (seeded).
std::vector<float> chirp_with_noise(float amplitude, uint32_t seed);

}  // namespace rnnc::testing
