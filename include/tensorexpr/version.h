// tensorexpr/version.h — the library's version (meson.build checks that it says the project's version).
#pragma once

#define TENSOREXPR_VERSION_MAJOR 0
#define TENSOREXPR_VERSION_MINOR 2
#define TENSOREXPR_VERSION_PATCH 0
#define TENSOREXPR_VERSION_STRING "0.2.0"
// One number that grows with every release: major * 10000 + minor * 100 + patch.
#define TENSOREXPR_VERSION (TENSOREXPR_VERSION_MAJOR * 10000 + TENSOREXPR_VERSION_MINOR * 100 + TENSOREXPR_VERSION_PATCH)
