// NumPy .npy files (format versions 1.0-3.0): the other tensor file format `rnnc run` reads and
// writes besides ONNX TensorProto .pb. C order, little-endian, numeric and bool dtypes.
#pragma once

#include <string>

#include "ir/tensor.h"

namespace rnnc {

Tensor parse_npy(const void* data, size_t size, const std::string& what);
Tensor read_npy(const std::string& path);
void write_npy(const std::string& path, const Tensor& tensor);

// Reads a .npy or ONNX TensorProto .pb file, by extension (anything not .npy is read as .pb).
Tensor read_tensor_file(const std::string& path);

}  // namespace rnnc
