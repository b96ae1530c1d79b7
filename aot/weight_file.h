// The weight file of an ahead-of-time library (`rnnc compile`, docs/aot.md): every constant
// tensor the generated driver reads, in the layouts lowering marshaled them into.
//
//   offset  size  field (little-endian)
//   0       8     magic "RNNCWGTS"
//   8       4     version (kWeightFileVersion)
//   12      4     tensor count N
//   16      8     file size in bytes
//   24      8     layout id: which library's table this is (sizes, order, kernels, target)
//   32      8     checksum: 64-bit FNV-1a over the file's 8-byte words, this word read as 0
//   40      24    zero
//   64      16*N  offset table: per tensor {offset, byte size}; offsets 64-byte aligned
//   ...           tensor data, each at its offset, zero padding between; the file size is a
//                 multiple of 64
//
// The driver (aot/driver_support.c) checks size, magic, version, recorded size, checksum and the
// table against the one compiled into it, each with its own error code, before reading a byte of
// data.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace rnnc::aot {

constexpr uint32_t kWeightFileVersion = 1;
constexpr char kWeightFileMagic[8] = {'R', 'N', 'N', 'C', 'W', 'G', 'T', 'S'};
constexpr size_t kWeightHeaderBytes = 64;

struct WeightTableEntry {
  uint64_t offset = 0;
  uint64_t size = 0;
};

// Lays out `tensors` (in order) and returns the table; the layout depends on the tensors' sizes
// only.
std::vector<WeightTableEntry> weight_table(const std::vector<const Tensor*>& tensors);

// Writes the weight file (atomically: a temporary name, then rename). kIo on failure.
void write_weight_file(const std::string& path, const std::vector<const Tensor*>& tensors,
                       uint64_t layout_id);

// The checksum as the driver computes it (the checksum word at offset 32 read as zero).
uint64_t weight_file_checksum(const uint8_t* data, uint64_t size);

}  // namespace rnnc::aot
