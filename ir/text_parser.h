// Parses the IR text form (ir/printer.h) back into a Model, so graph_opt golden tests can start
// from a few readable lines instead of an ONNX protobuf:
//
//   model ir_version=8 opset=14
//   graph main(%x: f32[seq, 4]) {
//     const %one: f32[] = {1}
//     %y: f32[seq, 4] = Add 'add' (%x, %one)
//     return %y: f32[seq, 4]
//   }
//
// It accepts everything to_text(const Model&) prints, so print(parse(text)) == text, with three
// exceptions the text form cannot carry: constants printed with "..." (only some values shown),
// the layout=/quant= type suffixes (kUnsupported for now), and the model's doc_string (not
// printed). For hand-written tests it also accepts `;` comments to the end of a line (room for
// FileCheck's `; CHECK:` lines), node outputs and returns without a `: type`, nodes without a
// 'name', and constants without a #hash. docs/ir.md describes the grammar.
//
// After parsing, type inference runs over the main graph: written types act as declared types, so
// a type that contradicts what the op produces is reported. Errors are kInvalidModel (kUnsupported
// for unsupported constructs or ops) and start with "<source>:<line>:<column>: ".
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"

namespace rnnc {

std::unique_ptr<Model> parse_model_text(const std::string& text, const std::string& source_name);
// Reads and parses a file; the path is the source name in errors (kIo if it cannot be read).
std::unique_ptr<Model> parse_model_text_file(const std::string& path);

// Lexical rules the printer shares, so what it prints without quotes reads back as one name.
// Value, graph and attribute names: letters, digits and _ . - / plus ':' inside "::" or before a
// digit ("onnx::Add_3", "input:0"); anything else is printed as a quoted string.
bool is_bare_ir_name(const std::string& name);
// Dim symbols: C identifiers ("batch", "seq_len"); other axis names are printed quoted.
bool is_bare_dim_symbol(const std::string& name);

}  // namespace rnnc
