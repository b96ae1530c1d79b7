#!/usr/bin/env bash
# Synthesizes the real-speech audio of the Silero accuracy test (tests/runtime/
# silero_speech_test.cc): three WAV files, 16 kHz mono 16-bit PCM, each 1.0 s of silence, an
# utterance, 0.8 s of silence, a second utterance, 1.0 s of silence. Different voices and speeds;
# the third file has white noise at -46 dBFS mixed in throughout (its "silence" is noise only).
#   make_speech.sh OUT_DIR
# Needs espeak-ng and sox (scripts/setup.sh installs both). Deterministic: the same espeak-ng and
# sox give the same bytes (sox -D: no dither, -R: a fixed seed for the noise).
set -euo pipefail
out=${1:?usage: make_speech.sh OUT_DIR}
for tool in espeak-ng sox; do
  if ! command -v "$tool" >/dev/null; then
    echo "make_speech: $tool is missing (scripts/setup.sh installs it)" >&2
    exit 1
  fi
done
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# utterance VOICE SPEED TEXT OUT: TEXT spoken, resampled to 16 kHz mono 16-bit.
utterance() {
  espeak-ng -v "$1" -s "$2" -w "$work/raw.wav" "$3"
  sox -D "$work/raw.wav" -r 16000 -c 1 -b 16 "$4"
}

# speech FILE VOICE SPEED TEXT1 TEXT2: the two utterances with the silences described above.
speech() {
  utterance "$2" "$3" "$4" "$work/a.wav"
  utterance "$2" "$3" "$5" "$work/b.wav"
  sox -D "$work/a.wav" "$work/a_gap.wav" pad 0 0.8
  sox -D "$work/a_gap.wav" "$work/b.wav" "$1" pad 1.0 1.0
}

speech "$out/speech_en_us.wav" en-us 150 \
  "The quick brown fox jumps over the lazy dog." \
  "Voice activity detection finds the speech in a stream of audio."
speech "$out/speech_en_gb_female_slow.wav" en-gb+f3 120 \
  "Please call Stella and ask her to bring these things with her from the store." \
  "Six spoons of fresh snow peas, five thick slabs of blue cheese."
speech "$work/noise_clean.wav" en-us+m3 185 \
  "Turn left at the second light, then keep going until you reach the bridge." \
  "It is twenty past seven in the morning."
# White noise at amplitude 0.005 (-46 dBFS), as long as the speech, mixed in at full level.
length=$(soxi -s "$work/noise_clean.wav")
sox -D -R -n -r 16000 -c 1 -b 16 "$work/noise.wav" synth "${length}s" whitenoise vol 0.005
sox -D -m -v 1 "$work/noise_clean.wav" -v 1 "$work/noise.wav" "$out/speech_en_us_fast_noise.wav"
echo "make_speech: wrote 3 files to $out" >&2
