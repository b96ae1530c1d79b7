// One --model argument of `rnnc serve`: NAME=PATH[,option=value...], with the options of
// `rnnc run` that decide the compiled model, and the serving ones:
//   fix=NAME=V[:V...]    compile an integer input in as a constant (rnnc run --fix; ':' separates
//                        values, since ',' separates options)
//   dim=NAME=N           the size of a symbolic dim for the warm-up run and the quantization guard
//   quantize=CONFIG      quantize at load ('default' or a JSON config; rnnc run --quantize)
//   plan=P               auto, sequential, parallel or pipeline
//   threads=N            the model's executor threads (default 1)
//   state=OUT:IN         carry the model's own state: output OUT feeds input IN at the sequence's
//                        next request (Silero VAD: state=stateN:state); repeatable
//   batch-axis=T:AXIS    batching: the batch axis of input or output T where the batcher cannot
//                        tell it from shared dim names (-1: none); repeatable
//   batching=on|off      sequences through the stream batcher, or one Session each (default off)
//   max-batch=N          batching: the largest batch (default 64)
//   max-wait-us=N        batching: the longest a chunk waits for others (default 2000)
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rnnc/rnnc.h"

namespace rnnc::serve {

struct ModelSpec {
  std::string name;
  std::string path;
  ModelOptions options;
  std::map<std::string, int64_t> dims;                     // dim=
  std::vector<std::pair<std::string, std::string>> state;  // state= (output, input)
  std::map<std::string, int> batch_axes;                   // batch-axis=
  bool batching = false;
  int max_batch = 64;
  int max_wait_us = 2000;
};

// kInvalidInput naming the option for anything malformed or unknown.
ModelSpec parse_model_spec(const std::string& text);

}  // namespace rnnc::serve
