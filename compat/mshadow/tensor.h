// mshadow/tensor.h — installed with -Dmshadow_compat=true, so that a program written for mshadow builds
// against tensorexpr with only its include path changed: `#include "mshadow/tensor.h"` finds this file,
// which is <tensorexpr/mshadow.h> (namespace mshadow, its macros and functions; see the README's
// "Porting from mshadow" for what differs).
#pragma once
#include <tensorexpr/mshadow.h>
