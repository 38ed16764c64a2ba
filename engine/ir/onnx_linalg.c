/* ONNX import of the linear algebra operators Det and Einsum, built from
 * slices, products, transposes, reshapes, reductions and matmul.
 *
 * Contract: as onnx_ops.c's mappings (onnx_import_impl.h): each one turns
 * the node being imported into ops emitted through fl_onnx_emit and binds
 * its output 0.  A malformed equation or shape is an error naming it; a
 * form fuselab does not build (a determinant above 4x4, an Einsum of
 * three operands or with broadcast batch letters) is refused through
 * fl_onnx_cannot_model, naming it, and the node stays opaque.
 * fl_onnx_mapping_index (onnx_ops_index.c) falls back on
 * fl_onnx_mapping_linalg.
 *
 * Det of [..., n, n], n <= 4: Leibniz's sum over the n! permutations of
 * signed products of one element per row, each element a slice
 * [..., 1, 1] (n = 4: 24 products of 4).  LU with pivoting would need
 * data-dependent row swaps, which no primitive models.
 *
 * Einsum of one or two operands (ellipsis and implicit output included):
 *   1. a letter repeated in one operand takes the diagonal: the two dims
 *      moved last, merged, and gathered at positions i * (n + 1);
 *   2. a letter of one operand that neither the output nor the other
 *      operand has is summed out (reduce_sum, then reshape);
 *   3. two operands: batch letters (both operands and the output),
 *      contracted ones (both, not the output), each operand's free ones;
 *      A transposed to [batch, freeA, contracted] and B to [batch,
 *      contracted, freeB], reshaped to [Bt, M, K] and [Bt, K, N], one
 *      matmul, reshaped to [batch, freeA, freeB];
 *   4. a transpose into the output's letter order.
 * So matmul, batch matmul, transpose, sums, outer products, dot and
 * diagonals are all covered. */
#include "onnx_import_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT 0		/* emit into the node's output 0 */
#define TMP (-1)	/* emit into a new intermediate */

#define MAX_DET_ORDER 4
/* Ellipsis dims get labels from here on (letters are 'A'..'z'). */
#define ELLIPSIS_LABEL 256

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

static int done(int t)
{
	return t < 0 ? -1 : 0;
}

static int bin(fl_onnx_ctx *c, fl_op_kind kind, int a, int b, int out,
	       fl_error *err)
{
	return a < 0 || b < 0 ? -1 : fl_onnx_emit2(c, kind, a, b, out, err);
}

static int reshape(fl_onnx_ctx *c, int x, const fl_shape *s, int out,
		   fl_error *err)
{
	return x < 0 ? -1 : fl_onnx_reshape(c, x, s, out, err);
}

/* x transposed by perm (a copy when perm is the identity and out is the
 * node's output; x itself for an identity into TMP). */
static int transpose(fl_onnx_ctx *c, int x, const int64_t *perm, int out,
		     fl_error *err)
{
	int rank = x < 0 ? 0 : shape_of(c, x)->rank;
	bool same = true;

	for (int d = 0; d < rank; d++)
		same = same && perm[d] == d;
	if (x < 0 || (same && out == TMP))
		return x;
	if (same)
		return fl_onnx_emit1(c, FL_OP_COPY, x, out, err);
	return fl_onnx_emit_ints(c, FL_OP_TRANSPOSE, x, "perm", perm, rank, out,
				 err);
}

/* --- Det --- */

/* Element [..., i, j] of x [..., n, n] as a [..., 1, 1] slice. */
static int element(fl_onnx_ctx *c, int x, int i, int j, fl_error *err)
{
	const fl_shape *s = shape_of(c, x);
	int64_t starts[FL_MAX_RANK] = {0}, ends[FL_MAX_RANK];
	fl_attrs a = {0};

	memcpy(ends, s->dim, sizeof ends);
	starts[s->rank - 2] = i;
	ends[s->rank - 2] = i + 1;
	starts[s->rank - 1] = j;
	ends[s->rank - 1] = j + 1;
	if (fl_attrs_set_ints(&a, "starts", starts, s->rank) < 0 ||
	    fl_attrs_set_ints(&a, "ends", ends, s->rank) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	return fl_onnx_emit_attrs(c, FL_OP_SLICE, &x, 1, &a, TMP, err);
}

/* The next permutation of p[0..n-1] in lexicographic order, flipping
 * *sign with each transposition; false after the last. */
static bool next_permutation(int *p, int n, int *sign)
{
	int i = n - 2, j = n - 1;

	while (i >= 0 && p[i] > p[i + 1])
		i--;
	if (i < 0)
		return false;
	while (p[j] < p[i])
		j--;
	*sign = -*sign;
	{ int t = p[i]; p[i] = p[j]; p[j] = t; }
	for (int a = i + 1, b = n - 1; a < b; a++, b--) {
		int t = p[a];

		p[a] = p[b];
		p[b] = t;
		*sign = -*sign;
	}
	return true;
}

/* Leibniz's sum over the permutations of the elements e[i][j]. */
static int leibniz(fl_onnx_ctx *c, int e[][MAX_DET_ORDER], int n,
		   fl_error *err)
{
	int p[MAX_DET_ORDER] = {0, 1, 2, 3}, sign = 1, sum = -1;

	do {
		int term = e[0][p[0]];

		for (int i = 1; i < n; i++)
			term = bin(c, FL_OP_MUL, term, e[i][p[i]], TMP, err);
		if (term < 0)
			return -1;
		if (sum < 0)
			sum = sign > 0 ? term
				       : fl_onnx_emit1(c, FL_OP_NEG, term, TMP,
						       err);
		else
			sum = bin(c, sign > 0 ? FL_OP_ADD : FL_OP_SUB, sum,
				  term, TMP, err);
		if (sum < 0)
			return -1;
	} while (next_permutation(p, n, &sign));
	return sum;
}

static int map_det(fl_onnx_ctx *c, fl_error *err)
{
	int x = fl_onnx_data(c, 0, err), e[MAX_DET_ORDER][MAX_DET_ORDER];
	fl_shape s, os;
	int n;

	if (x < 0)
		return -1;
	s = *shape_of(c, x);
	if (s.rank < 2 || s.dim[s.rank - 1] != s.dim[s.rank - 2]) {
		fl_error_set(err, "input 0: Det takes square matrices [..., "
			     "n, n]");
		return -1;
	}
	if (s.dim[s.rank - 1] > MAX_DET_ORDER || s.dim[s.rank - 1] < 1)
		return fl_onnx_cannot_model(c, err, "a %lldx%lld determinant "
					    "(fuselab builds up to 4x4)",
					    (long long)s.dim[s.rank - 1],
					    (long long)s.dim[s.rank - 1]);
	n = (int)s.dim[s.rank - 1];
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if ((e[i][j] = element(c, x, i, j, err)) < 0)
				return -1;
	os = s;
	os.rank -= 2;
	return done(reshape(c, leibniz(c, e, n, err), &os, OUT, err));
}

/* --- Einsum: the equation --- */

/* One operand's (or the output's) labels, one per dim. */
typedef struct term {
	int n;
	int label[FL_MAX_RANK];
	int ellipsis_at;	/* where "..." stood among the letters, or -1 */
	int n_letters;
} term;

typedef struct equation {
	int n_in;
	term in[2];
	term out;
	bool explicit_out;
} equation;

/* Parses one term from *p up to ',' '-' or the end; spaces skipped. */
static int parse_term(const char **p, term *t, fl_error *err)
{
	t->n_letters = 0;
	t->ellipsis_at = -1;
	for (; **p && **p != ',' && **p != '-'; (*p)++) {
		if (**p == ' ')
			continue;
		if (!strncmp(*p, "...", 3) && t->ellipsis_at < 0) {
			t->ellipsis_at = t->n_letters;
			*p += 2;
		} else if ((**p >= 'a' && **p <= 'z') ||
			   (**p >= 'A' && **p <= 'Z')) {
			if (t->n_letters == FL_MAX_RANK) {
				fl_error_set(err, "equation: a term of more "
					     "than %d letters", FL_MAX_RANK);
				return -1;
			}
			t->label[t->n_letters++] = (unsigned char)**p;
		} else {
			fl_error_set(err, "equation: unexpected '%c'", **p);
			return -1;
		}
	}
	t->n = t->n_letters;
	return 0;
}

static int parse_equation(const char *eq, equation *e, fl_error *err)
{
	const char *p = eq;

	e->n_in = 0;
	for (;;) {
		if (e->n_in == 2)
			return 1;	/* three or more operands */
		if (parse_term(&p, &e->in[e->n_in++], err) < 0)
			return -1;
		if (*p != ',')
			break;
		p++;
	}
	e->explicit_out = *p == '-';
	if (e->explicit_out) {
		if (p[1] != '>') {
			fl_error_set(err, "equation: '-' without '>'");
			return -1;
		}
		p += 2;
		if (parse_term(&p, &e->out, err) < 0)
			return -1;
		if (*p) {
			fl_error_set(err, "equation: text after the output");
			return -1;
		}
	}
	return 0;
}

/* Replaces a term's "..." by labels for its ellipsis dims (rank - its
 * letters of them, right-aligned across operands: the last ellipsis dim
 * of each has label ELLIPSIS_LABEL + n_ell - 1). */
static int expand_ellipsis(term *t, int rank, int n_ell, fl_error *err)
{
	int k = rank - t->n_letters, lab[FL_MAX_RANK], n = 0;

	if (k < 0 || (k > 0 && t->ellipsis_at < 0)) {
		fl_error_set(err, "equation: a term of %d letters for an "
			     "operand of rank %d", t->n_letters, rank);
		return -1;
	}
	for (int i = 0; i <= t->n_letters; i++) {
		if (i == t->ellipsis_at)
			for (int j = 0; j < k; j++)
				lab[n++] = ELLIPSIS_LABEL + n_ell - k + j;
		if (i < t->n_letters)
			lab[n++] = t->label[i];
	}
	memcpy(t->label, lab, sizeof lab);
	t->n = n;
	return 0;
}

static bool has_label(const term *t, int label)
{
	for (int d = 0; d < t->n; d++)
		if (t->label[d] == label)
			return true;
	return false;
}

/* The implicit output: the ellipsis dims, then the letters that occur
 * once over all operands, in alphabetical order. */
static void implicit_output(equation *e, int n_ell)
{
	term *o = &e->out;

	o->n = 0;
	for (int j = 0; j < n_ell; j++)
		o->label[o->n++] = ELLIPSIS_LABEL + j;
	for (int l = 'A'; l <= 'z'; l++) {
		int count = 0;

		for (int k = 0; k < e->n_in; k++)
			for (int d = 0; d < e->in[k].n; d++)
				count += e->in[k].label[d] == l;
		if (count == 1)
			o->label[o->n++] = l;
	}
}

/* --- Einsum: the steps --- */

/* An operand on its way: graph tensor and the label of each dim. */
typedef struct operand {
	int t;
	term lab;
} operand;

/* Step 1: the diagonal of the dims at p < q (equal extents) moves to the
 * end as one dim. */
static int take_diagonal(fl_onnx_ctx *c, operand *o, int p, int q,
			 fl_error *err)
{
	fl_shape s = *shape_of(c, o->t), ms;
	int64_t perm[FL_MAX_RANK], n = s.dim[p];
	int in[2], label = o->lab.label[p], r = 0;
	term nl = {0};
	fl_attrs a = {0};

	if (s.dim[q] != n) {
		fl_error_set(err, "equation: a repeated letter over extents "
			     "%lld and %lld", (long long)n,
			     (long long)s.dim[q]);
		return -1;
	}
	for (int d = 0; d < s.rank; d++)
		if (d != p && d != q) {
			perm[r] = d;
			ms.dim[r] = s.dim[d];
			nl.label[r++] = o->lab.label[d];
		}
	perm[r] = p;
	perm[r + 1] = q;
	ms.rank = r + 1;
	ms.dim[r] = n * n;
	nl.label[r] = label;
	nl.n = r + 1;
	{
		float *v = malloc((size_t)n * sizeof *v);
		fl_shape is = fl_shape_make(1, &n);

		if (!v)
			return fl_onnx_oom(err);
		for (int64_t i = 0; i < n; i++)
			v[i] = (float)(i * (n + 1));
		in[1] = fl_onnx_const_tensor(c, "diagonal", &is, v, err);
		free(v);
	}
	if (in[1] < 0 || fl_tensor_convert_const(&c->g->tensors[in[1]],
						 FL_I64, err) < 0)
		return -1;
	in[0] = reshape(c, transpose(c, o->t, perm, TMP, err), &ms, TMP, err);
	if (in[0] < 0)
		return -1;
	if (fl_attrs_set_number(&a, "axis", r) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	o->t = fl_onnx_emit_attrs(c, FL_OP_GATHER, in, 2, &a, TMP, err);
	o->lab = nl;
	return o->t < 0 ? -1 : 0;
}

static int diagonals(fl_onnx_ctx *c, operand *o, fl_error *err)
{
	for (int p = 0; p < o->lab.n; p++)
		for (int q = p + 1; q < o->lab.n; q++)
			if (o->lab.label[p] == o->lab.label[q]) {
				if (take_diagonal(c, o, p, q, err) < 0)
					return -1;
				p = -1;	/* labels moved: start over */
				break;
			}
	return 0;
}

/* Step 2: sums out the dims whose labels neither `keep` term has. */
static int sum_out(fl_onnx_ctx *c, operand *o, const term *keep1,
		   const term *keep2, fl_error *err)
{
	int64_t axes[FL_MAX_RANK];
	fl_shape s = *shape_of(c, o->t), rs = {0};
	term nl = {0};
	int n = 0;

	for (int d = 0; d < o->lab.n; d++) {
		int l = o->lab.label[d];

		if (has_label(keep1, l) || (keep2 && has_label(keep2, l))) {
			rs.dim[rs.rank++] = s.dim[d];
			nl.label[nl.n++] = l;
		} else {
			axes[n++] = d;
		}
	}
	if (n == 0)
		return 0;
	o->t = fl_onnx_emit_ints(c, FL_OP_REDUCE_SUM, o->t, "axes", axes, n,
				 TMP, err);
	o->t = reshape(c, o->t, &rs, TMP, err);
	o->lab = nl;
	return o->t < 0 ? -1 : 0;
}

/* Step 4: o into the output's label order, into the node's output. */
static int to_output(fl_onnx_ctx *c, const operand *o, const term *out,
		     fl_error *err)
{
	int64_t perm[FL_MAX_RANK];

	for (int d = 0; d < out->n; d++)
		for (int k = 0; k < o->lab.n; k++)
			if (o->lab.label[k] == out->label[d])
				perm[d] = k;
	return done(transpose(c, o->t, perm, OUT, err));
}

/* The labels of `from` that satisfy in_a/in_b/in_out membership. */
static void select_labels(const term *from, const term *a, bool in_a,
			  const term *b, bool in_b, term *sel)
{
	sel->n = 0;
	for (int d = 0; d < from->n; d++) {
		int l = from->label[d];

		if (has_label(a, l) == in_a && has_label(b, l) == in_b)
			sel->label[sel->n++] = l;
	}
}

/* o transposed to the label order `order` (a concatenation of terms)
 * and reshaped to [groups...] where each group is the product of one
 * term's extents; the extents of every label go to ext[label]. */
static int group(fl_onnx_ctx *c, const operand *o, const term *const *parts,
		 int n_parts, int64_t *ext, fl_error *err)
{
	const fl_shape *s = shape_of(c, o->t);
	int64_t perm[FL_MAX_RANK];
	fl_shape gs = {.rank = n_parts};
	int r = 0;

	for (int d = 0; d < o->lab.n; d++)
		ext[o->lab.label[d]] = s->dim[d];
	for (int p = 0; p < n_parts; p++) {
		gs.dim[p] = 1;
		for (int i = 0; i < parts[p]->n; i++) {
			for (int k = 0; k < o->lab.n; k++)
				if (o->lab.label[k] == parts[p]->label[i])
					perm[r] = k;
			gs.dim[p] *= ext[parts[p]->label[i]];
			r++;
		}
	}
	return reshape(c, transpose(c, o->t, perm, TMP, err), &gs, TMP, err);
}

/* Step 3: the contraction of a and b by one matmul. */
static int contract(fl_onnx_ctx *c, const operand *a, const operand *b,
		    const term *out, operand *res, fl_error *err)
{
	int64_t ext_a[ELLIPSIS_LABEL + FL_MAX_RANK];
	int64_t ext_b[ELLIPSIS_LABEL + FL_MAX_RANK];
	term batch, con, fa, fb;
	fl_shape rs = {0};
	int ga, gb, y;

	select_labels(&a->lab, &b->lab, true, out, true, &batch);
	select_labels(&a->lab, &b->lab, true, out, false, &con);
	select_labels(&a->lab, &b->lab, false, out, true, &fa);
	select_labels(&b->lab, &a->lab, false, out, true, &fb);
	ga = group(c, a, (const term *[]){&batch, &fa, &con}, 3, ext_a, err);
	gb = ga < 0 ? -1 : group(c, b, (const term *[]){&batch, &con, &fb}, 3,
				 ext_b, err);
	if (gb < 0)
		return -1;
	for (int i = 0; i < batch.n; i++)
		if (ext_a[batch.label[i]] != ext_b[batch.label[i]])
			return fl_onnx_cannot_model(c, err, "equation with "
						    "a batch letter broadcast "
						    "(extents %lld and %lld)",
						    (long long)ext_a[batch.label[i]],
						    (long long)ext_b[batch.label[i]]);
	for (int i = 0; i < con.n; i++)
		if (ext_a[con.label[i]] != ext_b[con.label[i]]) {
			fl_error_set(err, "equation: a summed letter over "
				     "extents %lld and %lld",
				     (long long)ext_a[con.label[i]],
				     (long long)ext_b[con.label[i]]);
			return -1;
		}
	y = bin(c, FL_OP_MATMUL, ga, gb, TMP, err);
	res->lab.n = 0;
	for (int p = 0; p < 3; p++) {
		const term *t = p == 0 ? &batch : p == 1 ? &fa : &fb;

		for (int i = 0; i < t->n; i++) {
			res->lab.label[res->lab.n++] = t->label[i];
			rs.dim[rs.rank++] = p == 2 ? ext_b[t->label[i]]
						   : ext_a[t->label[i]];
		}
	}
	res->t = reshape(c, y, &rs, TMP, err);
	return res->t < 0 ? -1 : 0;
}

/* The equation's labels checked and the ellipses expanded. */
static int prepare(fl_onnx_ctx *c, equation *e, operand *o, fl_error *err)
{
	int n_ell = 0;

	for (int k = 0; k < e->n_in; k++) {
		int r = shape_of(c, o[k].t)->rank - e->in[k].n_letters;

		n_ell = r > n_ell ? r : n_ell;
	}
	for (int k = 0; k < e->n_in; k++) {
		if (expand_ellipsis(&e->in[k], shape_of(c, o[k].t)->rank,
				    n_ell, err) < 0)
			return -1;
		o[k].lab = e->in[k];
	}
	if (!e->explicit_out)
		implicit_output(e, n_ell);
	else if (expand_ellipsis(&e->out, e->out.n_letters +
				 (e->out.ellipsis_at >= 0 ? n_ell : 0), n_ell,
				 err) < 0)
		return -1;
	for (int d = 0; d < e->out.n; d++) {
		bool found = false;

		for (int k = 0; k < e->n_in; k++)
			found = found || has_label(&e->in[k], e->out.label[d]);
		for (int j = 0; j < d; j++)
			found = found && e->out.label[j] != e->out.label[d];
		if (!found) {
			fl_error_set(err, "equation: an output letter no "
				     "operand has, or one repeated");
			return -1;
		}
	}
	return 0;
}

static int map_einsum(fl_onnx_ctx *c, fl_error *err)
{
	char eq[256];
	equation e;
	operand o[2], res;
	int rc;

	fl_onnx_attr_string(c, "equation", "", eq, sizeof eq);
	if ((rc = parse_equation(eq, &e, err)) < 0)
		return -1;
	if (rc > 0 || fl_onnx_n_inputs(c) != e.n_in) {
		if (rc > 0)
			return fl_onnx_cannot_model(c, err, "equation \"%.60s\" "
						    "(at most two operands)",
						    eq);
		fl_error_set(err, "equation \"%s\" has %d operands, the node "
			     "%d inputs", eq, e.n_in, fl_onnx_n_inputs(c));
		return -1;
	}
	for (int k = 0; k < e.n_in; k++)
		if ((o[k].t = fl_onnx_data(c, k, err)) < 0)
			return -1;
	if (prepare(c, &e, o, err) < 0)
		return -1;
	for (int k = 0; k < e.n_in; k++)
		if (diagonals(c, &o[k], err) < 0 ||
		    sum_out(c, &o[k], &e.out, e.n_in == 2 ? &o[1 - k].lab : NULL,
			    err) < 0)
			return -1;
	if (e.n_in == 1)
		return to_output(c, &o[0], &e.out, err);
	if (contract(c, &o[0], &o[1], &e.out, &res, err) < 0)
		return -1;
	return to_output(c, &res, &e.out, err);
}

/* --- the table --- */

static const struct {
	const char *op_type;
	fl_onnx_map_fn map;
} mappings[] = {
	{"Det", map_det}, {"Einsum", map_einsum},
};

fl_onnx_map_fn fl_onnx_mapping_linalg(const char *op_type)
{
	for (size_t k = 0; k < sizeof mappings / sizeof mappings[0]; k++)
		if (!strcmp(mappings[k].op_type, op_type))
			return mappings[k].map;
	return NULL;
}
