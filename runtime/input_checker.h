// The checks of a run's inputs against a compiled model's input contract, as Session::run makes
// them (names, element types, ranks, dims against the symbols earlier inputs bound, missing
// inputs), shared by Session and StreamBatcher, which checks each stream's chunk with the same
// messages before it joins a batch. Allocation-free unless a check fails.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rnnc/rnnc.h"

namespace rnnc {

class InputChecker {
 public:
  // `fed`: the indices (graph input order, constant inputs included) of the inputs a session
  // feeds from its state, which a run may leave out.
  InputChecker(const CompiledModel& model, std::vector<int> fed);

  // Checks `inputs`; throws kInvalidInput with Session::run's message. Afterwards given() and
  // bound() describe the run.
  void check(const std::vector<NamedTensor>& inputs);
  // One tensor for graph input `index`; `what` starts the message ("input", "carried state").
  void check_one(size_t index, ElementType type, const std::vector<int64_t>& shape,
                 const void* data, const char* what);
  // The shape of the zeros a session feeds state input `index` when the run leaves it out: from
  // the dims the checked `inputs` bound (and `rows` on `batch_axis`, when one is given: a stream
  // batcher's chunk), else the shape the model gives state output `output` for them
  // (runtime/shape_specializer.h); kInvalidInput when neither decides it.
  std::vector<int64_t> zero_state_shape(size_t index, const std::string& output,
                                        const std::vector<NamedTensor>& inputs,
                                        int batch_axis = -1, int64_t rows = -1) const;

  // The shape the model gives graph output `output` for the checked `inputs`, with the bound
  // dims changed by `overrides` (a symbol's index into CompiledModel's symbolic input dims, and
  // its size, -1 for unbound): the output's type in the program with the bound dims put in, else
  // the type graph_opt infers with them and the scalar inputs fixed
  // (runtime/shape_specializer.h); nullopt when neither decides every dim.
  std::optional<std::vector<int64_t>> output_shape(
      const std::string& output, const std::vector<NamedTensor>& inputs,
      const std::vector<std::pair<int, int64_t>>& overrides = {}) const;
  // The index of a symbolic input dim by name, -1 when there is none.
  int symbol_index(const std::string& name) const;

  // Per graph input: whether the checked inputs give it; marks one as given.
  bool given(size_t index) const { return given_[index] != 0; }
  void set_given(size_t index) { given_[index] = 1; }
  // Per symbol (CompiledModel's symbolic input dims): its size in this run, or -1.
  const std::vector<int64_t>& bound() const { return bound_; }
  // The graph input's index by name, -1 when there is none; its count (constant inputs included).
  int find_input(const std::string& name) const;
  size_t input_count() const { return given_.size(); }
  const std::vector<int>& fed() const { return fed_; }

 private:
  const CompiledModel::Impl& model_;
  std::vector<int> fed_;
  std::vector<char> given_;
  std::vector<int64_t> bound_;
};

// A session whose runs never use shape specializations (ModelOptions::specialize_shapes) and,
// in a model of plan kAuto, always take the sequential plan (no PlanChooser duels): the
// batcher's runs bind batch sizes that change from run to run.
Session new_generic_session(const CompiledModel& model,
                            const std::vector<std::pair<std::string, std::string>>& state);

}  // namespace rnnc
