#include "ir/dtype.h"

#include <cmath>
#include <cstring>

namespace rnnc {

namespace {

struct DTypeInfo {
  DType dtype;
  size_t size;
  const char* name;
  const char* onnx_name;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kUndefined, 0, "undefined", "undefined"},
    {DType::kFloat32, 4, "f32", "float"},
    {DType::kUInt8, 1, "u8", "uint8"},
    {DType::kInt8, 1, "i8", "int8"},
    {DType::kUInt16, 2, "u16", "uint16"},
    {DType::kInt16, 2, "i16", "int16"},
    {DType::kInt32, 4, "i32", "int32"},
    {DType::kInt64, 8, "i64", "int64"},
    {DType::kString, 0, "string", "string"},
    {DType::kBool, 1, "bool", "bool"},
    {DType::kFloat16, 2, "f16", "float16"},
    {DType::kFloat64, 8, "f64", "double"},
    {DType::kUInt32, 4, "u32", "uint32"},
    {DType::kUInt64, 8, "u64", "uint64"},
    {DType::kComplex64, 8, "c64", "complex64"},
    {DType::kComplex128, 16, "c128", "complex128"},
    {DType::kBFloat16, 2, "bf16", "bfloat16"},
};

const DTypeInfo& info(DType dtype) {
  auto index = static_cast<size_t>(dtype);
  if (index >= sizeof(kDTypes) / sizeof(kDTypes[0])) return kDTypes[0];
  return kDTypes[index];
}

}  // namespace

size_t dtype_size(DType dtype) { return info(dtype).size; }
const char* dtype_name(DType dtype) { return info(dtype).name; }
const char* dtype_onnx_name(DType dtype) { return info(dtype).onnx_name; }

std::optional<DType> dtype_from_onnx(int32_t onnx_type) {
  if (onnx_type < 0 || onnx_type > static_cast<int32_t>(DType::kBFloat16)) return std::nullopt;
  return static_cast<DType>(onnx_type);
}

const char* unrepresented_onnx_type_name(int32_t onnx_type) {
  static const char* const kNames[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2",
                                       "float8e5m2fnuz", "uint4", "int4", "float4e2m1",
                                       "float8e8m0", "uint2", "int2"};
  constexpr int32_t kFirst = 17;
  int32_t index = onnx_type - kFirst;
  if (index < 0 || index >= static_cast<int32_t>(sizeof(kNames) / sizeof(kNames[0]))) {
    return nullptr;
  }
  return kNames[index];
}

std::optional<DType> dtype_from_name(const std::string& short_name) {
  for (const auto& entry : kDTypes) {
    if (short_name == entry.name) return entry.dtype;
  }
  return std::nullopt;
}

bool is_floating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}

bool is_signed_integer(DType dtype) {
  return dtype == DType::kInt8 || dtype == DType::kInt16 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

std::optional<QuantizedRange> quantized_range(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
      return QuantizedRange{-128, 127};
    case DType::kUInt8:
      return QuantizedRange{0, 255};
    case DType::kInt16:
      return QuantizedRange{-32768, 32767};
    case DType::kUInt16:
      return QuantizedRange{0, 65535};
    default:
      return std::nullopt;
  }
}

bool is_integer(DType dtype) {
  return is_signed_integer(dtype) || dtype == DType::kUInt8 || dtype == DType::kUInt16 ||
         dtype == DType::kUInt32 || dtype == DType::kUInt64;
}

float half_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else {  // subnormal half: normalize into a float
      int shift = 0;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ffu;
      out = sign | (static_cast<uint32_t>(127 - 15 - shift + 1) << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else {
    out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof(value));
  return value;
}

uint16_t float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs_bits = bits & 0x7fffffffu;
  if (abs_bits >= 0x7f800000u) {  // inf or nan
    return sign | 0x7c00u | (abs_bits > 0x7f800000u ? 0x200u : 0u);
  }
  if (abs_bits >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (abs_bits < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    float magnitude;
    std::memcpy(&magnitude, &abs_bits, sizeof(magnitude));
    // Subnormal halves are multiples of 2^-24; nearbyint rounds half to even.
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  uint32_t mantissa = abs_bits & 0x7fffffu;
  uint32_t exponent = (abs_bits >> 23) - 127 + 15;
  uint32_t half = (exponent << 10) | (mantissa >> 13);
  uint32_t remainder = mantissa & 0x1fffu;
  if (remainder > 0x1000u || (remainder == 0x1000u && (half & 1u))) ++half;
  return sign | static_cast<uint16_t>(half);
}

float bfloat16_to_float(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &out, sizeof(value));
  return value;
}

uint16_t float_to_bfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

}  // namespace rnnc
