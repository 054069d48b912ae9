// tensorexpr/ops/workspace.h — the workspace names operators use, as MXNet's operators write them
// (ops::get_space_typed). The memory belongs to the stream: <tensorexpr/workspace.h>.
#pragma once
#include <tensorexpr/tensorexpr.h>

namespace tensorexpr {
namespace ops {
using tensorexpr::get_space_typed;
using tensorexpr::GetWorkspaceBytes;
using tensorexpr::ReleaseAllWorkspaces;
using tensorexpr::ReleaseWorkspace;
using tensorexpr::WorkspaceBytesHeld;
}  // namespace ops
}  // namespace tensorexpr
