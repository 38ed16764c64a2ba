/* --bind-inputs DIR and --bind NAME=FILE: values for the ONNX model
 * inputs that an op needs at import (onnx_import.h,
 * fl_onnx_given_input), read from TensorProto files, and the line that
 * says which inputs the import took. */
#ifndef FL_APP_BIND_H
#define FL_APP_BIND_H

#include "onnx_import.h"
#include "onnx_tensor.h"
#include "options.h"

typedef struct fl_app_given {
	int n;
	fl_onnx_given_input *in;	/* name, source: owned */
	fl_onnx_values *values;		/* in[k].values points here */
} fl_app_given;

/* Reads every file the options name (DIR/input_0.pb, input_1.pb, ...
 * up to the first missing one; each --bind FILE); -1 with "<file>:
 * <what>" when one is unreadable or DIR holds no input_0.pb. */
int fl_app_given_load(const fl_options *o, fl_app_given *g, fl_error *err);

void fl_app_given_free(fl_app_given *g);

/* One line on stderr, when values were given: "fuselab: <file>: bound at
 * import to their given values: shape (input 1)" or "... no input is
 * needed at import, none bound". */
void fl_app_print_bound(const char *path, const fl_onnx_info *info);

#endif
