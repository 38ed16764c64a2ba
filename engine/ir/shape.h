/* fl_shape: tensor shapes and the numpy broadcasting rule.
 *
 * A shape is a small value type (rank <= FL_MAX_RANK, dims >= 1 once
 * validated; rank 0 is a scalar with one element).  Element counts are
 * computed with overflow checks because shapes come from user files. */
#ifndef FL_SHAPE_H
#define FL_SHAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fl_error.h"

#define FL_MAX_RANK 8

typedef struct fl_shape {
	int rank;
	int64_t dim[FL_MAX_RANK];
} fl_shape;

fl_shape fl_shape_make(int rank, const int64_t *dims);
fl_shape fl_shape_scalar(void);
bool fl_shape_equal(const fl_shape *a, const fl_shape *b);

/* Number of elements; -1 when it does not fit a signed 64-bit count. */
int64_t fl_shape_numel(const fl_shape *s);

/* "[4096,1024]" ("[]" for a scalar) into buf; returns buf. */
char *fl_shape_format(const fl_shape *s, char *buf, size_t n);

/* "[0][3][5]": the multi-index of linear (row-major) element i of s
 * ("[]" for a scalar), into buf (n bytes); returns buf. */
char *fl_shape_format_index(const fl_shape *s, int64_t i, char *buf, size_t n);

/* numpy broadcasting of a and b (right-aligned, extent 1 stretches).
 * Returns 0 and the result in *out, or -1 with a message naming both. */
int fl_shape_broadcast(const fl_shape *a, const fl_shape *b, fl_shape *out,
		       fl_error *err);

/* True when `from` broadcasts to exactly `to`. */
bool fl_shape_broadcasts_to(const fl_shape *from, const fl_shape *to);

/* Normalises a possibly negative axis against rank; -1 when out of range. */
int fl_axis_normalize(int64_t axis, int rank);

/* Row-major strides of s (in elements) into strides[0..rank-1]. */
void fl_shape_strides(const fl_shape *s, int64_t *strides);

/* Offset into a tensor of shape `from` for the multi-index `idx` of the
 * (larger or equal rank) broadcast shape `to`: dims of extent 1 in `from`
 * read index 0, missing leading dims are dropped. */
int64_t fl_broadcast_offset(const fl_shape *from, const fl_shape *to,
			    const int64_t *idx);

/* Advances a row-major multi-index over shape s; false after the last. */
bool fl_index_next(const fl_shape *s, int64_t *idx);

#endif
