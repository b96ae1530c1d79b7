// Element types: every ONNX TensorProto.DataType, with the same numeric values so import and
// export are a cast. Short names ("f32", "i64", ...) are what the IR text form prints.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace rnnc {

enum class DType : int32_t {
  kUndefined = 0,
  kFloat32 = 1,
  kUInt8 = 2,
  kInt8 = 3,
  kUInt16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kString = 8,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUInt32 = 12,
  kUInt64 = 13,
  kComplex64 = 14,
  kComplex128 = 15,
  kBFloat16 = 16,
};

// Byte size of one element; 0 for kString and kUndefined (strings are stored out of line).
size_t dtype_size(DType dtype);
// Short name used in the IR text: f32, f64, f16, bf16, i8..i64, u8..u64, bool, string, c64, c128.
const char* dtype_name(DType dtype);
// ONNX's own name: "float", "int64", ... (for error messages that quote the spec).
const char* dtype_onnx_name(DType dtype);
// The DType for an ONNX TensorProto.DataType value, or nullopt for values outside the enum.
std::optional<DType> dtype_from_onnx(int32_t onnx_type);
std::optional<DType> dtype_from_name(const std::string& short_name);
// The ONNX name of a valid element type rnnc has no DType for - the float8, 4-bit, float4 and
// 2-bit types of opsets 19 and later (codes 17 to 26) - or nullptr. Import reports these as
// unsupported rather than invalid.
const char* unrepresented_onnx_type_name(int32_t onnx_type);

bool is_floating(DType dtype);  // f16, bf16, f32, f64
bool is_integer(DType dtype);   // i8..i64, u8..u64 (not bool)
bool is_signed_integer(DType dtype);

// The values of an 8- or 16-bit integer type (QuantizeLinear's outputs), or nullopt for others.
struct QuantizedRange {
  int64_t lo;
  int64_t hi;
};
std::optional<QuantizedRange> quantized_range(DType dtype);

// IEEE half and bfloat16 conversions (round to nearest even), used wherever 16-bit floats are
// computed in float32.
float half_to_float(uint16_t bits);
uint16_t float_to_half(float value);
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);

}  // namespace rnnc
