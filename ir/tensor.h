// Tensor: a concrete, dense, row-major array of one element type. Used for initializers,
// Constant values and every value the reference evaluator computes.
//
// The same object also carries ONNX's two other value kinds where a graph has them (the reference
// evaluator and reference blocks pass them between nodes as they pass tensors): a sequence of
// tensors, and the absent value of an optional. A present optional is its tensor or sequence
// itself. Only the sequence ops, Identity, If, Loop and the Optional ops see these; every other
// kernel reads tensors, and typed access to a sequence or to none is an internal error.
//
// A Tensor is a handle: copying it shares the storage (initializers of a large model are not
// duplicated when the evaluator binds them). Code that writes into a tensor must own a fresh one
// (construct it, or clone()). Storage is 64-byte aligned so later stages can hand it to vectorized
// code as is.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"
#include "ir/error.h"

namespace rnnc {

template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::kFloat32; }
template <> constexpr DType dtype_of<double>() { return DType::kFloat64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::kInt8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::kInt16; }
template <> constexpr DType dtype_of<int32_t>() { return DType::kInt32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::kInt64; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::kUInt8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::kUInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::kUInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::kUInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::kBool; }

int64_t shape_numel(const std::vector<int64_t>& shape);

// What a Tensor object holds (see above).
enum class Holds : uint8_t {
  kTensor,
  kSequence,  // elements(): tensors of dtype() each, possibly none
  kNone,      // an optional without a value; dtype() is its declared element type
};

class Tensor {
 public:
  Tensor() = default;  // an empty f32 scalar-less placeholder: dtype kUndefined, no storage
  // A zero-filled tensor. Throws kInvalidInput if the element count overflows or is negative.
  Tensor(DType dtype, std::vector<int64_t> shape);
  // The same, in memory backed by 2 MiB transparent huge pages where the kernel grants them
  // (madvise MADV_HUGEPAGE; the allocation is rounded up to whole 2 MiB pages). For constant
  // tensors that are re-read from L2 at every step of a recurrence: in 4 KiB pages, physical
  // addresses bits 12-16 (part of an L2 set index) are random, so a tensor of most of L2's size
  // overflows some sets and loses part of itself at every pass; a huge page maps those bits
  // one to one.
  static Tensor huge_page_backed(DType dtype, std::vector<int64_t> shape);

  template <typename T>
  static Tensor from_vector(std::vector<int64_t> shape, const std::vector<T>& values) {
    Tensor tensor(dtype_of<T>(), std::move(shape));
    RNNC_CHECK(static_cast<int64_t>(values.size()) == tensor.numel(), "value count mismatch");
    T* out = tensor.data<T>();
    for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return tensor;
  }
  // A tensor over memory the caller owns and keeps alive (a run's input, a caller's output
  // buffer): no copy and no allocation beyond the shape. The memory must be suitably aligned for
  // the element type. Only a `writable` borrow (a caller's output buffer) may be recycled.
  static Tensor borrow(DType dtype, const std::vector<int64_t>& shape, void* data,
                       bool writable = false);
  // Re-points this tensor at borrowed memory, reusing its shape storage: allocation-free when the
  // rank is unchanged (a session re-binding the same input every run).
  void rebind(DType dtype, const int64_t* shape, size_t rank, void* data, bool writable = false);
  bool borrowed() const { return borrow_ != Borrow::kOwned; }

  // Output recycling: true when nothing else holds this tensor's storage (or it is a writable
  // borrow), so a block may overwrite it instead of allocating a fresh one.
  bool exclusive() const {
    return borrow_ == Borrow::kOwned ? bytes_.use_count() <= 1 : borrow_ == Borrow::kWritable;
  }
  bool reusable_as(DType dtype, const int64_t* shape, size_t rank) const;
  // Makes `tensor` a writable tensor of `dtype` and `shape`: reuses it when reusable_as (contents
  // left as they are; returns false), else replaces it by a fresh zero-filled one (returns true).
  static bool recycle(Tensor& tensor, DType dtype, const int64_t* shape, size_t rank);

  template <typename T>
  static Tensor scalar(T value) {
    return from_vector<T>({}, {value});
  }

  // A sequence of `elements`, each of element type `dtype` (checked).
  static Tensor sequence(DType dtype, std::vector<Tensor> elements);
  // An optional's absent value: a tensor or sequence of `dtype` elements when present.
  static Tensor none(DType dtype);
  Holds holds() const { return holds_; }
  bool is_tensor() const { return holds_ == Holds::kTensor; }
  bool is_sequence() const { return holds_ == Holds::kSequence; }
  bool is_none() const { return holds_ == Holds::kNone; }
  // A sequence's elements; internal error on anything else.
  const std::vector<Tensor>& elements() const;

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_.at(static_cast<size_t>(axis)); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DType::kUndefined || holds_ != Holds::kTensor; }

  // Typed access; the element type must match dtype() exactly (16-bit floats are uint16_t).
  template <typename T>
  T* data() {
    check_access(sizeof(T), std::is_same_v<T, uint16_t>, dtype_of_or_undefined<T>());
    return reinterpret_cast<T*>(bytes_.get());
  }
  template <typename T>
  const T* data() const {
    check_access(sizeof(T), std::is_same_v<T, uint16_t>, dtype_of_or_undefined<T>());
    return reinterpret_cast<const T*>(bytes_.get());
  }
  void* raw_data() { return bytes_.get(); }
  const void* raw_data() const { return bytes_.get(); }

  std::vector<std::string>& strings();
  const std::vector<std::string>& strings() const;

  // Element i converted to double / int64 (any numeric dtype); for generic, non-hot code.
  double get_double(int64_t i) const;
  int64_t get_int64(int64_t i) const;
  // Stores value into element i, converting to this tensor's dtype: integers truncate toward zero
  // and saturate at their range (NaN -> 0); bool is value != 0.
  void set_double(int64_t i, double value);

  Tensor clone() const;
  // Same storage, new shape with the same element count.
  Tensor reshaped(std::vector<int64_t> shape) const;
  // Makes this tensor a read-only view of `rank` dims of `source`'s elements starting at element
  // `offset` (the view must lie within source; not for strings). It shares source's storage (a
  // writable borrow becomes a read-only one) and reuses this tensor's shape storage, so a view
  // re-made every run allocates nothing.
  void alias(const Tensor& source, int64_t offset, const int64_t* shape, size_t rank);
  // The same dtype and shape without the data: a constant whose data a compiled block holds in
  // its own layout keeps its type in the graph, not a second copy. Typed access to it is an
  // internal error.
  Tensor without_data() const;
  bool has_data() const { return bytes_ != nullptr || strings_ != nullptr || numel_ == 0; }
  // Drops the storage (an alias's hold on its source, so that source can be recycled) and
  // leaves this tensor undefined, keeping the shape's capacity for the next alias().
  void drop_storage();
  // Elementwise conversion (float -> int truncates toward zero, as ONNX Cast does).
  Tensor cast(DType to) const;
  // Exact equality of dtype, shape and bytes (NaNs with equal bits compare equal).
  bool bitwise_equal(const Tensor& other) const;

 private:
  static constexpr size_t kHugePage = size_t{2} << 20;
  Tensor(DType dtype, std::vector<int64_t> shape, size_t alignment);  // zero-filled

  template <typename T>
  static constexpr DType dtype_of_or_undefined() {
    if constexpr (std::is_same_v<T, uint16_t>) {
      return DType::kUInt16;
    } else if constexpr (std::is_arithmetic_v<T>) {
      return dtype_of<T>();
    } else {
      return DType::kUndefined;
    }
  }
  void check_access(size_t element_size, bool is_u16, DType requested) const;

  enum class Borrow { kOwned, kReadOnly, kWritable };
  DType dtype_ = DType::kUndefined;
  Holds holds_ = Holds::kTensor;
  Borrow borrow_ = Borrow::kOwned;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::shared_ptr<uint8_t> bytes_;
  std::shared_ptr<std::vector<std::string>> strings_;
  std::shared_ptr<const std::vector<Tensor>> elements_;  // kSequence
};

// "f32[2, 3] {1, 2, ...}"; a sequence as "seq<f32>(2) [f32[3] {...}, ...]", none as "none<f32>".
std::string tensor_summary(const Tensor& tensor, int max_values = 8);
// A shape or any list of integers as error messages print it: "[2, -1, 3]".
std::string shape_text(const std::vector<int64_t>& values);

}  // namespace rnnc
