// WAV audio for tests (the Silero speech test reads tests/data/make_speech.sh's output): RIFF/WAVE
// with 16-bit PCM mono only. Anything else is an rnnc::Error whose message names the file and
// what is wrong: kInvalidInput for a file that is not a well-formed WAV (not RIFF, not WAVE, no
// 'fmt ' or 'data' chunk, truncated), kUnsupported for a valid WAV in another format (not PCM,
// another bit depth, more than one channel), kIo when it cannot be read.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rnnc::testing {

struct Wav {
  int sample_rate = 0;
  std::vector<float> samples;  // int16 / 32768, in [-1, 1)
};

// `what` names the data in messages ("speech.wav: ...").
Wav parse_wav(const void* data, size_t size, const std::string& what);
Wav read_wav(const std::string& path);
// The samples of DIR/NAME.wav, one of the speech fixture's files (tests/data/make_speech.sh DIR),
// which must be sampled at `rate`: kIo naming the script to run when it is missing,
// kInvalidInput naming both rates when they differ.
std::vector<float> read_speech(const std::string& dir, const std::string& name, int rate);

}  // namespace rnnc::testing
