#include "aot/weight_file.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/error.h"

namespace rnnc::aot {

namespace {

uint64_t align64(uint64_t value) { return (value + 63) / 64 * 64; }

void put_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t value) {
  std::memcpy(bytes.data() + offset, &value, 4);
}
void put_u64(std::vector<uint8_t>& bytes, size_t offset, uint64_t value) {
  std::memcpy(bytes.data() + offset, &value, 8);
}

}  // namespace

std::vector<WeightTableEntry> weight_table(const std::vector<const Tensor*>& tensors) {
  std::vector<WeightTableEntry> table;
  uint64_t offset = align64(kWeightHeaderBytes + 16 * tensors.size());
  for (const Tensor* tensor : tensors) {
    WeightTableEntry entry{offset, tensor->nbytes()};
    table.push_back(entry);
    offset = align64(offset + entry.size);
  }
  return table;
}

uint64_t weight_file_checksum(const uint8_t* data, uint64_t size) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (uint64_t offset = 0; offset + 8 <= size; offset += 8) {
    uint64_t word = 0;
    if (offset != 32) std::memcpy(&word, data + offset, 8);
    hash = (hash ^ word) * 0x100000001b3ull;
  }
  return hash;
}

void write_weight_file(const std::string& path, const std::vector<const Tensor*>& tensors,
                       uint64_t layout_id) {
  static_assert(sizeof(void*) == 8, "the weight file is written little-endian on 64-bit hosts");
  const std::vector<WeightTableEntry> table = weight_table(tensors);
  uint64_t size = align64(kWeightHeaderBytes + 16 * tensors.size());
  if (!table.empty()) size = align64(table.back().offset + table.back().size);
  std::vector<uint8_t> bytes(size, 0);
  std::memcpy(bytes.data(), kWeightFileMagic, 8);
  put_u32(bytes, 8, kWeightFileVersion);
  put_u32(bytes, 12, static_cast<uint32_t>(tensors.size()));
  put_u64(bytes, 16, size);
  put_u64(bytes, 24, layout_id);
  for (size_t i = 0; i < tensors.size(); ++i) {
    put_u64(bytes, kWeightHeaderBytes + 16 * i, table[i].offset);
    put_u64(bytes, kWeightHeaderBytes + 16 * i + 8, table[i].size);
    if (table[i].size) std::memcpy(bytes.data() + table[i].offset, tensors[i]->raw_data(), table[i].size);
  }
  put_u64(bytes, 32, weight_file_checksum(bytes.data(), size));

  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(size));
    if (!out) raise(ErrorKind::kIo, cat("cannot write '", temporary, "'"));
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) raise(ErrorKind::kIo, cat("cannot write '", path, "': ", error.message()));
}

}  // namespace rnnc::aot
