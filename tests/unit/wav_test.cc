// tests/support/wav: the WAV reader of the audio tests reads 16-bit PCM mono and names what is
// wrong with anything else.
#include "tests/support/wav.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ir/error.h"
#include "tests/support/temp_dir.h"

namespace rnnc::testing {
namespace {

// A WAV file built field by field, so each test breaks exactly one of them.
struct WavBytes {
  std::string riff = "RIFF", wave = "WAVE", fmt_id = "fmt ", data_id = "data";
  uint16_t format = 1, channels = 1, bits = 16;
  uint32_t rate = 16000;
  std::vector<int16_t> samples = {0, 16384, -32768, 32767};
  std::vector<uint8_t> extra_chunk;  // inserted between 'fmt ' and 'data' (a LIST chunk, say)

  std::vector<uint8_t> build() const {
    std::vector<uint8_t> out;
    auto put = [&](const std::string& text) { out.insert(out.end(), text.begin(), text.end()); };
    auto put16 = [&](uint32_t v) {
      out.push_back(static_cast<uint8_t>(v));
      out.push_back(static_cast<uint8_t>(v >> 8));
    };
    auto put32 = [&](uint32_t v) {
      put16(v & 0xFFFF);
      put16(v >> 16);
    };
    put(riff);
    put32(0);  // RIFF size: not checked (writers that stream leave it wrong)
    put(wave);
    put(fmt_id);
    put32(16);
    put16(format);
    put16(channels);
    put32(rate);
    put32(rate * channels * bits / 8);
    put16(channels * bits / 8);
    put16(bits);
    out.insert(out.end(), extra_chunk.begin(), extra_chunk.end());
    put(data_id);
    put32(static_cast<uint32_t>(2 * samples.size()));
    for (int16_t s : samples) put16(static_cast<uint16_t>(s));
    return out;
  }
};

std::string error_message(const std::vector<uint8_t>& bytes, ErrorKind kind) {
  try {
    parse_wav(bytes.data(), bytes.size(), "t.wav");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was raised";
  return "";
}

TEST(WavReader, ReadsPcm16MonoAsFloatsAndSkipsOtherChunks) {
  WavBytes wav;
  wav.extra_chunk = {'L', 'I', 'S', 'T', 3, 0, 0, 0, 'a', 'b', 'c', 0};  // odd length, padded
  const std::vector<uint8_t> bytes = wav.build();
  const Wav read = parse_wav(bytes.data(), bytes.size(), "t.wav");
  EXPECT_EQ(read.sample_rate, 16000);
  EXPECT_EQ(read.samples, (std::vector<float>{0.0f, 0.5f, -1.0f, 32767.0f / 32768}));
}

TEST(WavReader, NotAWellFormedWavIsInvalidInput) {
  WavBytes wav;
  wav.riff = "RIFX";
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kInvalidInput),
            "t.wav: not a RIFF file (starts with 'RIFX')");
  wav = {};
  wav.wave = "AVI ";
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kInvalidInput),
            "t.wav: a RIFF file of type 'AVI ', not 'WAVE'");
  EXPECT_EQ(error_message({'R', 'I', 'F', 'F'}, ErrorKind::kInvalidInput),
            "t.wav: truncated: 4 bytes, a RIFF header needs 12");
  wav = {};
  wav.fmt_id = "junk";
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kInvalidInput),
            "t.wav: the 'data' chunk comes before 'fmt '");
  wav = {};
  wav.data_id = "date";
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kInvalidInput), "t.wav: no 'data' chunk");
}

TEST(WavReader, TruncatedFilesSayWhereTheyEnd) {
  std::vector<uint8_t> bytes = WavBytes{}.build();
  bytes.resize(bytes.size() - 3);  // inside the data chunk
  EXPECT_EQ(error_message(bytes, ErrorKind::kInvalidInput),
            "t.wav: truncated: the 'data' chunk declares 8 bytes, the file holds 5 after its "
            "header");
  bytes.resize(20);  // inside the 'fmt ' chunk
  EXPECT_EQ(error_message(bytes, ErrorKind::kInvalidInput),
            "t.wav: truncated: the 'fmt ' chunk declares 16 bytes, the file holds 0 after its "
            "header");
  bytes.resize(15);  // inside the 'fmt ' chunk header
  EXPECT_EQ(error_message(bytes, ErrorKind::kInvalidInput),
            "t.wav: truncated: the file ends 3 bytes into a chunk header (8 bytes)");
}

TEST(WavReader, OtherFormatsAreUnsupported) {
  WavBytes wav;
  wav.format = 3;
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kUnsupported),
            "t.wav: format 3 (IEEE float), only PCM (1) is read");
  wav = {};
  wav.bits = 24;
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kUnsupported),
            "t.wav: 24 bits per sample, only 16-bit PCM is read");
  wav = {};
  wav.channels = 2;
  EXPECT_EQ(error_message(wav.build(), ErrorKind::kUnsupported),
            "t.wav: 2 channels, only mono is read");
}

TEST(WavReader, MissingFileIsAnIoError) {
  try {
    read_wav("/nonexistent/speech.wav");
    ADD_FAILURE() << "no error was raised";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_STREQ(e.what(), "cannot open WAV file '/nonexistent/speech.wav'");
  }
}

TEST(WavReader, SpeechFixtureFilesNameTheScriptOrTheRates) {
  TempDir dir("wav_test");
  try {
    read_speech(dir.path(), "speech", 16000);
    ADD_FAILURE() << "no error was raised";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIo);
    EXPECT_EQ(std::string(e.what()), dir.path() +
                                         "/speech.wav is missing: run "
                                         "tests/data/make_speech.sh " +
                                         dir.path());
  }
  WavBytes wav;
  wav.rate = 8000;
  const std::vector<uint8_t> bytes = wav.build();
  std::ofstream(dir.path() + "/speech.wav", std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  try {
    read_speech(dir.path(), "speech", 16000);
    ADD_FAILURE() << "no error was raised";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidInput);
    EXPECT_EQ(std::string(e.what()),
              dir.path() + "/speech.wav is sampled at 8000 Hz, not 16000 Hz");
  }
  EXPECT_EQ(read_speech(dir.path(), "speech", 8000).size(), 4u);
}

}  // namespace
}  // namespace rnnc::testing
