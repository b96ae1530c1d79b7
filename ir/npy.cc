#include "ir/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/onnx_import.h"

namespace rnnc {

namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};

// '|' marks byte-sized types (no byte order); '<' little-endian.
constexpr NpyType kNpyTypes[] = {
    {"<f4", DType::kFloat32}, {"<f8", DType::kFloat64}, {"<f2", DType::kFloat16},
    {"|i1", DType::kInt8},    {"<i2", DType::kInt16},   {"<i4", DType::kInt32},
    {"<i8", DType::kInt64},   {"|u1", DType::kUInt8},   {"<u2", DType::kUInt16},
    {"<u4", DType::kUInt32},  {"<u8", DType::kUInt64},  {"|b1", DType::kBool},
};

// Extracts the text after `'key':` in the header dict, up to the next top-level ',' or '}'.
std::string header_field(const std::string& header, const std::string& key,
                         const std::string& what) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) raise_invalid_input(cat(what, ": .npy header has no '", key, "'"));
  size_t colon = header.find(':', at);
  if (colon == std::string::npos) raise_invalid_input(cat(what, ": malformed .npy header"));
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) raise_invalid_input(cat(what, ": malformed .npy header"));
  size_t end = header[start] == '(' ? header.find(')', start) + 1 : header.find_first_of(",}", start);
  if (end == std::string::npos || end == 0 || end <= start) {
    raise_invalid_input(cat(what, ": malformed .npy header"));
  }
  return header.substr(start, end - start);
}

std::vector<int64_t> parse_shape(const std::string& text, const std::string& what) {
  // "(3, 4)", "(5,)", "()"
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') {
    raise_invalid_input(cat(what, ": .npy shape '", text, "' is not a tuple"));
  }
  std::vector<int64_t> shape;
  std::stringstream items(text.substr(1, text.size() - 2));
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t first = item.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    item = item.substr(first);
    size_t used = 0;
    int64_t value = -1;
    try {
      value = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(' ', used) != std::string::npos || value < 0) {
      raise_invalid_input(cat(what, ": .npy shape entry '", item, "' is not a dimension"));
    }
    shape.push_back(value);
  }
  return shape;
}

}  // namespace

Tensor parse_npy(const void* data, size_t size, const std::string& what) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size < 10 || std::memcmp(bytes, "\x93NUMPY", 6) != 0) {
    raise_invalid_input(cat(what, " is not a .npy file (bad magic)"));
  }
  int major = bytes[6];
  size_t header_len, offset;
  if (major == 1) {
    header_len = bytes[8] | (bytes[9] << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) raise_invalid_input(cat(what, ": truncated .npy header"));
    header_len = bytes[8] | (bytes[9] << 8) | (bytes[10] << 16) | (static_cast<size_t>(bytes[11]) << 24);
    offset = 12;
  } else {
    raise_invalid_input(cat(what, ": .npy format version ", major, " is not supported"));
  }
  if (header_len > size - offset) raise_invalid_input(cat(what, ": truncated .npy header"));
  std::string header(reinterpret_cast<const char*>(bytes + offset), header_len);
  std::string descr = header_field(header, "descr", what);
  std::string fortran = header_field(header, "fortran_order", what);
  std::vector<int64_t> shape = parse_shape(header_field(header, "shape", what), what);
  if (fortran != "False") {
    raise_unsupported(cat(what, ": Fortran-ordered .npy arrays (save with np.ascontiguousarray)"));
  }
  if (descr.size() < 2) raise_invalid_input(cat(what, ": malformed .npy descr ", descr));
  std::string code = descr.substr(1, descr.size() - 2);  // strip quotes
  if (code.size() == 3 && code[0] == '=') code[0] = '<';
  if (code.size() == 3 && (code[1] == 'i' || code[1] == 'u' || code[1] == 'b') && code[2] == '1') {
    code[0] = '|';
  }
  const NpyType* type = nullptr;
  for (const auto& entry : kNpyTypes) {
    if (code == entry.descr) type = &entry;
  }
  if (!type) raise_unsupported(cat(what, ": .npy dtype ", descr, " is not supported"));
  Tensor tensor(type->dtype, shape);
  size_t payload = size - offset - header_len;
  if (payload != tensor.nbytes()) {
    raise_invalid_input(cat(what, ": .npy data has ", payload, " bytes, expected ",
                            tensor.nbytes(), " for shape and dtype ", descr));
  }
  if (tensor.nbytes()) std::memcpy(tensor.raw_data(), bytes + offset + header_len, tensor.nbytes());
  return tensor;
}

Tensor read_npy(const std::string& path) {
  std::error_code error;
  std::ifstream in(path, std::ios::binary);
  if (!std::filesystem::is_regular_file(path, error) || !in) {
    raise(ErrorKind::kIo, cat("cannot open '", path, "'"));
  }
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) raise(ErrorKind::kIo, cat("cannot read '", path, "'"));
  return parse_npy(bytes.data(), bytes.size(), cat("'", path, "'"));
}

void write_npy(const std::string& path, const Tensor& tensor) {
  const char* descr = nullptr;
  for (const auto& entry : kNpyTypes) {
    if (entry.dtype == tensor.dtype()) descr = entry.descr;
  }
  if (!descr) {
    raise_unsupported(cat("writing ", dtype_onnx_name(tensor.dtype()), " tensors as .npy"));
  }
  std::string shape = "(";
  for (int64_t d : tensor.shape()) shape += std::to_string(d) + ", ";
  if (tensor.rank() > 1) shape.resize(shape.size() - 2);
  if (tensor.rank() == 1) shape.resize(shape.size() - 1);
  shape += ")";
  std::string header = cat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ", shape, ", }");
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) raise(ErrorKind::kIo, cat("cannot write '", path, "'"));
  out.write("\x93NUMPY\x01\x00", 8);
  uint16_t length = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(length & 0xff));
  out.put(static_cast<char>(length >> 8));
  out << header;
  out.write(static_cast<const char*>(tensor.raw_data()), static_cast<std::streamsize>(tensor.nbytes()));
  if (!out) raise(ErrorKind::kIo, cat("cannot write '", path, "'"));
}

Tensor read_tensor_file(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) return read_npy(path);
  return read_tensor_pb(path);
}

}  // namespace rnnc
