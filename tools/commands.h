// The `rnnc` subcommands, one file each (tools/cmd_<name>.cc).
#pragma once

#include "tools/cli.h"

namespace rnnc::cli {

extern const Command kInfoCommand;
extern const Command kRunCommand;
extern const Command kOptimizeCommand;
extern const Command kPlanCommand;
extern const Command kCompileCommand;
extern const Command kQuantizeCommand;
extern const Command kServeCommand;
extern const Command kStreamsCommand;
extern const Command kCacheCommand;

}  // namespace rnnc::cli
