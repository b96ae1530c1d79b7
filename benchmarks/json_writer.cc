#include "benchmarks/json_writer.h"

#include <cmath>
#include <cstdio>

namespace rnnc::bench {
namespace {

void write_string(std::string& out, const std::string& text) {
  out += '"';
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

Json& Json::set(const std::string& key, Json value) {
  for (auto& member : members_) {
    if (member.first == key) {
      member.second = std::move(value);
      return member.second;
    }
  }
  members_.emplace_back(key, std::move(value));
  return members_.back().second;
}

Json& Json::push(Json value) {
  members_.emplace_back("", std::move(value));
  return members_.back().second;
}

std::string Json::dump(int indent) const {
  std::string out;
  write(out, indent, 0);
  out += '\n';
  return out;
}

void Json::write(std::string& out, int indent, int depth) const {
  const std::string pad(static_cast<size_t>(indent * (depth + 1)), ' ');
  const std::string close_pad(static_cast<size_t>(indent * depth), ' ');
  switch (kind_) {
    case Kind::kNull:
      out += "null";
      return;
    case Kind::kBool:
      out += flag_ ? "true" : "false";
      return;
    case Kind::kNumber: {
      if (!std::isfinite(number_)) {
        out += "null";
        return;
      }
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.10g", number_);
      out += buffer;
      return;
    }
    case Kind::kString:
      write_string(out, text_);
      return;
    case Kind::kArray:
    case Kind::kObject: {
      const bool is_object = kind_ == Kind::kObject;
      out += is_object ? '{' : '[';
      if (members_.empty()) {
        out += is_object ? '}' : ']';
        return;
      }
      for (size_t i = 0; i < members_.size(); ++i) {
        out += i == 0 ? "\n" : ",\n";
        out += pad;
        if (is_object) {
          write_string(out, members_[i].first);
          out += ": ";
        }
        members_[i].second.write(out, indent, depth + 1);
      }
      out += '\n';
      out += close_pad;
      out += is_object ? '}' : ']';
      return;
    }
  }
}

}  // namespace rnnc::bench
