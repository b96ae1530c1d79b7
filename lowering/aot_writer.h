// AotWriter: how an execution block writes itself into an ahead-of-time C driver (aot/).
//
// `rnnc compile` (aot/export.h) walks a Program's blocks in order and asks each to describe its
// run as C statements (ExecutionBlock::write_aot): the Halide functions it calls, the constant
// tensors it reads (they go into the weight file in the layouts lowering marshaled them into), and
// the code of its call sequence - for a recurrent block the time loop and the state buffers. The
// writer hands out C expressions for everything the code refers to, so a block never learns how
// the driver stores values, dims or weights. Blocks that cannot run without rnnc's C++ (reference
// kernels) keep ExecutionBlock's default, which raises kUnsupported naming the block's nodes.
//
// The generated code runs inside a function returning an int status; the writer's helpers used
// below (RN_TRY, rn_bind, ...) are the driver's (aot/driver_support.c). Every C expression the
// writer returns is parenthesized and may be evaluated any number of times.
#pragma once

#include <string>
#include <vector>

#include "ir/dim.h"
#include "ir/tensor.h"

namespace rnnc {

class Node;
class Value;
struct CompiledPipeline;

// The values a block's run reads and writes, in the order BlockIO would hold them (nullptr for an
// omitted or unused slot): a block of the partition gets its inputs and outputs; a wrapper that
// maps a node's slots (lowering/program.cc) gives the node's slot order.
struct AotBlockIO {
  std::vector<const Value*> inputs;
  std::vector<const Value*> outputs;
};

class AotWriter {
 public:
  virtual ~AotWriter() = default;

  // The C identifier of the pipeline's argv entry (`int NAME(void** args)`); its object file goes
  // into the library. Equal pipelines give the same name.
  virtual std::string pipeline(const CompiledPipeline& pipeline) = 0;
  // A `const void*` expression for a constant's data in the weight file (64-byte aligned).
  virtual std::string constant(const Tensor& tensor) = 0;
  // A `void*` expression for a run-time value's data: row-major, shaped as value->type.shape.
  virtual std::string value(const Value* value) = 0;
  // An `int64_t` expression for a dim: its number, or a polynomial over the run's dim arguments.
  // kUnsupported for a dim shape inference could not name.
  virtual std::string dim(const Dim& dim) = 0;
  // The value's shape, one expression per dim; kUnsupported when its rank is unknown.
  virtual std::vector<std::string> shape(const Value* value) = 0;
  // A `void*` expression for `bytes` (an int64_t expression) of zero-filled, 64-byte aligned
  // scratch that stays valid until the block's code ends; the driver keeps the memory between
  // runs, so steady-state runs do not allocate.
  virtual std::string scratch(const std::string& bytes) = 0;
  // For a block whose output's extents depend on its operands' values (Slice and Pad with
  // run-time operands): `shape_array`, an int64_t array expression the block's code has filled
  // with the output's extents, gives the value's data-dependent dims. The driver records them and
  // sizes the value's buffer; call it after that code and before any code that writes the value.
  virtual void define_shape(const Value* value, const std::string& shape_array) = 0;
  // A C identifier not used anywhere else in the driver, starting with `stem`.
  virtual std::string fresh(const std::string& stem) = 0;
  // Appends C statements to the block's code.
  virtual void code(const std::string& text) = 0;
  // What the block is ("halide lstm forward h=128 in=40" and its nodes): for error messages.
  virtual const std::string& block_name() const = 0;
};

// A run-time integer operand of `node` (Slice's starts, Pad's pads, Reshape's shape: int32 or
// int64 with a static count of at most `max_count`) as a local int64_t array that `code`, appended
// to, fills when the block runs; returns the array's name and sets `count`. kUnsupported names
// the node otherwise.
std::string run_time_ints(AotWriter& writer, const Node& node, const Value* value,
                          const char* name, size_t max_count, std::string& code, size_t& count);

// A C string literal of `text`, for error messages in generated code.
std::string c_string_literal(const std::string& text);

}  // namespace rnnc
