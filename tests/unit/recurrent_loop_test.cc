// The recurrent time loop (lowering/core/recurrent_loop.c) with recording stand-ins for its
// compiled pipelines: which rows of XW each projection call writes and where, and which rows each
// step reads and from where, so the order of projections and steps, and the XW views the steps
// get, are checked without any kernel.
#include "lowering/core/recurrent_loop.h"

#include <HalideRuntime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace rnnc {
namespace {

constexpr int64_t kInput = 8, kHidden = 16, kGates = 4;

// What the stand-ins saw, in call order.
struct Recording {
  const float* x = nullptr;  // the run's X
  int64_t batch = 0;
  std::vector<bool> projected;       // per XW row: written by a projection so far
  std::map<const float*, int64_t> held;  // the XW row a projection wrote last at each address
  std::vector<int64_t> projections;  // rows per projection call
  std::string error;  // the first row a step read before it was projected, or from elsewhere
  int steps = 0;
  int64_t step_entries = 0;  // the batch extent of the last step's state output
};
Recording recording;

// Argument 0 is X's rows (x, input) and the last the XW rows the call writes.
int record_projection(void** args) {
  const auto* x = static_cast<const halide_buffer_t*>(args[0]);
  const auto* xw = static_cast<const halide_buffer_t*>(args[3]);
  const int64_t first = (reinterpret_cast<const float*>(x->host) - recording.x) / kInput;
  EXPECT_EQ(x->dim[1].extent, xw->dim[1].extent);
  const auto* rows = reinterpret_cast<const float*>(xw->host);
  for (int64_t row = first; row < first + x->dim[1].extent; ++row) {
    recording.projected.at(static_cast<size_t>(row)) = true;
    recording.held[rows + (row - first) * xw->dim[0].extent] = row;
  }
  recording.projections.push_back(x->dim[1].extent);
  return 0;
}

// Float LSTM arguments: r, xw, step_time, h, h_tiles, c, h_out, c_out: each active entry reads
// XW row t * batch + b, at element (0, 0, 0, b, t) of the xw view (ji, g, jo, b, t).
int record_step(void** args) {
  const auto* xw = static_cast<const halide_buffer_t*>(args[1]);
  const auto* step_time = static_cast<const halide_buffer_t*>(args[2]);
  recording.step_entries = static_cast<const halide_buffer_t*>(args[6])->dim[2].extent;
  const auto* time = reinterpret_cast<const int32_t*>(step_time->host);
  for (int64_t b = 0; b < recording.batch; ++b) {
    if (time[b] < 0) continue;
    const int64_t row = time[b] * recording.batch + b;
    const std::string step = "step " + std::to_string(recording.steps);
    if (!recording.projected.at(static_cast<size_t>(row)) && recording.error.empty()) {
      recording.error = step + " read row " + std::to_string(row) + " before it was projected";
    }
    const halide_dimension_t& t_dim = xw->dim[4];
    if ((time[b] < t_dim.min || time[b] >= t_dim.min + t_dim.extent) && recording.error.empty()) {
      recording.error = step + " read time " + std::to_string(time[b]) + " outside its xw view";
    }
    const float* at = reinterpret_cast<const float*>(xw->host) +
                      (time[b] - t_dim.min) * t_dim.stride + b * xw->dim[3].stride;
    const auto held = recording.held.find(at);
    if ((held == recording.held.end() || held->second != row) && recording.error.empty()) {
      recording.error = step + " read row " + std::to_string(row) +
                        " where the projection wrote row " +
                        (held == recording.held.end() ? "none" : std::to_string(held->second));
    }
  }
  ++recording.steps;
  return 0;
}

struct LoopRun {
  int64_t seq = 43, batch = 3, batch_pad = 1;
  bool reverse = false;
  int64_t chunk_bytes = 4096;    // 0: project at once
  std::vector<int64_t> lengths;  // empty: every entry at full length
};

// A float LSTM direction of kHidden units over X [seq, batch, kInput] (`x`), hidden tiles of
// `padded` units, with the given stand-ins and zero weights (`zeros`: kGates * padded^2).
rn_recurrent stand_in_layer(int64_t seq, int64_t batch, int64_t batch_pad, int64_t padded,
                            bool reverse, rn_pipeline_entry projection, rn_pipeline_entry step,
                            const float* x, const float* zeros) {
  rn_recurrent layer{};
  layer.projection = projection;
  layer.lstm = 1;
  layer.directions = 1;
  layer.hidden = kHidden;
  layer.input = kInput;
  layer.gates = kGates;
  layer.padded = layer.tile = padded;
  layer.batch_pad = batch_pad;
  layer.wt_panel = padded;
  layer.lane = layer.w_ko = layer.r_ko = 1;
  layer.dir[0].reverse = reverse;
  layer.dir[0].step = layer.dir[0].batched_step = step;
  layer.dir[0].bias = layer.dir[0].wt = layer.dir[0].r = zeros;
  layer.x = x;
  layer.seq = seq;
  layer.batch = batch;
  layer.x_seq_stride = batch * kInput;  // [seq, batch, input]
  layer.x_batch_stride = kInput;
  return layer;
}

// Sets the layer's lengths from `lengths` (empty: every entry at full length) into `slots`.
void set_lengths(rn_recurrent& layer, const std::vector<int32_t>& lengths,
                 std::vector<int64_t>& slots) {
  slots.resize(static_cast<size_t>(layer.batch));
  EXPECT_EQ(
      rn_recurrent_lengths(&layer, lengths.empty() ? nullptr : lengths.data(), 32, slots.data()),
      -1);
}

// The direction's memory, 64-byte aligned inside `memory`, laid out by rn_recurrent_start.
rn_recurrent_state start_state(const rn_recurrent& layer, std::vector<uint8_t>& memory) {
  memory.resize(static_cast<size_t>(rn_recurrent_direction_bytes(&layer)) + 64);
  void* aligned = memory.data() + (64 - reinterpret_cast<uintptr_t>(memory.data()) % 64) % 64;
  rn_recurrent_state state;
  rn_recurrent_start(&layer, 0, aligned, &state);
  return state;
}

// Runs every step of one direction with the stand-ins; returns the rows of each projection call.
std::vector<int64_t> projection_calls(const LoopRun& run) {
  std::vector<float> x(static_cast<size_t>(run.seq * run.batch * kInput), 0.0f);
  std::vector<float> zeros(kGates * kHidden * kHidden, 0.0f);
  rn_recurrent layer = stand_in_layer(run.seq, run.batch, run.batch_pad, kHidden, run.reverse,
                                      record_projection, record_step, x.data(), zeros.data());
  layer.xw_chunk_bytes = run.chunk_bytes;
  std::vector<int64_t> length_slots;
  set_lengths(layer, std::vector<int32_t>(run.lengths.begin(), run.lengths.end()), length_slots);

  recording = Recording{};
  recording.x = x.data();
  recording.batch = run.batch;
  recording.projected.assign(static_cast<size_t>(run.seq * run.batch), false);
  std::vector<uint8_t> memory;
  rn_recurrent_state state = start_state(layer, memory);
  EXPECT_EQ(rn_recurrent_advance(&layer, 0, &state, 0, layer.steps), 0);
  EXPECT_EQ(recording.steps, layer.steps);
  EXPECT_EQ(recording.error, "");
  return recording.projections;
}

// 43 steps of 3 entries x 4 gates x 16 units: 768 bytes of XW rows per step, 33,024 in all.
// With 4 KiB chunks (5 steps) every chunk is projected just before its steps read it, into the
// memory of the chunk before (the rows the steps read are checked against where they were
// written).
TEST(RecurrentLoop, AWholeRunOverTheChunkSizeProjectsEachChunkBeforeItsSteps) {
  const std::vector<int64_t> chunks = {15, 15, 15, 15, 15, 15, 15, 15, 9};
  EXPECT_EQ(projection_calls({}), chunks);
  // Every chunk wrote to the same 15 rows.
  EXPECT_EQ(recording.held.size(), 15u);
}

// A reverse direction's chunks start at the last time step: its first chunk is steps 0-4, times
// 42 down to 38.
TEST(RecurrentLoop, AReverseDirectionProjectsItsChunksFromTheLastTimeStep) {
  LoopRun run;
  run.reverse = true;
  const std::vector<int64_t> chunks = {15, 15, 15, 15, 15, 15, 15, 15, 9};
  EXPECT_EQ(projection_calls(run), chunks);
}

TEST(RecurrentLoop, ARunWithinTheChunkSizeProjectsAtOnce) {
  LoopRun run;
  run.chunk_bytes = 43 * 768;  // every step's rows fit
  EXPECT_EQ(projection_calls(run), std::vector<int64_t>{129});
  run.chunk_bytes = 0;
  EXPECT_EQ(projection_calls(run), std::vector<int64_t>{129});
}

// An entry shorter than the run reads its rows at other steps than the rest (a reverse entry
// starts at its own last step): every row is projected first.
TEST(RecurrentLoop, ShortEntriesProjectAtOnce) {
  LoopRun run;
  run.lengths = {43, 20, 43};
  EXPECT_EQ(projection_calls(run), std::vector<int64_t>{129});
  run.reverse = true;
  EXPECT_EQ(projection_calls(run), std::vector<int64_t>{129});
  run.lengths = {43, 43, 43};  // full lengths given explicitly: chunks
  EXPECT_EQ(projection_calls(run).size(), 9u);
}

// A chunk smaller than one step's rows still takes a whole step.
TEST(RecurrentLoop, AChunkTakesAtLeastOneStep) {
  LoopRun run;
  run.seq = 4;
  run.chunk_bytes = 100;
  EXPECT_EQ(projection_calls(run), (std::vector<int64_t>{3, 3, 3, 3}));
}

// A batch of more than one entry is padded to a multiple of batch_pad for the batched step, whose
// state output covers the padded entries; a batch of one is not padded.
TEST(RecurrentLoop, TheBatchedStepTakesTheBatchPaddedToBatchPad) {
  struct Case {
    int64_t batch, batch_pad, entries;
  };
  const Case cases[] = {{1, 2, 1}, {5, 1, 5}, {5, 2, 6}, {6, 2, 6},
                        {2, 2, 2}, {5, 4, 8}, {6, 4, 8}};
  for (const Case& c : cases) {
    LoopRun run;
    run.seq = 4;
    run.batch = c.batch;
    run.batch_pad = c.batch_pad;
    projection_calls(run);
    EXPECT_EQ(recording.step_entries, c.entries)
        << "batch " << c.batch << ", batch_pad " << c.batch_pad;
  }
}

// A step that adds 1 to every element of an active entry's h and keeps an inactive one's (args 2:
// step_time; 3: h [padded, entries]; 6: h_out [tile, tiles, entries]), and notes whether it wrote
// into `y_begin`..`y_end`.
const float* y_begin = nullptr;
const float* y_end = nullptr;
int steps_into_y = 0;
int count_step(void** args) {
  const auto* h = static_cast<const halide_buffer_t*>(args[3]);
  const auto* out = static_cast<const halide_buffer_t*>(args[6]);
  const auto* time =
      reinterpret_cast<const int32_t*>(static_cast<const halide_buffer_t*>(args[2])->host);
  const auto* in = reinterpret_cast<const float*>(h->host);
  auto* written = reinterpret_cast<float*>(out->host);
  for (int32_t b = 0; b < out->dim[2].extent; ++b) {
    const float add = time[b] >= 0 ? 1.0f : 0.0f;
    for (int32_t tile = 0; tile < out->dim[1].extent; ++tile) {
      for (int32_t i = 0; i < out->dim[0].extent; ++i) {
        const int32_t unit = tile * out->dim[0].extent + i;
        written[i * out->dim[0].stride + tile * out->dim[1].stride + b * out->dim[2].stride] =
            in[unit * h->dim[0].stride + b * h->dim[1].stride] + add;
      }
    }
  }
  if (written >= y_begin && written < y_end) ++steps_into_y;
  return 0;
}
int no_projection(void**) { return 0; }

struct StateRun {
  int64_t seq = 7, batch = 3, batch_pad = 1, padded = kHidden;
  bool reverse = false;
  std::vector<int32_t> lengths;          // empty: every entry at full length
  std::vector<int64_t> ranges = {0, 7};  // advance over [ranges[i], ranges[i + 1])
};

// Runs one direction with count_step writing Y [seq, batch, kHidden] (zeros before the run, as
// the recurrent block clears it); returns Y, and the final state in `h_n`.
std::vector<float> counted_y(const StateRun& run, std::vector<float>& h_n) {
  std::vector<float> x(static_cast<size_t>(run.seq * run.batch * kInput), 0.0f);
  std::vector<float> zeros(static_cast<size_t>(kGates * run.padded * run.padded), 0.0f);
  std::vector<float> y(static_cast<size_t>(run.seq * run.batch * kHidden), 0.0f);
  h_n.assign(static_cast<size_t>(run.batch * kHidden), -1.0f);
  rn_recurrent layer = stand_in_layer(run.seq, run.batch, run.batch_pad, run.padded, run.reverse,
                                      no_projection, count_step, x.data(), zeros.data());
  layer.y = y.data();
  layer.y_seq = run.batch * kHidden;
  layer.y_dir = run.batch * kHidden;
  layer.y_batch = kHidden;
  layer.y_h = h_n.data();
  layer.y_h_batch = kHidden;
  std::vector<int64_t> length_slots;
  set_lengths(layer, run.lengths, length_slots);
  y_begin = y.data();
  y_end = y.data() + y.size();
  steps_into_y = 0;
  std::vector<uint8_t> memory;
  rn_recurrent_state state = start_state(layer, memory);
  for (size_t i = 0; i + 1 < run.ranges.size(); ++i) {
    EXPECT_EQ(rn_recurrent_advance(&layer, 0, &state, run.ranges[i], run.ranges[i + 1]), 0);
  }
  rn_recurrent_finish(&layer, 0, &state);
  return y;
}

// Y[t] of entry b after a run from zeros: the steps that entry has taken by time t (forwards t + 1,
// backwards length - t), 0 past its length.
float expected_y(const StateRun& run, int64_t t, int64_t b) {
  const int64_t length = run.lengths.empty() ? run.seq : run.lengths[static_cast<size_t>(b)];
  if (t >= length) return 0.0f;
  return static_cast<float>(run.reverse ? length - t : t + 1);
}

void expect_counted(const StateRun& run, int expected_steps_into_y) {
  std::vector<float> h_n;
  const std::vector<float> y = counted_y(run, h_n);
  EXPECT_EQ(steps_into_y, expected_steps_into_y);
  for (int64_t t = 0; t < run.seq; ++t) {
    for (int64_t b = 0; b < run.batch; ++b) {
      for (int64_t j = 0; j < kHidden; ++j) {
        ASSERT_EQ(y[static_cast<size_t>((t * run.batch + b) * kHidden + j)], expected_y(run, t, b))
            << "time " << t << " entry " << b << " unit " << j;
      }
    }
  }
  for (int64_t b = 0; b < run.batch; ++b) {
    const int64_t length = run.lengths.empty() ? run.seq : run.lengths[static_cast<size_t>(b)];
    ASSERT_EQ(h_n[static_cast<size_t>(b * kHidden)], static_cast<float>(length)) << "entry " << b;
  }
}

// Every entry at full length and Y's rows in the state's layout: each step writes its h into its
// time's row of Y and the next step reads it there; the final state is the last row, also across
// ranges of steps and backwards.
TEST(RecurrentLoop, StepsWriteHIntoYWhenItsRowsAreTheStateLayout) {
  StateRun run;
  expect_counted(run, 7);
  run.ranges = {0, 2, 3, 7};
  expect_counted(run, 7);
  run.reverse = true;
  expect_counted(run, 7);
}

// A short entry (its Y rows past its length stay zero), padding entries of the batched step or
// padding lanes: steps write the state's buffers and their rows are copied into Y.
TEST(RecurrentLoop, StepsWriteTheStateBuffersWhenYRowsDifferFromTheState) {
  StateRun short_entry;
  short_entry.lengths = {7, 4, 7};
  expect_counted(short_entry, 0);
  short_entry.reverse = true;
  expect_counted(short_entry, 0);
  StateRun padded_batch;
  padded_batch.batch_pad = 2;
  expect_counted(padded_batch, 0);
  StateRun padded_lanes;
  padded_lanes.padded = 2 * kHidden;
  expect_counted(padded_lanes, 0);
}

}  // namespace
}  // namespace rnnc
