// The message of the rnnc::Error an action raises, after checking its kind; a test failure when it
// raises none. Header-only: GoogleTest test files include it.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "ir/error.h"

namespace rnnc::testing {

inline std::string error_message(const std::function<void()>& action, ErrorKind kind) {
  try {
    action();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error was raised";
  return "";
}

}  // namespace rnnc::testing
