#include "tests/support/wav.h"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "ir/error.h"

namespace rnnc::testing {

namespace {

constexpr uint16_t kFormatPcm = 1, kFormatExtensible = 0xFFFE;

uint16_t u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t u32(const uint8_t* p) { return u16(p) | static_cast<uint32_t>(u16(p + 2)) << 16; }

// A four-character code as text, non-printable bytes as '?'.
std::string fourcc(const uint8_t* p) {
  std::string text(4, '?');
  for (size_t i = 0; i < 4; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7F) text[i] = static_cast<char>(p[i]);
  }
  return text;
}

std::string format_name(uint16_t tag) {
  switch (tag) {
    case 1: return "PCM";
    case 3: return "IEEE float";
    case 6: return "A-law";
    case 7: return "mu-law";
    case kFormatExtensible: return "extensible";
    default: return "unknown";
  }
}

}  // namespace

Wav parse_wav(const void* data, size_t size, const std::string& what) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 12) {
    raise_invalid_input(cat(what, ": truncated: ", size, " bytes, a RIFF header needs 12"));
  }
  if (std::memcmp(bytes, "RIFF", 4) != 0) {
    raise_invalid_input(cat(what, ": not a RIFF file (starts with '", fourcc(bytes), "')"));
  }
  if (std::memcmp(bytes + 8, "WAVE", 4) != 0) {
    raise_invalid_input(cat(what, ": a RIFF file of type '", fourcc(bytes + 8), "', not 'WAVE'"));
  }
  Wav wav;
  bool have_format = false;
  size_t at = 12;
  while (at + 8 <= size) {
    const std::string id = fourcc(bytes + at);
    const uint32_t length = u32(bytes + at + 4);
    const uint8_t* body = bytes + at + 8;
    if (length > size - at - 8) {
      raise_invalid_input(cat(what, ": truncated: the '", id, "' chunk declares ", length,
                              " bytes, the file holds ", size - at - 8, " after its header"));
    }
    if (id == "fmt ") {
      if (length < 16) {
        raise_invalid_input(cat(what, ": the 'fmt ' chunk is ", length, " bytes, needs 16"));
      }
      uint16_t tag = u16(body);
      // WAVE_FORMAT_EXTENSIBLE: the real format is the first two bytes of the subformat GUID.
      if (tag == kFormatExtensible && length >= 40) tag = u16(body + 24);
      if (tag != kFormatPcm) {
        raise_unsupported(cat(what, ": format ", tag, " (", format_name(tag),
                              "), only PCM (1) is read"));
      }
      const uint16_t channels = u16(body + 2);
      const uint16_t bits = u16(body + 14);
      if (bits != 16) {
        raise_unsupported(cat(what, ": ", bits, " bits per sample, only 16-bit PCM is read"));
      }
      if (channels != 1) {
        raise_unsupported(cat(what, ": ", channels, " channels, only mono is read"));
      }
      wav.sample_rate = static_cast<int>(u32(body + 4));
      have_format = true;
    } else if (id == "data") {
      if (!have_format) raise_invalid_input(cat(what, ": the 'data' chunk comes before 'fmt '"));
      if (length % 2 != 0) {
        raise_invalid_input(cat(what, ": the 'data' chunk is ", length,
                                " bytes, not a whole number of 16-bit samples"));
      }
      wav.samples.resize(length / 2);
      for (size_t i = 0; i < wav.samples.size(); ++i) {
        wav.samples[i] = static_cast<float>(static_cast<int16_t>(u16(body + 2 * i))) / 32768.0f;
      }
      return wav;
    }
    at += 8 + length + (length & 1);  // chunks are padded to an even size
  }
  if (at < size) {
    raise_invalid_input(cat(what, ": truncated: the file ends ", size - at,
                            " bytes into a chunk header (8 bytes)"));
  }
  raise_invalid_input(cat(what, have_format ? ": no 'data' chunk" : ": no 'fmt ' chunk"));
}

Wav read_wav(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) raise(ErrorKind::kIo, cat("cannot open WAV file '", path, "'"));
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)),
                                std::istreambuf_iterator<char>());
  if (file.bad()) raise(ErrorKind::kIo, cat("cannot read WAV file '", path, "'"));
  return parse_wav(bytes.data(), bytes.size(), path);
}

std::vector<float> read_speech(const std::string& dir, const std::string& name, int rate) {
  const std::string path = dir + "/" + name + ".wav";
  if (!std::ifstream(path)) {
    raise(ErrorKind::kIo, cat(path, " is missing: run tests/data/make_speech.sh ", dir));
  }
  Wav wav = read_wav(path);
  if (wav.sample_rate != rate) {
    raise_invalid_input(cat(path, " is sampled at ", wav.sample_rate, " Hz, not ", rate, " Hz"));
  }
  return std::move(wav.samples);
}

}  // namespace rnnc::testing
