/* Op attributes: storage and typed, checked getters. */
#include "attrs.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void attr_clear(fl_attr *a)
{
	free(a->key);
	free(a->str);
	free(a->list);
}

void fl_attrs_free(fl_attrs *a)
{
	for (int i = 0; i < a->n; i++)
		attr_clear(&a->items[i]);
	free(a->items);
	a->items = NULL;
	a->n = 0;
}

const fl_attr *fl_attrs_find(const fl_attrs *a, const char *key)
{
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->items[i].key, key) == 0)
			return &a->items[i];
	return NULL;
}

/* Returns a cleared slot for key (existing or appended), or NULL. */
static fl_attr *attr_slot(fl_attrs *a, const char *key)
{
	fl_attr *items;

	for (int i = 0; i < a->n; i++) {
		if (strcmp(a->items[i].key, key) == 0) {
			fl_attr *s = &a->items[i];

			free(s->str);
			free(s->list);
			s->str = NULL;
			s->list = NULL;
			s->n = 0;
			return s;
		}
	}
	items = realloc(a->items, (size_t)(a->n + 1) * sizeof *items);
	if (!items)
		return NULL;
	a->items = items;
	memset(&items[a->n], 0, sizeof items[a->n]);
	items[a->n].key = strdup(key);
	if (!items[a->n].key)
		return NULL;
	return &items[a->n++];
}

int fl_attrs_set_number(fl_attrs *a, const char *key, double v)
{
	fl_attr *s = attr_slot(a, key);

	if (!s)
		return -1;
	s->kind = FL_ATTR_NUMBER;
	s->num = v;
	return 0;
}

int fl_attrs_set_bool(fl_attrs *a, const char *key, bool v)
{
	fl_attr *s = attr_slot(a, key);

	if (!s)
		return -1;
	s->kind = FL_ATTR_BOOL;
	s->num = v;
	return 0;
}

int fl_attrs_set_string(fl_attrs *a, const char *key, const char *str)
{
	fl_attr *s = attr_slot(a, key);

	if (!s)
		return -1;
	s->kind = FL_ATTR_STRING;
	s->str = strdup(str);
	return s->str ? 0 : -1;
}

int fl_attrs_set_list(fl_attrs *a, const char *key, const double *v, int n)
{
	fl_attr *s = attr_slot(a, key);

	if (!s)
		return -1;
	s->kind = FL_ATTR_LIST;
	s->list = malloc((size_t)(n > 0 ? n : 1) * sizeof *s->list);
	if (!s->list)
		return -1;
	if (n > 0)
		memcpy(s->list, v, (size_t)n * sizeof *v);
	s->n = n;
	return 0;
}

int fl_attrs_set_ints(fl_attrs *a, const char *key, const int64_t *v, int n)
{
	double tmp[64];

	if (n > 64)
		return -1;
	for (int i = 0; i < n; i++)
		tmp[i] = (double)v[i];
	return fl_attrs_set_list(a, key, tmp, n);
}

int fl_attrs_copy(fl_attrs *dst, const fl_attrs *src)
{
	dst->n = 0;
	dst->items = NULL;
	for (int i = 0; i < src->n; i++) {
		const fl_attr *s = &src->items[i];
		int rc = 0;

		switch (s->kind) {
		case FL_ATTR_NUMBER:
			rc = fl_attrs_set_number(dst, s->key, s->num);
			break;
		case FL_ATTR_BOOL:
			rc = fl_attrs_set_bool(dst, s->key, s->num != 0);
			break;
		case FL_ATTR_STRING:
			rc = fl_attrs_set_string(dst, s->key, s->str);
			break;
		case FL_ATTR_LIST:
			rc = fl_attrs_set_list(dst, s->key, s->list, s->n);
			break;
		}
		if (rc < 0) {
			fl_attrs_free(dst);
			return -1;
		}
	}
	return 0;
}

/* Integers are read from JSON as doubles, exact below 2^53: the limit is
 * 9e15 in magnitude. */
#define FL_ATTR_INT_LIMIT 9.0e15

static bool is_integral(double v)
{
	return isfinite(v) && v == floor(v) && fabs(v) < FL_ATTR_INT_LIMIT;
}

/* True for a whole number too large to be exact (said apart from "not an
 * integer"). */
static bool is_huge_integer(double v)
{
	return isfinite(v) && v == floor(v) && fabs(v) >= FL_ATTR_INT_LIMIT;
}

int fl_attr_int(const fl_attrs *a, const char *key, int64_t dflt,
		int64_t *out, fl_error *err)
{
	const fl_attr *s = fl_attrs_find(a, key);

	*out = dflt;
	if (!s)
		return 0;
	if (s->kind == FL_ATTR_NUMBER && is_huge_integer(s->num)) {
		fl_error_set(err, "attrs.%s: %.17g is too large: integers must "
			     "be below 9e15 in magnitude", key, s->num);
		return -1;
	}
	if (s->kind != FL_ATTR_NUMBER || !is_integral(s->num)) {
		fl_error_set(err, "attrs.%s: expected an integer", key);
		return -1;
	}
	*out = (int64_t)s->num;
	return 1;
}

int fl_attr_float(const fl_attrs *a, const char *key, double dflt,
		  double *out, fl_error *err)
{
	const fl_attr *s = fl_attrs_find(a, key);

	*out = dflt;
	if (!s)
		return 0;
	if (s->kind != FL_ATTR_NUMBER || !isfinite(s->num)) {
		fl_error_set(err, "attrs.%s: expected a number", key);
		return -1;
	}
	*out = s->num;
	return 1;
}

int fl_attr_bool(const fl_attrs *a, const char *key, bool dflt, bool *out,
		 fl_error *err)
{
	const fl_attr *s = fl_attrs_find(a, key);

	*out = dflt;
	if (!s)
		return 0;
	if (s->kind != FL_ATTR_BOOL) {
		fl_error_set(err, "attrs.%s: expected true or false", key);
		return -1;
	}
	*out = s->num != 0;
	return 1;
}

int fl_attr_string(const fl_attrs *a, const char *key, const char *dflt,
		   const char **out, fl_error *err)
{
	const fl_attr *s = fl_attrs_find(a, key);

	*out = dflt;
	if (!s)
		return 0;
	if (s->kind != FL_ATTR_STRING) {
		fl_error_set(err, "attrs.%s: expected a string", key);
		return -1;
	}
	*out = s->str;
	return 1;
}

int fl_attr_ints(const fl_attrs *a, const char *key, int64_t *out, int max,
		 int *n, fl_error *err)
{
	const fl_attr *s = fl_attrs_find(a, key);

	*n = -1;
	if (!s)
		return 0;
	if (s->kind != FL_ATTR_LIST) {
		fl_error_set(err, "attrs.%s: expected a list of integers", key);
		return -1;
	}
	if (s->n > max) {
		fl_error_set(err, "attrs.%s: %d values, at most %d allowed",
			     key, s->n, max);
		return -1;
	}
	for (int i = 0; i < s->n; i++) {
		if (is_huge_integer(s->list[i])) {
			fl_error_set(err, "attrs.%s[%d]: %.17g is too large: "
				     "integers must be below 9e15 in magnitude",
				     key, i, s->list[i]);
			return -1;
		}
		if (!is_integral(s->list[i])) {
			fl_error_set(err, "attrs.%s[%d]: expected an integer",
				     key, i);
			return -1;
		}
		out[i] = (int64_t)s->list[i];
	}
	*n = s->n;
	return 1;
}

int fl_attrs_check_known(const fl_attrs *a, const char *const *known,
			 fl_error *err)
{
	for (int i = 0; i < a->n; i++) {
		bool ok = false;

		for (int k = 0; known && known[k]; k++)
			if (strcmp(known[k], a->items[i].key) == 0)
				ok = true;
		if (!ok) {
			fl_error_set(err, "attrs.%s: unknown attribute",
				     a->items[i].key);
			return -1;
		}
	}
	return 0;
}
