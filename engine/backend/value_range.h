/* Value ranges of graph tensors (value_range.c): what the C printer knows
 * about a maths function's argument, to leave out selects it cannot
 * need. */
#ifndef FL_VALUE_RANGE_H
#define FL_VALUE_RANGE_H

#include <stdbool.h>

#include "graph.h"

/* The argument range in which fl_expf of the maths runtime
 * (engine/backend/runtime/math_rt.c, FL_EXPF_LO and FL_EXPF_HI there)
 * needs none of its range selects; a test checks the two agree. */
#define FL_EXPF_ARG_LO (-87.3365402f)
#define FL_EXPF_ARG_HI 88.7228317f
/* ... and the one where it reduces the argument in one step
 * (fl_expf_small, FL_EXPF_SMALL there). */
#define FL_EXPF_ARG_SMALL 5.5f

/* Every non-NaN value of the tensor lies in [lo, hi] (either may be
 * infinite). */
typedef struct fl_value_range {
	float lo, hi;
} fl_value_range;

/* One range per tensor of g (malloc'ed, the caller frees), or NULL when
 * memory runs out. */
fl_value_range *fl_value_ranges(const fl_graph *g);

/* Whether tensor t of g is a constant without a NaN among its values
 * (min and max against it need no NaN test); false for a constant too
 * big to read through (value_range.c). */
bool fl_value_never_nan(const fl_graph *g, int t);

/* Whether every value of r lies in [lo, hi]. */
bool fl_value_range_within(fl_value_range r, float lo, float hi);

#endif
