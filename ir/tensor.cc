#include "ir/tensor.h"

#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <sstream>

namespace rnnc {

int64_t shape_numel(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) raise_invalid_input(cat("negative dimension ", dim, " in a tensor shape"));
    // The overflow check without a division: tensors are counted on every block's run.
    if (__builtin_mul_overflow(count, dim, &count)) {
      raise_invalid_input("tensor element count overflows int64");
    }
  }
  return count;
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : Tensor(dtype, std::move(shape), 64) {}

Tensor Tensor::huge_page_backed(DType dtype, std::vector<int64_t> shape) {
  return Tensor(dtype, std::move(shape), kHugePage);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, size_t alignment)
    : dtype_(dtype), shape_(std::move(shape)), numel_(shape_numel(shape_)) {
  if (dtype_ == DType::kString) {
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(numel_));
    return;
  }
  size_t element = dtype_size(dtype_);
  RNNC_CHECK(element > 0 || dtype_ == DType::kUndefined, "dtype without a size");
  constexpr int64_t kMaxBytes = int64_t{1} << 40;  // 1 TiB: anything larger is a corrupt shape
  if (element && numel_ > kMaxBytes / static_cast<int64_t>(element)) {
    raise_invalid_input(cat("tensor of ", numel_, " elements is too large to allocate"));
  }
  const size_t used = static_cast<size_t>(numel_) * element;
  const size_t bytes = std::max<size_t>(alignment, (used + alignment - 1) / alignment * alignment);
  if (alignment == kHugePage) {
    // Fresh pages from mmap (malloc may hand back memory already faulted in 4 KiB pages),
    // aligned to 2 MiB inside a mapping one huge page larger, advised before the first touch so
    // its page faults take huge pages. Anonymous mappings are zero. Advice the kernel does not
    // take (THP disabled) leaves ordinary pages: nothing to report.
    const size_t mapped = bytes + kHugePage;
    void* region =
        mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED)
      raise(ErrorKind::kIo, cat("out of memory mapping ", mapped, " bytes"));
    const uintptr_t start =
        (reinterpret_cast<uintptr_t>(region) + kHugePage - 1) & ~(kHugePage - 1);
    madvise(reinterpret_cast<void*>(start), bytes, MADV_HUGEPAGE);
    bytes_ = std::shared_ptr<uint8_t>(reinterpret_cast<uint8_t*>(start),
                                      [region, mapped](uint8_t*) { munmap(region, mapped); });
    return;
  }
  void* memory = std::aligned_alloc(alignment, bytes);
  if (!memory) raise(ErrorKind::kIo, cat("out of memory allocating ", bytes, " bytes"));
  std::memset(memory, 0, bytes);
  bytes_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(memory), [](uint8_t* p) { std::free(p); });
}

std::string shape_text(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

Tensor Tensor::borrow(DType dtype, const std::vector<int64_t>& shape, void* data, bool writable) {
  Tensor tensor;
  tensor.rebind(dtype, shape.data(), shape.size(), data, writable);
  return tensor;
}

void Tensor::rebind(DType dtype, const int64_t* shape, size_t rank, void* data, bool writable) {
  RNNC_CHECK(dtype != DType::kString && dtype != DType::kUndefined, "borrowing a ",
             dtype_name(dtype), " tensor");
  dtype_ = dtype;
  shape_.assign(shape, shape + rank);
  numel_ = shape_numel(shape_);
  strings_.reset();
  borrow_ = writable ? Borrow::kWritable : Borrow::kReadOnly;
  // The aliasing constructor with an empty owner: a non-owning pointer, no control block.
  bytes_ = std::shared_ptr<uint8_t>(std::shared_ptr<uint8_t>(), static_cast<uint8_t*>(data));
}

bool Tensor::reusable_as(DType dtype, const int64_t* shape, size_t rank) const {
  if (dtype_ != dtype || dtype == DType::kString || !bytes_ || !exclusive()) return false;
  if (shape_.size() != rank) return false;
  for (size_t i = 0; i < rank; ++i) {
    if (shape_[i] != shape[i]) return false;
  }
  return true;
}

bool Tensor::recycle(Tensor& tensor, DType dtype, const int64_t* shape, size_t rank) {
  if (tensor.reusable_as(dtype, shape, rank)) return false;
  tensor = Tensor(dtype, std::vector<int64_t>(shape, shape + rank));
  return true;
}

void Tensor::check_access(size_t element_size, bool is_u16, DType requested) const {
  RNNC_CHECK(holds_ == Holds::kTensor, "typed access to a ",
             holds_ == Holds::kSequence ? "sequence" : "none", " value");
  bool ok = requested == dtype_ ||
            (is_u16 && (dtype_ == DType::kFloat16 || dtype_ == DType::kBFloat16));
  RNNC_CHECK(ok && element_size == dtype_size(dtype_), "typed access as ", dtype_name(requested),
             " to a ", dtype_name(dtype_), " tensor");
  RNNC_CHECK(has_data(), "typed access to a ", dtype_name(dtype_), " tensor without data (a constant "
             "a compiled block holds)");
}

Tensor Tensor::sequence(DType dtype, std::vector<Tensor> elements) {
  for (const Tensor& element : elements) {
    RNNC_CHECK(element.is_tensor() && element.dtype() == dtype, "a sequence of ",
               dtype_name(dtype), " holds a ", element.is_tensor() ? dtype_name(element.dtype())
                                                                  : "non-tensor", " element");
  }
  Tensor out;
  out.dtype_ = dtype;
  out.holds_ = Holds::kSequence;
  out.elements_ = std::make_shared<const std::vector<Tensor>>(std::move(elements));
  return out;
}

Tensor Tensor::none(DType dtype) {
  Tensor out;
  out.dtype_ = dtype;
  out.holds_ = Holds::kNone;
  return out;
}

const std::vector<Tensor>& Tensor::elements() const {
  RNNC_CHECK(holds_ == Holds::kSequence && elements_, "elements() of a value that is not a sequence");
  return *elements_;
}

std::vector<std::string>& Tensor::strings() {
  RNNC_CHECK(dtype_ == DType::kString && strings_, "strings() on a ", dtype_name(dtype_), " tensor");
  return *strings_;
}

const std::vector<std::string>& Tensor::strings() const {
  RNNC_CHECK(dtype_ == DType::kString && strings_, "strings() on a ", dtype_name(dtype_), " tensor");
  return *strings_;
}

namespace {

template <typename Fn>
auto visit_numeric(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: return fn(float{});
    case DType::kFloat64: return fn(double{});
    case DType::kInt8: return fn(int8_t{});
    case DType::kInt16: return fn(int16_t{});
    case DType::kInt32: return fn(int32_t{});
    case DType::kInt64: return fn(int64_t{});
    case DType::kUInt8: return fn(uint8_t{});
    case DType::kUInt16: return fn(uint16_t{});
    case DType::kUInt32: return fn(uint32_t{});
    case DType::kUInt64: return fn(uint64_t{});
    case DType::kBool: return fn(bool{});
    default: break;
  }
  raise_unsupported(cat("element type ", dtype_onnx_name(dtype), " is not numeric here"));
}

}  // namespace

double Tensor::get_double(int64_t i) const {
  if (dtype_ == DType::kFloat16) return half_to_float(data<uint16_t>()[i]);
  if (dtype_ == DType::kBFloat16) return bfloat16_to_float(data<uint16_t>()[i]);
  return visit_numeric(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return static_cast<double>(reinterpret_cast<const T*>(bytes_.get())[i]);
  });
}

int64_t Tensor::get_int64(int64_t i) const {
  if (is_floating(dtype_)) return static_cast<int64_t>(get_double(i));
  return visit_numeric(dtype_, [&](auto tag) {
    using T = decltype(tag);
    return static_cast<int64_t>(reinterpret_cast<const T*>(bytes_.get())[i]);
  });
}

void Tensor::set_double(int64_t i, double value) {
  if (dtype_ == DType::kFloat16) {
    data<uint16_t>()[i] = float_to_half(static_cast<float>(value));
    return;
  }
  if (dtype_ == DType::kBFloat16) {
    data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(value));
    return;
  }
  visit_numeric(dtype_, [&](auto tag) {
    using T = decltype(tag);
    T converted;
    if constexpr (std::is_same_v<T, bool>) {
      converted = value != 0.0;
    } else if constexpr (std::is_integral_v<T>) {
      // NaN/inf/out of range have no defined integer: pin to 0 / the range ends instead of UB.
      if (std::isnan(value)) {
        converted = 0;
      } else if (value <= static_cast<double>(std::numeric_limits<T>::lowest())) {
        converted = std::numeric_limits<T>::lowest();
      } else if (value >= static_cast<double>(std::numeric_limits<T>::max())) {
        converted = std::numeric_limits<T>::max();
      } else {
        converted = static_cast<T>(value);
      }
    } else {
      converted = static_cast<T>(value);
    }
    reinterpret_cast<T*>(bytes_.get())[i] = converted;
    return 0;
  });
}

Tensor Tensor::clone() const {
  if (holds_ != Holds::kTensor) return *this;  // sequences and none are never written in place
  Tensor copy(dtype_, shape_);
  if (dtype_ == DType::kString) {
    *copy.strings_ = *strings_;
  } else if (numel_ > 0) {
    std::memcpy(copy.bytes_.get(), bytes_.get(), nbytes());
  }
  return copy;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  RNNC_CHECK(holds_ == Holds::kTensor && shape_numel(shape) == numel_,
             "reshape changes the element count or reshapes a non-tensor value");
  Tensor view = *this;
  view.shape_ = std::move(shape);
  if (view.borrow_ == Borrow::kWritable) view.borrow_ = Borrow::kReadOnly;  // one writer per buffer
  return view;
}

void Tensor::alias(const Tensor& source, int64_t offset, const int64_t* shape, size_t rank) {
  RNNC_CHECK(source.dtype_ != DType::kString && source.holds_ == Holds::kTensor,
             "a view of a string tensor or of a non-tensor value");
  dtype_ = source.dtype_;
  shape_.assign(shape, shape + rank);
  numel_ = shape_numel(shape_);
  RNNC_CHECK(offset >= 0 && offset + numel_ <= source.numel_, "a view beyond its source");
  borrow_ = source.borrow_ == Borrow::kWritable ? Borrow::kReadOnly : source.borrow_;
  strings_.reset();
  // The aliasing constructor: source's owner (none for a borrow), an address inside it.
  bytes_ = std::shared_ptr<uint8_t>(source.bytes_, source.bytes_.get() + offset * static_cast<int64_t>(dtype_size(dtype_)));
}

Tensor Tensor::without_data() const {
  Tensor metadata;
  metadata.dtype_ = dtype_;
  metadata.shape_ = shape_;
  metadata.numel_ = numel_;
  return metadata;
}

void Tensor::drop_storage() {
  bytes_.reset();
  strings_.reset();
  elements_.reset();
  holds_ = Holds::kTensor;
  dtype_ = DType::kUndefined;
  borrow_ = Borrow::kOwned;
  numel_ = 0;
}

Tensor Tensor::cast(DType to) const {
  Tensor out(to, shape_);
  if (to == dtype_) return clone();
  if (dtype_ == DType::kString || to == DType::kString) {
    raise_unsupported(cat("cast between ", dtype_onnx_name(dtype_), " and ", dtype_onnx_name(to)));
  }
  // 64-bit integers do not fit a double exactly: convert them through int64.
  bool integral_path = !is_floating(dtype_) && !is_floating(to);
  for (int64_t i = 0; i < numel_; ++i) {
    if (integral_path && to != DType::kBool) {
      int64_t v = dtype_ == DType::kUInt64
                      ? static_cast<int64_t>(reinterpret_cast<const uint64_t*>(bytes_.get())[i])
                      : get_int64(i);
      visit_numeric(to, [&](auto tag) {
        using T = decltype(tag);
        reinterpret_cast<T*>(out.bytes_.get())[i] = static_cast<T>(v);
        return 0;
      });
    } else {
      out.set_double(i, get_double(i));
    }
  }
  return out;
}

bool Tensor::bitwise_equal(const Tensor& other) const {
  if (holds_ != other.holds_ || dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (holds_ == Holds::kNone) return true;
  if (holds_ == Holds::kSequence) {
    const std::vector<Tensor>& a = elements();
    const std::vector<Tensor>& b = other.elements();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].bitwise_equal(b[i])) return false;
    }
    return true;
  }
  if (dtype_ == DType::kString) return *strings_ == *other.strings_;
  return numel_ == 0 || std::memcmp(bytes_.get(), other.bytes_.get(), nbytes()) == 0;
}

std::string tensor_summary(const Tensor& tensor, int max_values) {
  std::ostringstream out;
  if (tensor.is_none()) return cat("none<", dtype_name(tensor.dtype()), ">");
  if (tensor.is_sequence()) {
    const std::vector<Tensor>& elements = tensor.elements();
    out << "seq<" << dtype_name(tensor.dtype()) << ">(" << elements.size() << ") [";
    size_t shown = std::min<size_t>(elements.size(), 4);
    for (size_t i = 0; i < shown; ++i) out << (i ? ", " : "") << tensor_summary(elements[i], max_values);
    if (elements.size() > shown) out << ", ...";
    out << "]";
    return out.str();
  }
  out << dtype_name(tensor.dtype()) << "[";
  for (size_t i = 0; i < tensor.shape().size(); ++i) out << (i ? ", " : "") << tensor.shape()[i];
  out << "]";
  if (tensor.numel() == 0) return out.str();
  out << " {";
  int64_t shown = std::min<int64_t>(tensor.numel(), max_values);
  for (int64_t i = 0; i < shown; ++i) {
    if (i) out << ", ";
    if (tensor.dtype() == DType::kString) {
      out << '"' << tensor.strings()[static_cast<size_t>(i)] << '"';
    } else if (is_floating(tensor.dtype())) {
      out << tensor.get_double(i);
    } else if (tensor.dtype() == DType::kUInt64) {
      out << tensor.data<uint64_t>()[i];
    } else {
      out << tensor.get_int64(i);
    }
  }
  if (tensor.numel() > shown) out << ", ...";
  out << "}";
  return out.str();
}

}  // namespace rnnc
