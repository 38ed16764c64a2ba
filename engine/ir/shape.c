/* Shapes, element counts with overflow checks, and numpy broadcasting. */
#include "shape.h"

#include <stdio.h>
#include <string.h>

fl_shape fl_shape_make(int rank, const int64_t *dims)
{
	fl_shape s;

	memset(&s, 0, sizeof s);
	s.rank = rank;
	for (int i = 0; i < rank; i++)
		s.dim[i] = dims[i];
	return s;
}

fl_shape fl_shape_scalar(void)
{
	fl_shape s;

	memset(&s, 0, sizeof s);
	return s;
}

bool fl_shape_equal(const fl_shape *a, const fl_shape *b)
{
	if (a->rank != b->rank)
		return false;
	for (int i = 0; i < a->rank; i++)
		if (a->dim[i] != b->dim[i])
			return false;
	return true;
}

int64_t fl_shape_numel(const fl_shape *s)
{
	int64_t n = 1;

	for (int i = 0; i < s->rank; i++) {
		if (s->dim[i] < 0)
			return -1;
		if (s->dim[i] != 0 && n > INT64_MAX / s->dim[i])
			return -1;
		n *= s->dim[i];
	}
	return n;
}

char *fl_shape_format(const fl_shape *s, char *buf, size_t n)
{
	size_t used = 0;

	if (n == 0)
		return buf;
	buf[0] = '\0';
	used += (size_t)snprintf(buf, n, "[");
	for (int i = 0; i < s->rank && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld",
					 i ? "," : "", (long long)s->dim[i]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
	return buf;
}

int fl_shape_broadcast(const fl_shape *a, const fl_shape *b, fl_shape *out,
		       fl_error *err)
{
	int rank = a->rank > b->rank ? a->rank : b->rank;
	fl_shape r;

	memset(&r, 0, sizeof r);
	r.rank = rank;
	for (int i = 0; i < rank; i++) {
		int ia = a->rank - rank + i, ib = b->rank - rank + i;
		int64_t da = ia >= 0 ? a->dim[ia] : 1;
		int64_t db = ib >= 0 ? b->dim[ib] : 1;

		if (da != db && da != 1 && db != 1) {
			char sa[128], sb[128];

			fl_error_set(err,
				     "shapes %s and %s do not broadcast "
				     "(dim %d: %lld vs %lld)",
				     fl_shape_format(a, sa, sizeof sa),
				     fl_shape_format(b, sb, sizeof sb), i,
				     (long long)da, (long long)db);
			return -1;
		}
		r.dim[i] = da == 1 ? db : da;
	}
	*out = r;
	return 0;
}

bool fl_shape_broadcasts_to(const fl_shape *from, const fl_shape *to)
{
	fl_shape r;

	if (from->rank > to->rank)
		return false;
	if (fl_shape_broadcast(from, to, &r, NULL) < 0)
		return false;
	return fl_shape_equal(&r, to);
}

int fl_axis_normalize(int64_t axis, int rank)
{
	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank)
		return -1;
	return (int)axis;
}

void fl_shape_strides(const fl_shape *s, int64_t *strides)
{
	int64_t st = 1;

	for (int i = s->rank - 1; i >= 0; i--) {
		strides[i] = st;
		st *= s->dim[i];
	}
}

int64_t fl_broadcast_offset(const fl_shape *from, const fl_shape *to,
			    const int64_t *idx)
{
	int64_t off = 0, st = 1;

	for (int i = from->rank - 1; i >= 0; i--) {
		int j = to->rank - from->rank + i;

		if (from->dim[i] != 1)
			off += idx[j] * st;
		st *= from->dim[i];
	}
	return off;
}

bool fl_index_next(const fl_shape *s, int64_t *idx)
{
	for (int i = s->rank - 1; i >= 0; i--) {
		if (++idx[i] < s->dim[i])
			return true;
		idx[i] = 0;
	}
	return false;
}

char *fl_shape_format_index(const fl_shape *s, int64_t i, char *buf, size_t n)
{
	int64_t idx[FL_MAX_RANK];
	size_t len = 0;

	for (int d = s->rank - 1; d >= 0; d--) {
		idx[d] = i % s->dim[d];
		i /= s->dim[d];
	}
	buf[0] = '\0';
	for (int d = 0; d < s->rank && len + 2 < n; d++)
		len += (size_t)snprintf(buf + len, n - len, "[%lld]",
					(long long)idx[d]);
	if (s->rank == 0)
		snprintf(buf, n, "[]");
	return buf;
}
