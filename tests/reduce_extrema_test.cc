// reduce_extrema_test.cc — reduce_axes<maximum> and reduce_axes<minimum> over several axes
// (expr/reduce_axes.h) against a float64 reference on fresh random data (reduce_axes_check.h). Sum and
// mean: reduce_axes_test.cc.
#include "reduce_axes_check.h"

namespace {
using namespace te_test;

TE_DEVICE_TEST_CASE("reduce_axes<maximum> and <minimum> over any subset of axes match the float64 reference",
                    "[reduce][reduce_axes]") {
  CheckReduceAxesEveryRank<ReduceKind::kMax>(stream);
  CheckReduceAxesEveryRank<ReduceKind::kMin>(stream);
}

}  // namespace
