/* --inputs / --expect (feeds.h). */
#include "feeds.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "onnx_tensor.h"

void fl_tensor_files_free(fl_tensor_files *f)
{
	for (int k = 0; k < f->n; k++) {
		free((char *)f->t[k].name);
		free(f->t[k].buf.data);
		free(f->t[k].buf.ints);
		free(f->path[k]);
	}
	free(f->t);
	free(f->path);
	memset(f, 0, sizeof *f);
}

/* The graph tensors a file may name: inputs and params, or outputs. */
static int candidates(const fl_graph *g, const char *stem, int **idx)
{
	return strcmp(stem, "input") == 0 ? fl_graph_inputs(g, idx)
					  : fl_graph_outputs(g, idx);
}

static bool taken(const fl_tensor_files *f, const char *name)
{
	for (int k = 0; k < f->n; k++)
		if (strcmp(f->t[k].name, name) == 0)
			return true;
	return false;
}

/* The graph tensor file number `pos` holding tensor `name` stands for,
 * or -1 with a message. */
static int match_tensor(const fl_graph *g, const int *cand, int n_cand,
			const char *stem, int pos, const char *name,
			const fl_tensor_files *f, fl_error *err)
{
	int t = *name ? fl_graph_find_tensor(g, name) : -1;

	for (int k = 0; t >= 0 && k < n_cand; k++)
		if (cand[k] == t)
			return t;
	/* else by position, as ONNX's test runner matches them (an
	 * imported graph output may carry another name: a folded value's
	 * copy) */
	if (pos < n_cand && !taken(f, g->tensors[cand[pos]].name))
		return cand[pos];
	fl_error_set(err, "tensor \"%s\" is not an %s of the graph%s",
		     fl_error_name(name), stem,
		     pos >= n_cand ? " (more files than the graph has)" : "");
	return -1;
}

/* Takes v's values into b in b's dtype: floats as floats (a 16-bit
 * float's rounded to its type; a uint16 file for one holds its bits, as
 * ONNX's tests store bfloat16), integers exactly (a file's integers when
 * it has them, else its floats converted as Cast does). */
static int take_values(fl_buf *b, fl_onnx_values *v)
{
	if (!fl_dtype_is_int(b->dtype)) {
		fl_onnx_values_reinterpret_half(v, fl_onnx_from_dtype(b->dtype));
		b->data = v->f;	/* taken over */
		v->f = NULL;
		for (int64_t i = 0; i < v->n; i++)
			b->data[i] = fl_dtype_round(b->dtype, b->data[i]);
		return 0;
	}
	b->ints = malloc((size_t)(v->n ? v->n : 1) * sizeof *b->ints);
	if (!b->ints)
		return -1;
	for (int64_t i = 0; i < v->n; i++)
		b->ints[i] = v->i ? fl_dtype_wrap(b->dtype, v->i[i])
				  : fl_dtype_from_float(b->dtype, v->f[i]);
	return 0;
}

/* Takes the values of one file into f as graph tensor t. */
static int add_file(fl_tensor_files *f, const fl_graph *g, int t,
		    fl_onnx_values *v, const char *path, fl_error *err)
{
	const fl_tensor *x = &g->tensors[t];
	char want[128], got[128];
	int k = f->n;

	if (!fl_shape_equal(&v->shape, &x->shape)) {
		fl_error_set(err, "tensor \"%s\" has shape %s where the graph's "
			     "is %s", fl_error_name(x->name),
			     fl_shape_format(&v->shape, got, sizeof got),
			     fl_shape_format(&x->shape, want, sizeof want));
		return -1;
	}
	if (taken(f, x->name)) {
		fl_error_set(err, "tensor \"%s\" given twice",
			     fl_error_name(x->name));
		return -1;
	}
	f->t[k].name = strdup(x->name);
	f->path[k] = strdup(path);
	if (!f->t[k].name || !f->path[k]) {
		free((char *)f->t[k].name);
		free(f->path[k]);
		fl_error_set(err, "out of memory");
		return -1;
	}
	f->t[k].buf = (fl_buf){.shape = x->shape, .dtype = x->dtype};
	if (take_values(&f->t[k].buf, v) < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	f->n++;
	return 0;
}

/* Whether the file at position pos, holding tensor `name`, is the value
 * of an input bound at import: by its name, or by its position when it
 * names no input of g (as the import matched it). */
static bool is_bound(const fl_graph *g, const fl_onnx_bound_input *bound,
		     int n_bound, const char *name, int pos)
{
	int t = *name ? fl_graph_find_tensor(g, name) : -1;
	bool names_input = t >= 0 && g->tensors[t].role == FL_ROLE_INPUT;

	for (int k = 0; k < n_bound; k++)
		if (!strcmp(name, bound[k].name) ||
		    (!names_input && pos == bound[k].position))
			return true;
	return false;
}

/* Loads the file at position pos (pos less the bound inputs' files
 * before it among the graph's inputs); 1 when it is a bound input's,
 * skipped. */
static int load_one(const char *path, const fl_graph *g, const char *stem,
		    const int *cand, int n_cand, int pos,
		    const fl_onnx_bound_input *bound, int n_bound,
		    fl_tensor_files *f, fl_error *err)
{
	fl_onnx_values v;
	char *name;
	int t, rc = -1;

	if (fl_onnx_read_tensor_file(path, &v, &name, err) < 0)
		return -1;
	if (is_bound(g, bound, n_bound, name, pos)) {
		rc = 1;
		goto out;
	}
	for (int k = 0; k < n_bound; k++)
		pos -= bound[k].position < pos;
	t = match_tensor(g, cand, n_cand, stem, pos, name, f, err);
	if (t >= 0)
		rc = add_file(f, g, t, &v, path, err);
	if (rc < 0)
		fl_error_prefix(err, "%s", path);
out:
	free(name);
	fl_onnx_values_free(&v);
	return rc;
}

int fl_tensor_files_load(const char *dir, const char *stem, const fl_graph *g,
			 const fl_onnx_bound_input *bound, int n_bound,
			 fl_tensor_files *f, fl_error *err)
{
	int *cand = NULL;
	int n_cand = candidates(g, stem, &cand);
	char path[4096];
	int rc = 0;

	memset(f, 0, sizeof *f);
	if (n_cand < 0) {
		fl_error_set(err, "out of memory");
		return -1;
	}
	for (int k = 0; rc >= 0; k++) {
		snprintf(path, sizeof path, "%s/%s_%d.pb", dir, stem, k);
		if (access(path, F_OK) != 0) {
			/* a graph without inputs has no input files */
			if (k == 0 && n_cand > 0) {
				fl_error_set(err, "%s: no %s_0.pb there",
					     fl_error_name(dir), stem);
				rc = -1;
			}
			break;
		}
		f->t = realloc(f->t, (size_t)(k + 1) * sizeof *f->t);
		f->path = realloc(f->path, (size_t)(k + 1) * sizeof *f->path);
		if (!f->t || !f->path) {
			fl_error_set(err, "out of memory");
			rc = -1;
			break;
		}
		rc = load_one(path, g, stem, cand, n_cand, k, bound, n_bound,
			      f, err);
	}
	free(cand);
	if (rc < 0)
		fl_tensor_files_free(f);
	return rc;
}

double fl_expect_rtol(fl_dtype dt, double rtol)
{
	return fl_dtype_is_half(dt) && fl_dtype_ulp(dt) > rtol
		? fl_dtype_ulp(dt) : rtol;
}

static bool within(float got, float want, double rtol, double atol)
{
	if (isnan(want) || isnan(got))
		return isnan(want) && isnan(got);
	if (isinf(want) || isinf(got))
		return got == want;
	return fabs((double)got - want) <=
	       atol + rtol * fabs((double)want);
}

/* Compares an integral or bool output exactly; prints its line; 0 when
 * it matches. */
static int compare_exact(const fl_buf *got, const fl_feed *want)
{
	int64_t n = fl_shape_numel(&want->buf.shape), bad = 0, first = -1;
	char sh[128], at[160];

	for (int64_t i = 0; i < n; i++)
		if (got->ints[i] != want->buf.ints[i] && bad++ == 0)
			first = i;
	fl_shape_format(&want->buf.shape, sh, sizeof sh);
	if (!bad) {
		printf("expect %s %s: ok (%s, exact)\n", fl_safe_name(want->name),
		       sh, fl_dtype_name(got->dtype));
		return 0;
	}
	fl_shape_format_index(&want->buf.shape, first, at, sizeof at);
	printf("expect %s %s: MISMATCH in %lld of %lld elements; first %s: "
	       "got %lld, want %lld (%s, exact)\n", fl_safe_name(want->name),
	       sh, (long long)bad, (long long)n, at,
	       (long long)got->ints[first], (long long)want->buf.ints[first],
	       fl_dtype_name(got->dtype));
	return 1;
}

/* Compares one output; prints its line; 0 when it matches. */
static int compare_output(const fl_graph *g, const fl_values *v,
			  const fl_feed *want, double atol)
{
	int t = fl_graph_find_tensor(g, want->name);
	const float *got = v->bufs[t].data;
	int64_t n = fl_shape_numel(&want->buf.shape), bad = 0, first = -1;
	double max_abs = 0, rtol = fl_expect_rtol(g->tensors[t].dtype,
						       FL_EXPECT_RTOL);
	char sh[128], at[160];

	if (v->bufs[t].ints && want->buf.ints)
		return compare_exact(&v->bufs[t], want);
	for (int64_t i = 0; i < n; i++) {
		float w = want->buf.data[i];

		if (!within(got[i], w, rtol, atol)) {
			bad++;
			if (first < 0)
				first = i;
		} else if (isfinite(w)) {
			max_abs = fmax(max_abs, fabs((double)got[i] - w));
		}
	}
	fl_shape_format(&want->buf.shape, sh, sizeof sh);
	if (!bad) {
		printf("expect %s %s: ok (max abs error %.3g; rtol %g, "
		       "atol %g)\n", fl_safe_name(want->name), sh, max_abs,
		       rtol, atol);
		return 0;
	}
	fl_shape_format_index(&want->buf.shape, first, at, sizeof at);
	printf("expect %s %s: MISMATCH in %lld of %lld elements; first %s: "
	       "got %.9g, want %.9g (rtol %g, atol %g)\n",
	       fl_safe_name(want->name), sh, (long long)bad, (long long)n, at,
	       got[first], want->buf.data[first], rtol, atol);
	return 1;
}

int fl_expect_compare(const fl_graph *g, const fl_values *v,
		      const fl_tensor_files *e, double atol)
{
	int rc = 0;

	for (int k = 0; k < e->n; k++)
		rc |= compare_output(g, v, &e->t[k], atol);
	return rc;
}
