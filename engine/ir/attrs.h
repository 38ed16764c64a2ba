/* fl_attrs: an op's attributes, as read from the graph file.
 *
 * Values keep the JSON kinds (number, bool, string, list of numbers); the
 * op library asks for them with the typed getters below, which check the
 * kind, integrality and presence and write a message "attrs.<key>: ..." on
 * error.  Getters return 1 when the key was present, 0 when it was absent
 * (the default is stored), -1 on a bad value. */
#ifndef FL_ATTRS_H
#define FL_ATTRS_H

#include <stdbool.h>
#include <stdint.h>

#include "fl_error.h"

typedef enum fl_attr_kind {
	FL_ATTR_NUMBER,
	FL_ATTR_BOOL,
	FL_ATTR_STRING,
	FL_ATTR_LIST,	/* list of numbers */
} fl_attr_kind;

typedef struct fl_attr {
	char *key;
	fl_attr_kind kind;
	double num;	/* NUMBER, BOOL (0/1) */
	char *str;	/* STRING */
	int n;		/* LIST length */
	double *list;	/* LIST values */
} fl_attr;

typedef struct fl_attrs {
	int n;
	fl_attr *items;
} fl_attrs;

void fl_attrs_free(fl_attrs *a);
int fl_attrs_copy(fl_attrs *dst, const fl_attrs *src);
const fl_attr *fl_attrs_find(const fl_attrs *a, const char *key);

/* Setters replace an existing key; they return 0, or -1 when out of memory. */
int fl_attrs_set_number(fl_attrs *a, const char *key, double v);
int fl_attrs_set_bool(fl_attrs *a, const char *key, bool v);
int fl_attrs_set_string(fl_attrs *a, const char *key, const char *s);
int fl_attrs_set_list(fl_attrs *a, const char *key, const double *v, int n);
int fl_attrs_set_ints(fl_attrs *a, const char *key, const int64_t *v, int n);

int fl_attr_int(const fl_attrs *a, const char *key, int64_t dflt,
		int64_t *out, fl_error *err);
int fl_attr_float(const fl_attrs *a, const char *key, double dflt,
		  double *out, fl_error *err);
int fl_attr_bool(const fl_attrs *a, const char *key, bool dflt, bool *out,
		 fl_error *err);
/* *out points into the attrs (or is dflt); not copied. */
int fl_attr_string(const fl_attrs *a, const char *key, const char *dflt,
		   const char **out, fl_error *err);
/* Integer list of at most `max` values; *n receives its length.  When the
 * key is absent *n is set to -1 and 0 is returned. */
int fl_attr_ints(const fl_attrs *a, const char *key, int64_t *out, int max,
		 int *n, fl_error *err);

/* Checks that every key of `a` is one of the NULL-terminated `known` names
 * (catches typos such as "axsi"); -1 with "attrs.<key>: unknown attribute". */
int fl_attrs_check_known(const fl_attrs *a, const char *const *known,
			 fl_error *err);

#endif
