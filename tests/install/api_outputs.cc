// The C++ API's outputs for the Python module's test (python_test.py), built against an installed
// rnnc (find_package(rnnc)): loads MODEL, runs it once on the inputs given as .npy files and writes
// each output to OUT_DIR/<output name>.npy ('/' in a name written as '_').
//   api_outputs MODEL OUT_DIR [--fix NAME=VALUE]... [--cache-dir DIR] NAME=FILE.npy...
// Only what the test feeds is read: little-endian float32 and int64 arrays in C order.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "rnnc/rnnc.h"

namespace {

struct Array {
  rnnc::ElementType type = rnnc::ElementType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

Array read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  char magic[8];
  in.read(magic, 8);
  if (std::memcmp(magic, "\x93NUMPY", 6) != 0) throw std::runtime_error(path + ": not a .npy file");
  uint32_t header_size = 0;
  if (magic[6] == 1) {
    uint16_t size = 0;
    in.read(reinterpret_cast<char*>(&size), 2);
    header_size = size;
  } else {
    in.read(reinterpret_cast<char*>(&header_size), 4);
  }
  std::string header(header_size, '\0');
  in.read(header.data(), header_size);
  Array array;
  if (header.find("'<f4'") != std::string::npos) {
    array.type = rnnc::ElementType::kFloat32;
  } else if (header.find("'<i8'") != std::string::npos) {
    array.type = rnnc::ElementType::kInt64;
  } else {
    throw std::runtime_error(path + ": only <f4 and <i8 arrays: " + header);
  }
  if (header.find("'fortran_order': False") == std::string::npos) {
    throw std::runtime_error(path + ": not in C order");
  }
  const size_t open = header.find('(', header.find("'shape'"));
  std::stringstream dims(header.substr(open + 1, header.find(')', open) - open - 1));
  std::string dim;
  while (std::getline(dims, dim, ',')) {
    if (dim.find_first_not_of(' ') != std::string::npos) array.shape.push_back(std::stoll(dim));
  }
  int64_t count = 1;
  for (int64_t d : array.shape) count *= d;
  array.data.resize(static_cast<size_t>(count) * rnnc::element_size(array.type));
  in.read(array.data.data(), static_cast<std::streamsize>(array.data.size()));
  if (!in) throw std::runtime_error(path + ": truncated");
  return array;
}

void write_npy(const std::string& path, const rnnc::CompiledModel::Output& output) {
  const char* descr = output.type == rnnc::ElementType::kFloat32 ? "<f4"
                      : output.type == rnnc::ElementType::kInt64 ? "<i8"
                                                                 : nullptr;
  if (!descr) throw std::runtime_error("output " + output.name + ": only float32 and int64");
  std::string shape;
  for (int64_t d : output.shape) shape += std::to_string(d) + ", ";
  if (output.shape.size() > 1) shape.erase(shape.size() - 2);  // "(2, 3)", but "(5,)"
  std::string header = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" +
                       (output.shape.empty() ? std::string() : shape) + "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t size = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&size), 2);
  out << header;
  int64_t count = 1;
  for (int64_t d : output.shape) count *= d;
  out.write(static_cast<const char*>(output.data()),
            static_cast<std::streamsize>(count * rnnc::element_size(output.type)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: api_outputs MODEL OUT_DIR [--fix NAME=VALUE]... [--cache-dir DIR] "
                 "NAME=FILE.npy...\n";
    return 2;
  }
  try {
    rnnc::ModelOptions options;
    std::vector<std::string> names;
    std::vector<Array> arrays;
    for (int i = 3; i < argc; ++i) {
      const std::string arg = argv[i];
      if ((arg == "--fix" || arg == "--cache-dir") && i + 1 < argc) {
        const std::string value = argv[++i];
        if (arg == "--cache-dir") {
          options.cache_dir = value;
        } else {
          const size_t eq = value.find('=');
          options.fixed_inputs[value.substr(0, eq)] = {std::stoll(value.substr(eq + 1))};
        }
        continue;
      }
      const size_t eq = arg.find('=');
      if (eq == std::string::npos) throw std::runtime_error("expected NAME=FILE.npy, got " + arg);
      names.push_back(arg.substr(0, eq));
      arrays.push_back(read_npy(arg.substr(eq + 1)));
    }
    auto model = rnnc::CompiledModel::load(argv[1], options);
    std::vector<rnnc::NamedTensor> inputs;
    for (size_t k = 0; k < arrays.size(); ++k) {
      inputs.push_back({names[k], {arrays[k].type, arrays[k].shape, arrays[k].data.data()}});
    }
    for (const auto& output : model->run(inputs)) {
      std::string file = output.name;  // exposed state is named after nodes, which may hold '/'
      for (char& c : file) c = c == '/' ? '_' : c;
      write_npy(std::string(argv[2]) + "/" + file + ".npy", output);
    }
  } catch (const std::exception& e) {
    std::cerr << "api_outputs: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
