/* Recurrent cells: the compound ops lstm, gru and rnn (ONNX's LSTM, GRU
 * and RNN, attribute conventions at the top of ops.h).
 *
 * Contract:
 *   - inputs, in ONNX's order with sequence_lens left out (the importer
 *     only maps a sequence_lens that is constant and equal to the
 *     sequence length, i.e. no effect): x [T, B, I] (layout 0: time
 *     first; the importer transposes ONNX's layout 1), w [D, G*H, I],
 *     r [D, G*H, H], then optionally b [D, 2*G*H] (Wb then Rb), h0
 *     [D, B, H] and, for lstm, c0 [D, B, H] and p [D, 3*H] (peepholes
 *     i, o, f).  G = 4 gates for lstm (order i, o, f, c), 3 for gru
 *     (z, r, h), 1 for rnn; D = 2 for "direction" "bidirectional", else
 *     1.  A missing optional input is zero; the importer fills a gap in
 *     the middle with a zero constant.
 *   - one output per op, chosen by "output": "y" (default) every step's
 *     hidden state, [T, D, B, H]; "h" the last hidden state of each
 *     direction, [D, B, H]; "c" (lstm) the last cell state, [D, B, H].
 *     The graph's invariant is one output per op (partition, codegen and
 *     the views all count on it), so an ONNX node that wants Y_c as well
 *     as Y becomes two ops; Y_h, when Y is computed, is sliced out of Y by
 *     the importer (the reverse direction's last state is its time 0).
 *   - the semantics are ONNX's: per step, gates = x_t W^T + h_{t-1} R^T
 *     + Wb + Rb, the activations of "activations" ("sigmoid", "tanh" or
 *     "relu", comma-separated, f g h for lstm, f g for gru, f for rnn, one
 *     set per direction; defaults sigmoid,tanh,tanh / sigmoid,tanh /
 *     tanh), gru's "linear_before_reset", lstm's "input_forget" (forget
 *     gate = 1 - input gate) and "clip" (bounds every gate's
 *     pre-activation to [-clip, clip]; not the cell state fed to h).
 *     The reverse direction runs t = T-1 .. 0 and writes y at t.
 *
 * fl_eval_X is the reference: plain loops in double that follow the ONNX
 * equations, independent of the expansion.  fl_expand_X unrolls the time
 * loop (the sequence length is static): per direction it slices that
 * direction's W, R and bias once, then per step emits a matmul of x_t
 * with W^T and of h_{t-1} with R^T, the bias adds, gate slices, the
 * nonlinearities and the cell update, and finally concatenates the h_t
 * into y (or gives the last h or c).  Everything emitted is a primitive,
 * so the partition stage shows the cell's matmuls and its elementwise
 * cell math fusing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ops_impl.h"

enum { IN_X, IN_W, IN_R, IN_B, IN_H0, IN_C0, IN_P };

typedef enum cell_kind { CELL_LSTM, CELL_GRU, CELL_RNN } cell_kind;
typedef enum cell_act { ACT_SIGMOID, ACT_TANH, ACT_RELU } cell_act;
typedef enum cell_out { OUT_Y, OUT_H, OUT_C } cell_out;

#define MAX_ACTS 6

/* Everything an op's attributes and input shapes say about the cell. */
typedef struct cell_spec {
	cell_kind cell;
	int gates;		/* G: 4, 3, 1 */
	int n_acts;		/* activations per direction: 3, 2, 1 */
	int dirs;		/* D */
	bool reverse;		/* "reverse": the one direction runs back */
	cell_act acts[MAX_ACTS];	/* direction d's at d * n_acts */
	bool has_clip;
	double clip;
	bool input_forget;	/* lstm */
	bool linear_before_reset;	/* gru */
	cell_out out;
	int64_t T, B, I, H;
	bool has_b, has_h0, has_c0, has_p;
} cell_spec;

/* ------------------------------------------------------------------ */
/* Attributes                                                           */

static int read_direction(const fl_op *op, cell_spec *s, fl_error *err)
{
	const char *dir;

	if (fl_attr_string(&op->attrs, "direction", "forward", &dir, err) < 0)
		return -1;
	s->dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
	s->reverse = strcmp(dir, "reverse") == 0;
	if (s->dirs == 1 && !s->reverse && strcmp(dir, "forward") != 0) {
		fl_error_set(err, "attrs.direction: \"%s\" is not forward, "
			     "reverse or bidirectional", dir);
		return -1;
	}
	return 0;
}

/* One activation name, any case; -1 when not one fuselab computes. */
static int act_of(const char *name, size_t len)
{
	static const char *const names[] = {"sigmoid", "tanh", "relu"};

	for (int a = 0; a < 3; a++)
		if (strlen(names[a]) == len && strncasecmp(name, names[a], len) == 0)
			return a;
	return -1;
}

static void default_acts(cell_spec *s)
{
	static const cell_act lstm[] = {ACT_SIGMOID, ACT_TANH, ACT_TANH};
	static const cell_act gru[] = {ACT_SIGMOID, ACT_TANH};

	for (int d = 0; d < s->dirs; d++)
		for (int k = 0; k < s->n_acts; k++)
			s->acts[d * s->n_acts + k] =
				s->cell == CELL_LSTM ? lstm[k]
				: s->cell == CELL_GRU ? gru[k] : ACT_TANH;
}

/* "activations": n_acts names per direction, comma-separated (one set
 * for a bidirectional cell serves both directions). */
static int read_acts(const fl_op *op, cell_spec *s, fl_error *err)
{
	const char *list = NULL;
	int n = 0;

	default_acts(s);
	if (fl_attr_string(&op->attrs, "activations", NULL, &list, err) < 0)
		return -1;
	for (const char *p = list; p; n++) {
		size_t len = strcspn(p, ",");
		int a = act_of(p, len);

		if (a < 0) {
			fl_error_set(err, "attrs.activations: \"%.*s\" is not "
				     "supported (sigmoid, tanh, relu)",
				     (int)len, p);
			return -1;
		}
		if (n < MAX_ACTS)
			s->acts[n] = (cell_act)a;
		p = p[len] ? p + len + 1 : NULL;
	}
	if (!list || n == s->n_acts * s->dirs)
		return 0;
	if (n == s->n_acts && s->dirs == 2) {
		memcpy(s->acts + n, s->acts, (size_t)n * sizeof *s->acts);
		return 0;
	}
	fl_error_set(err, "attrs.activations: %d names for %d direction(s), "
		     "expected %d", n, s->dirs, s->n_acts * s->dirs);
	return -1;
}

static int read_output(const fl_op *op, cell_spec *s, fl_error *err)
{
	const char *o;

	if (fl_attr_string(&op->attrs, "output", "y", &o, err) < 0)
		return -1;
	s->out = strcmp(o, "h") == 0 ? OUT_H : strcmp(o, "c") == 0 ? OUT_C
								 : OUT_Y;
	if ((s->out == OUT_Y && strcmp(o, "y") != 0) ||
	    (s->out == OUT_C && s->cell != CELL_LSTM)) {
		fl_error_set(err, "attrs.output: \"%s\" is not %s", o,
			     s->cell == CELL_LSTM ? "y, h or c" : "y or h");
		return -1;
	}
	return 0;
}

static int read_flags(const fl_op *op, cell_spec *s, fl_error *err)
{
	int rc = fl_attr_float(&op->attrs, "clip", 0, &s->clip, err);

	if (rc < 0)
		return -1;
	s->has_clip = rc == 1;
	if (s->has_clip && !(s->clip > 0)) {
		fl_error_set(err, "attrs.clip: must be > 0, got %g", s->clip);
		return -1;
	}
	if (s->cell == CELL_LSTM &&
	    fl_attr_bool(&op->attrs, "input_forget", false, &s->input_forget,
			 err) < 0)
		return -1;
	return s->cell == CELL_GRU
		? fl_attr_bool(&op->attrs, "linear_before_reset", false,
			       &s->linear_before_reset, err) < 0 ? -1 : 0
		: 0;
}

/* ------------------------------------------------------------------ */
/* Shapes                                                               */

static int bad_shape(int k, const char *what, const fl_shape *got,
		     const fl_shape *want, fl_error *err)
{
	char g[128], w[128];

	fl_error_set(err, "in[%d]: %s shape %s, expected %s", k, what,
		     fl_shape_format(got, g, sizeof g),
		     fl_shape_format(want, w, sizeof w));
	return -1;
}

static int expect3(const fl_shape *in, int k, const char *what, int64_t a,
		   int64_t b, int64_t c, fl_error *err)
{
	fl_shape want = fl_shape_make(3, (const int64_t[]){a, b, c});

	return fl_shape_equal(&in[k], &want) ? 0
					      : bad_shape(k, what, &in[k], &want, err);
}

static int expect2(const fl_shape *in, int k, const char *what, int64_t a,
		   int64_t b, fl_error *err)
{
	fl_shape want = fl_shape_make(2, (const int64_t[]){a, b});

	return fl_shape_equal(&in[k], &want) ? 0
					      : bad_shape(k, what, &in[k], &want, err);
}

static int need_rank3(const fl_shape *s, int k, const char *what,
		      fl_error *err)
{
	char b[128];

	if (s->rank == 3)
		return 0;
	fl_error_set(err, "in[%d]: %s needs rank 3, got shape %s", k, what,
		     fl_shape_format(s, b, sizeof b));
	return -1;
}

/* T, B, I from x, H from r (and "hidden_size" when given), then every
 * other input against them. */
static int read_shapes(const fl_op *op, const fl_shape *in, cell_spec *s,
		       fl_error *err)
{
	int64_t gh, hs;
	int rc;

	if (need_rank3(&in[IN_X], IN_X, "x", err) < 0 ||
	    need_rank3(&in[IN_R], IN_R, "r", err) < 0)
		return -1;
	s->T = in[IN_X].dim[0];
	s->B = in[IN_X].dim[1];
	s->I = in[IN_X].dim[2];
	s->H = in[IN_R].dim[2];
	rc = fl_attr_int(&op->attrs, "hidden_size", s->H, &hs, err);
	if (rc < 0)
		return -1;
	if (rc == 1 && hs != s->H) {
		fl_error_set(err, "attrs.hidden_size: %lld, but r gives %lld",
			     (long long)hs, (long long)s->H);
		return -1;
	}
	gh = s->gates * s->H;
	s->has_b = op->n_in > IN_B;
	s->has_h0 = op->n_in > IN_H0;
	s->has_c0 = op->n_in > IN_C0;
	s->has_p = op->n_in > IN_P;
	if (expect3(in, IN_W, "w", s->dirs, gh, s->I, err) < 0 ||
	    expect3(in, IN_R, "r", s->dirs, gh, s->H, err) < 0 ||
	    (s->has_b && expect2(in, IN_B, "b", s->dirs, 2 * gh, err) < 0) ||
	    (s->has_h0 &&
	     expect3(in, IN_H0, "h0", s->dirs, s->B, s->H, err) < 0) ||
	    (s->has_c0 &&
	     expect3(in, IN_C0, "c0", s->dirs, s->B, s->H, err) < 0) ||
	    (s->has_p && expect2(in, IN_P, "p", s->dirs, 3 * s->H, err) < 0))
		return -1;
	return 0;
}

/* The spec of op with input shapes in (inference has the same checks). */
static int read_spec(const fl_op *op, cell_kind cell, const fl_shape *in,
		     cell_spec *s, fl_error *err)
{
	static const int gates[] = {4, 3, 1}, acts[] = {3, 2, 1};

	memset(s, 0, sizeof *s);
	s->cell = cell;
	s->gates = gates[cell];
	s->n_acts = acts[cell];
	if (read_direction(op, s, err) < 0 || read_acts(op, s, err) < 0 ||
	    read_output(op, s, err) < 0 || read_flags(op, s, err) < 0)
		return -1;
	return read_shapes(op, in, s, err);
}

static fl_shape out_shape(const cell_spec *s)
{
	if (s->out == OUT_Y)
		return fl_shape_make(4, (const int64_t[]){s->T, s->dirs, s->B,
							  s->H});
	return fl_shape_make(3, (const int64_t[]){s->dirs, s->B, s->H});
}

static int infer_cell(const fl_op *op, cell_kind cell, const fl_shape *in,
		      fl_shape *out, fl_error *err)
{
	cell_spec s;

	if (read_spec(op, cell, in, &s, err) < 0)
		return -1;
	out[0] = out_shape(&s);
	return 0;
}

int fl_infer_lstm(const fl_op *op, const fl_shape *in, fl_shape *out,
		  fl_error *err)
{
	return infer_cell(op, CELL_LSTM, in, out, err);
}

int fl_infer_gru(const fl_op *op, const fl_shape *in, fl_shape *out,
		 fl_error *err)
{
	return infer_cell(op, CELL_GRU, in, out, err);
}

int fl_infer_rnn(const fl_op *op, const fl_shape *in, fl_shape *out,
		 fl_error *err)
{
	return infer_cell(op, CELL_RNN, in, out, err);
}

/* ------------------------------------------------------------------ */
/* Reference (double)                                                   */

static double activate(cell_act a, double v)
{
	switch (a) {
	case ACT_SIGMOID:
		return 1 / (1 + exp(-v));
	case ACT_TANH:
		return tanh(v);
	default:
		return v > 0 ? v : 0;
	}
}

/* Activation k of direction d applied to a gate's pre-activation v,
 * clipped first when "clip" is given. */
static double gate(const cell_spec *s, int d, int k, double v)
{
	if (s->has_clip)
		v = fmin(fmax(v, -s->clip), s->clip);
	return activate(s->acts[d * s->n_acts + k], v);
}

/* The state of one direction's run, and its scratch rows. */
typedef struct cell_run {
	const cell_spec *s;
	const fl_buf *in;
	int d;
	const float *w, *r, *wb, *rb, *p;	/* direction d's; NULL: zero */
	double *h, *c;		/* [B, H] */
	double *xw, *hr;	/* [G*H]: x_t W^T + Wb, h R^T + Rb */
	double *rs;		/* [H]: gru's reset gate times h */
} cell_run;

/* out[g] = sum_k v[k] * m[g, k] (+ bias[g]) for g < n rows of length k_n. */
static void mat_vec(const float *m, const double *v, const float *bias,
		    int64_t n, int64_t k_n, double *out)
{
	for (int64_t g = 0; g < n; g++) {
		double acc = bias ? bias[g] : 0;

		for (int64_t k = 0; k < k_n; k++)
			acc += m[g * k_n + k] * v[k];
		out[g] = acc;
	}
}

/* xw and hr of batch row b at time t. */
static void row_products(cell_run *cr, int64_t t, int64_t b, double *x)
{
	const cell_spec *s = cr->s;
	const float *xt = cr->in[IN_X].data + (t * s->B + b) * s->I;
	int64_t gh = s->gates * s->H;

	for (int64_t i = 0; i < s->I; i++)
		x[i] = xt[i];
	mat_vec(cr->w, x, cr->wb, gh, s->I, cr->xw);
	mat_vec(cr->r, cr->h + b * s->H, cr->rb, gh, s->H, cr->hr);
}

static void lstm_row(cell_run *cr, int64_t b)
{
	const cell_spec *s = cr->s;
	int64_t H = s->H;
	double *h = cr->h + b * H, *c = cr->c + b * H;

	for (int64_t j = 0; j < H; j++) {
		double pre[4], i, f, g, o;

		for (int k = 0; k < 4; k++)
			pre[k] = cr->xw[k * H + j] + cr->hr[k * H + j];
		i = gate(s, cr->d, 0, pre[0] + (cr->p ? cr->p[j] * c[j] : 0));
		f = s->input_forget ? 1 - i
			: gate(s, cr->d, 0,
			       pre[2] + (cr->p ? cr->p[2 * H + j] * c[j] : 0));
		g = gate(s, cr->d, 1, pre[3]);
		c[j] = f * c[j] + i * g;
		o = gate(s, cr->d, 0, pre[1] + (cr->p ? cr->p[H + j] * c[j] : 0));
		h[j] = o * activate(s->acts[cr->d * s->n_acts + 2], c[j]);
	}
}

/* gru: z and r from xw + hr; the candidate from the reset state. */
static void gru_row(cell_run *cr, int64_t b)
{
	const cell_spec *s = cr->s;
	int64_t H = s->H;
	double *h = cr->h + b * H;

	for (int64_t j = 0; j < H; j++)
		cr->rs[j] = gate(s, cr->d, 0, cr->xw[H + j] + cr->hr[H + j]);
	if (!s->linear_before_reset) {
		for (int64_t j = 0; j < H; j++)
			cr->rs[j] *= h[j];
		/* hr's h rows become (r * h) R_h^T + Rb_h */
		mat_vec(cr->r + 2 * H * H, cr->rs, cr->rb ? cr->rb + 2 * H : NULL,
			H, H, cr->hr + 2 * H);
	}
	for (int64_t j = 0; j < H; j++) {
		double z = gate(s, cr->d, 0, cr->xw[j] + cr->hr[j]);
		double lin = s->linear_before_reset ? cr->rs[j] * cr->hr[2 * H + j]
						    : cr->hr[2 * H + j];
		double hh = gate(s, cr->d, 1, cr->xw[2 * H + j] + lin);

		h[j] = (1 - z) * hh + z * h[j];
	}
}

static void rnn_row(cell_run *cr, int64_t b)
{
	for (int64_t j = 0; j < cr->s->H; j++)
		cr->h[b * cr->s->H + j] =
			gate(cr->s, cr->d, 0, cr->xw[j] + cr->hr[j]);
}

/* Loads direction d's weights and initial state into cr. */
static void run_start(cell_run *cr, int d)
{
	const cell_spec *s = cr->s;
	const fl_buf *in = cr->in;
	int64_t gh = s->gates * s->H, bh = s->B * s->H;

	cr->d = d;
	cr->w = in[IN_W].data + d * gh * s->I;
	cr->r = in[IN_R].data + d * gh * s->H;
	cr->wb = s->has_b ? in[IN_B].data + d * 2 * gh : NULL;
	cr->rb = s->has_b ? cr->wb + gh : NULL;
	cr->p = s->has_p ? in[IN_P].data + d * 3 * s->H : NULL;
	for (int64_t k = 0; k < bh; k++) {
		cr->h[k] = s->has_h0 ? in[IN_H0].data[d * bh + k] : 0;
		cr->c[k] = s->has_c0 ? in[IN_C0].data[d * bh + k] : 0;
	}
}

/* Runs direction d over every step, writing y (when the output is y)
 * and then the last h or c. */
static void run_direction(cell_run *cr, int d, double *x, fl_buf *out)
{
	const cell_spec *s = cr->s;
	bool back = s->reverse || d == 1;
	int64_t bh = s->B * s->H;

	run_start(cr, d);
	for (int64_t step = 0; step < s->T; step++) {
		int64_t t = back ? s->T - 1 - step : step;

		for (int64_t b = 0; b < s->B; b++) {
			row_products(cr, t, b, x);
			if (s->cell == CELL_LSTM)
				lstm_row(cr, b);
			else if (s->cell == CELL_GRU)
				gru_row(cr, b);
			else
				rnn_row(cr, b);
		}
		for (int64_t k = 0; s->out == OUT_Y && k < bh; k++)
			out->data[(t * s->dirs + d) * bh + k] = (float)cr->h[k];
	}
	for (int64_t k = 0; s->out != OUT_Y && k < bh; k++)
		out->data[d * bh + k] =
			(float)(s->out == OUT_H ? cr->h[k] : cr->c[k]);
}

static void eval_cell(const fl_op *op, cell_kind cell, const fl_buf *in,
		      fl_buf *out)
{
	fl_shape shapes[IN_P + 1];
	cell_spec s;
	cell_run cr = {.s = &s, .in = in};
	double *x;

	for (int k = 0; k < op->n_in && k <= IN_P; k++)
		shapes[k] = in[k].shape;
	if (read_spec(op, cell, shapes, &s, NULL) < 0)
		return;
	cr.h = malloc((size_t)(s.B * s.H) * sizeof *cr.h);
	cr.c = malloc((size_t)(s.B * s.H) * sizeof *cr.c);
	cr.xw = malloc((size_t)(s.gates * s.H) * sizeof *cr.xw);
	cr.hr = malloc((size_t)(s.gates * s.H) * sizeof *cr.hr);
	cr.rs = malloc((size_t)s.H * sizeof *cr.rs);
	x = malloc((size_t)s.I * sizeof *x);
	if (cr.h && cr.c && cr.xw && cr.hr && cr.rs && x)
		for (int d = 0; d < s.dirs; d++)
			run_direction(&cr, d, x, out);
	else
		for (int64_t k = 0; k < fl_shape_numel(&out->shape); k++)
			out->data[k] = NAN;
	free(cr.h);
	free(cr.c);
	free(cr.xw);
	free(cr.hr);
	free(cr.rs);
	free(x);
}

void fl_eval_lstm(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_cell(op, CELL_LSTM, in, out);
}

void fl_eval_gru(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_cell(op, CELL_GRU, in, out);
}

void fl_eval_rnn(const fl_op *op, const fl_buf *in, fl_buf *out)
{
	eval_cell(op, CELL_RNN, in, out);
}

/* ------------------------------------------------------------------ */
/* Expansion                                                            */

/* The expansion of one op: the emitter, the spec, and the tensors of
 * the direction being unrolled. */
typedef struct cell_emit {
	fl_emitter *em;
	fl_graph *g;
	const fl_op *op;
	const cell_spec *s;
	fl_error *err;
	int d;
	char dir[8];		/* step-name prefix: "" or "rev." */
	int w, r;		/* [G*H, I], [G*H, H] */
	int r_h;		/* gru without linear_before_reset: R_h */
	int wb, rb;		/* [G*H] (lstm, rnn: wb is Wb + Rb, rb -1;
				 * gru: rb covers r's rows), or -1 */
	int rb_h;		/* gru without linear_before_reset: Rb_h */
	int p[3];		/* lstm peepholes i, o, f [H], or -1 */
	int clip_lo, clip_hi;	/* consts, or -1 */
	int *xt;		/* [T]: x_t [B, I], made on first use */
} cell_emit;

/* "<dir><what>" or, for a step, "<dir>t<t>.<what>", into buf. */
static const char *step_name(const cell_emit *ce, int64_t t,
			     const char *what, char *buf, size_t n)
{
	if (t < 0)
		snprintf(buf, n, "%s%s", ce->dir, what);
	else
		snprintf(buf, n, "%st%lld.%s", ce->dir, (long long)t, what);
	return buf;
}

static int oom(cell_emit *ce)
{
	fl_error_set(ce->err, "out of memory expanding \"%s\"", ce->op->name);
	return -1;
}

static int emit_ints_op(cell_emit *ce, fl_op_kind kind, const char *step,
			int x, const char *key, const int64_t *v, int n)
{
	fl_attrs a = {0, NULL};

	if (fl_attrs_set_ints(&a, key, v, n) < 0) {
		fl_attrs_free(&a);
		return oom(ce);
	}
	return fl_emit_op(ce->em, kind, step, &x, 1, &a);
}

static int emit_reshape(cell_emit *ce, const char *step, int x, int rank,
			const int64_t *dims)
{
	return emit_ints_op(ce, FL_OP_RESHAPE, step, x, "shape", dims, rank);
}

/* The box [starts, ends) of x (rank dims). */
static int emit_slice(cell_emit *ce, const char *step, int x, int rank,
		      const int64_t *starts, const int64_t *ends)
{
	fl_attrs a = {0, NULL};

	if (x < 0)
		return -1;
	if (fl_attrs_set_ints(&a, "starts", starts, rank) < 0 ||
	    fl_attrs_set_ints(&a, "ends", ends, rank) < 0) {
		fl_attrs_free(&a);
		return oom(ce);
	}
	return fl_emit_op(ce->em, FL_OP_SLICE, step, &x, 1, &a);
}

static int emit_concat(cell_emit *ce, const char *step, const int *in,
		       int n, int axis)
{
	fl_attrs a = {0, NULL};

	if (fl_attrs_set_number(&a, "axis", axis) < 0) {
		fl_attrs_free(&a);
		return oom(ce);
	}
	return fl_emit_op(ce->em, FL_OP_CONCAT, step, in, n, &a);
}

static int emit_un(cell_emit *ce, fl_op_kind kind, const char *step, int a)
{
	return fl_emit_op(ce->em, kind, step, &a, 1, NULL);
}

static int emit_bin(cell_emit *ce, fl_op_kind kind, const char *step, int a,
		    int b)
{
	int in[2] = {a, b};

	return fl_emit_op(ce->em, kind, step, in, 2, NULL);
}

/* Row block [from, to) of direction d's matrix in input k ([D, rows,
 * cols]) as a [to - from, cols] matrix. */
static int weight_rows(cell_emit *ce, int k, const char *what, int64_t from,
		       int64_t to)
{
	const fl_shape *w = &ce->g->tensors[ce->op->in[k]].shape;
	int64_t cols = w->dim[2], st[3] = {ce->d, from, 0};
	int64_t en[3] = {ce->d + 1, to, cols}, dims[2] = {to - from, cols};
	char n1[128], n2[48];
	int t = emit_slice(ce, step_name(ce, -1, what, n1, sizeof n1),
			   ce->op->in[k], 3, st, en);

	snprintf(n2, sizeof n2, "%s.2d", what);
	return emit_reshape(ce, step_name(ce, -1, n2, n1, sizeof n1), t, 2,
			    dims);
}

/* Entries [from, to) of direction d's row of input k ([D, n]). */
static int vector_part(cell_emit *ce, int k, const char *what, int64_t from,
		       int64_t to)
{
	int64_t st[2] = {ce->d, from}, en[2] = {ce->d + 1, to};
	int64_t dims[1] = {to - from};
	char n1[128], n2[48];
	int t = emit_slice(ce, step_name(ce, -1, what, n1, sizeof n1),
			   ce->op->in[k], 2, st, en);

	snprintf(n2, sizeof n2, "%s.1d", what);
	return emit_reshape(ce, step_name(ce, -1, n2, n1, sizeof n1), t, 1,
			    dims);
}

/* Direction d's [B, H] initial state from input k, or zeros. */
static int initial_state(cell_emit *ce, int k, bool given, const char *what)
{
	const cell_spec *s = ce->s;
	int64_t st[3] = {ce->d, 0, 0}, en[3] = {ce->d + 1, s->B, s->H};
	int64_t dims[2] = {s->B, s->H};
	char n1[128], n2[48];
	int t;

	if (!given)
		return emit_ints_op(ce, FL_OP_BROADCAST_TO,
				    step_name(ce, -1, what, n1, sizeof n1),
				    fl_emit_const(ce->em, "zero", 0), "shape",
				    dims, 2);
	t = emit_slice(ce, step_name(ce, -1, what, n1, sizeof n1),
		       ce->op->in[k], 3, st, en);
	snprintf(n2, sizeof n2, "%s.2d", what);
	return emit_reshape(ce, step_name(ce, -1, n2, n1, sizeof n1), t, 2,
			    dims);
}

/* Direction d's weights, biases and peepholes, sliced once. */
static void direction_params(cell_emit *ce)
{
	const cell_spec *s = ce->s;
	int64_t H = s->H, gh = s->gates * H;
	bool split_r = s->cell == CELL_GRU && !s->linear_before_reset;

	ce->w = weight_rows(ce, IN_W, "w", 0, gh);
	ce->r = weight_rows(ce, IN_R, "r", 0, split_r ? 2 * H : gh);
	ce->r_h = split_r ? weight_rows(ce, IN_R, "r_h", 2 * H, 3 * H) : -1;
	ce->wb = ce->rb = ce->rb_h = -1;
	if (s->has_b) {
		ce->wb = vector_part(ce, IN_B, "wb", 0, gh);
		ce->rb = vector_part(ce, IN_B, "rb", gh,
				     split_r ? gh + 2 * H : 2 * gh);
		if (split_r)
			ce->rb_h = vector_part(ce, IN_B, "rb_h", gh + 2 * H,
					       2 * gh);
		if (s->cell != CELL_GRU) {
			char n[128];

			ce->wb = emit_bin(ce, FL_OP_ADD,
					  step_name(ce, -1, "bias", n, sizeof n),
					  ce->wb, ce->rb);
			ce->rb = -1;
		}
	}
	/* only the peepholes some step reads: every op emitted must be
	 * read (no forget gate with input_forget, no o when only the last
	 * c of a single step is wanted) */
	bool used[3] = {true, s->out != OUT_C || s->T > 1, !s->input_forget};

	for (int k = 0; k < 3; k++) {
		static const char *const names[] = {"p_i", "p_o", "p_f"};

		ce->p[k] = s->has_p && used[k]
			? vector_part(ce, IN_P, names[k], k * H, (k + 1) * H)
			: -1;
	}
}

/* x_t as [B, I], shared by both directions. */
static int x_at(cell_emit *ce, int64_t t)
{
	const cell_spec *s = ce->s;
	int64_t st[3] = {t, 0, 0}, en[3] = {t + 1, s->B, s->I};
	int64_t dims[2] = {s->B, s->I};
	char n[128];

	if (ce->xt[t] < 0) {
		snprintf(n, sizeof n, "x.t%lld", (long long)t);
		ce->xt[t] = emit_reshape(ce, n, emit_slice(ce, n, ce->op->in[IN_X],
							   3, st, en),
					 2, dims);
	}
	return ce->xt[t];
}

/* Gate k of a [B, n*H] tensor of gates: columns [k*H, (k+1)*H). */
static int gate_cols(cell_emit *ce, int64_t t, const char *what, int x,
		     int k)
{
	int64_t H = ce->s->H, st[2] = {0, k * H}, en[2] = {ce->s->B, (k + 1) * H};
	char n[128];

	return emit_slice(ce, step_name(ce, t, what, n, sizeof n), x, 2, st,
			  en);
}

/* Activation k of the direction on v, clipped first when "clip" is
 * given and `clip` is set; `what` names the result. */
static int emit_act(cell_emit *ce, int64_t t, const char *what, int k,
		    int v, bool clip)
{
	static const fl_op_kind kinds[] = {FL_OP_SIGMOID, FL_OP_TANH,
					   FL_OP_RELU};
	const cell_spec *s = ce->s;
	char n[128], c[48];

	if (s->has_clip && clip) {
		snprintf(c, sizeof c, "%s.clip", what);
		v = emit_bin(ce, FL_OP_MAX, step_name(ce, t, c, n, sizeof n), v,
			     ce->clip_lo);
		v = emit_bin(ce, FL_OP_MIN, step_name(ce, t, c, n, sizeof n), v,
			     ce->clip_hi);
	}
	return emit_un(ce, kinds[s->acts[ce->d * s->n_acts + k]],
		       step_name(ce, t, what, n, sizeof n), v);
}

/* A gate: activation k on the clipped pre-activation v. */
static int emit_gate(cell_emit *ce, int64_t t, const char *what, int k,
		     int v)
{
	return emit_act(ce, t, what, k, v, true);
}

/* x_t W^T (+ bias) and h R^T (+ bias) of step t. */
static void step_products(cell_emit *ce, int64_t t, int h, int *xw, int *hr)
{
	char n[128];

	*xw = fl_emit_matmul(ce->em, step_name(ce, t, "xw", n, sizeof n),
			     x_at(ce, t), ce->w, true);
	*hr = fl_emit_matmul(ce->em, step_name(ce, t, "hr", n, sizeof n), h,
			     ce->r, true);
	if (ce->wb >= 0)
		*xw = emit_bin(ce, FL_OP_ADD, step_name(ce, t, "xw.b", n, sizeof n),
			       *xw, ce->wb);
	if (ce->rb >= 0)
		*hr = emit_bin(ce, FL_OP_ADD, step_name(ce, t, "hr.b", n, sizeof n),
			       *hr, ce->rb);
}

/* pre + p * c when the peephole p is given. */
static int peephole(cell_emit *ce, int64_t t, const char *what, int pre,
		    int p, int c)
{
	char n[128], m[48];

	if (p < 0)
		return pre;
	snprintf(m, sizeof m, "%s.peep", what);
	return emit_bin(ce, FL_OP_ADD, step_name(ce, t, m, n, sizeof n), pre,
			emit_bin(ce, FL_OP_MUL, step_name(ce, t, m, n, sizeof n),
				 p, c));
}

/* The cell half of an lstm step: *c becomes the new cell state; returns
 * the step's gate pre-activations [B, 4H] for lstm_hidden. */
static int lstm_cell(cell_emit *ce, int64_t t, int h, int *c)
{
	int xw, hr, gates, i, f, g;
	char n[128];

	step_products(ce, t, h, &xw, &hr);
	gates = emit_bin(ce, FL_OP_ADD, step_name(ce, t, "gates", n, sizeof n),
			 xw, hr);
	i = emit_gate(ce, t, "i", 0,
		      peephole(ce, t, "i", gate_cols(ce, t, "i.pre", gates, 0),
			       ce->p[0], *c));
	if (ce->s->input_forget)
		f = emit_bin(ce, FL_OP_SUB, step_name(ce, t, "f", n, sizeof n),
			     fl_emit_const(ce->em, "one", 1), i);
	else
		f = emit_gate(ce, t, "f", 0,
			      peephole(ce, t, "f",
				       gate_cols(ce, t, "f.pre", gates, 2),
				       ce->p[2], *c));
	g = emit_gate(ce, t, "g", 1, gate_cols(ce, t, "g.pre", gates, 3));
	*c = emit_bin(ce, FL_OP_ADD, step_name(ce, t, "c", n, sizeof n),
		      emit_bin(ce, FL_OP_MUL, step_name(ce, t, "fc", n, sizeof n),
			       f, *c),
		      emit_bin(ce, FL_OP_MUL, step_name(ce, t, "ig", n, sizeof n),
			       i, g));
	return gates;
}

/* The hidden half: h = o * h(c), o from the gates and the new c. */
static int lstm_hidden(cell_emit *ce, int64_t t, int gates, int c)
{
	char n[128];
	int o = emit_gate(ce, t, "o", 0,
			  peephole(ce, t, "o",
				   gate_cols(ce, t, "o.pre", gates, 1),
				   ce->p[1], c));

	/* "clip" bounds the gates' inputs, not the cell state */
	return emit_bin(ce, FL_OP_MUL, step_name(ce, t, "h", n, sizeof n), o,
			emit_act(ce, t, "h.act", 2, c, false));
}

/* The gru candidate's pre-activation from the reset gate rg. */
static int gru_candidate(cell_emit *ce, int64_t t, int xw, int hr, int rg,
			 int h)
{
	char n[128];
	int lin;

	if (ce->s->linear_before_reset) {
		lin = emit_bin(ce, FL_OP_MUL, step_name(ce, t, "rh", n, sizeof n),
			       rg, gate_cols(ce, t, "hr.h", hr, 2));
	} else {
		lin = fl_emit_matmul(ce->em, step_name(ce, t, "rh", n, sizeof n),
				     emit_bin(ce, FL_OP_MUL,
					      step_name(ce, t, "rs", n, sizeof n),
					      rg, h),
				     ce->r_h, true);
		if (ce->rb_h >= 0)
			lin = emit_bin(ce, FL_OP_ADD,
				       step_name(ce, t, "rh.b", n, sizeof n), lin,
				       ce->rb_h);
	}
	return emit_bin(ce, FL_OP_ADD, step_name(ce, t, "n.pre", n, sizeof n),
			gate_cols(ce, t, "xw.h", xw, 2), lin);
}

/* One gru step: h = (1 - z) * n + z * h = n + z * (h - n). */
static int gru_step(cell_emit *ce, int64_t t, int h)
{
	int xw, hr, z, rg, cand;
	char n[128];

	step_products(ce, t, h, &xw, &hr);
	z = emit_gate(ce, t, "z", 0,
		      emit_bin(ce, FL_OP_ADD, step_name(ce, t, "z.pre", n, sizeof n),
			       gate_cols(ce, t, "xw.z", xw, 0),
			       gate_cols(ce, t, "hr.z", hr, 0)));
	rg = emit_gate(ce, t, "r", 0,
		       emit_bin(ce, FL_OP_ADD,
				step_name(ce, t, "r.pre", n, sizeof n),
				gate_cols(ce, t, "xw.r", xw, 1),
				gate_cols(ce, t, "hr.r", hr, 1)));
	cand = emit_gate(ce, t, "n", 1, gru_candidate(ce, t, xw, hr, rg, h));
	return emit_bin(ce, FL_OP_ADD, step_name(ce, t, "h", n, sizeof n), cand,
			emit_bin(ce, FL_OP_MUL, step_name(ce, t, "zd", n, sizeof n),
				 z,
				 emit_bin(ce, FL_OP_SUB,
					  step_name(ce, t, "d", n, sizeof n), h,
					  cand)));
}

static int rnn_step(cell_emit *ce, int64_t t, int h)
{
	int xw, hr;
	char n[128];

	step_products(ce, t, h, &xw, &hr);
	return emit_gate(ce, t, "h", 0,
			 emit_bin(ce, FL_OP_ADD,
				  step_name(ce, t, "pre", n, sizeof n), xw, hr));
}

/* One step of the cell: the new h (-1 for an lstm's last step when only
 * c is wanted: every op emitted must be read, so o and h are not). */
static int cell_step(cell_emit *ce, int64_t t, bool last, int h, int *c)
{
	const cell_spec *s = ce->s;
	int gates;

	if (s->cell == CELL_GRU)
		return gru_step(ce, t, h);
	if (s->cell == CELL_RNN)
		return rnn_step(ce, t, h);
	gates = lstm_cell(ce, t, h, c);
	return last && s->out == OUT_C ? -1 : lstm_hidden(ce, t, gates, *c);
}

/* The tensor of direction d for the op's output: y as [T, 1, B, H]
 * (the h_t in time order), or the last h or c as [1, B, H]. */
static int unroll_direction(cell_emit *ce, int d, int *hs)
{
	const cell_spec *s = ce->s;
	bool back = s->reverse || d == 1;
	int64_t y_dims[4] = {1, 1, s->B, s->H}, last[3] = {1, s->B, s->H};
	int h, c;
	char n[128];

	ce->d = d;
	snprintf(ce->dir, sizeof ce->dir, "%s", s->dirs == 2 && d ? "rev." : "");
	direction_params(ce);
	h = initial_state(ce, IN_H0, s->has_h0, "h0");
	c = s->cell == CELL_LSTM ? initial_state(ce, IN_C0, s->has_c0, "c0")
				 : -1;
	for (int64_t k = 0; k < s->T; k++) {
		int64_t t = back ? s->T - 1 - k : k;

		h = cell_step(ce, t, k + 1 == s->T, h, &c);
		if (s->out == OUT_Y)
			hs[t] = emit_reshape(ce, step_name(ce, t, "y", n, sizeof n),
					     h, 4, y_dims);
	}
	if (s->out == OUT_Y)
		return emit_concat(ce, step_name(ce, -1, "y", n, sizeof n), hs,
				   (int)s->T, 0);
	return emit_reshape(ce, step_name(ce, -1, s->out == OUT_H ? "h_last"
								  : "c_last",
					  n, sizeof n),
			    s->out == OUT_H ? h : c, 3, last);
}

/* The clip bounds, the per-direction unrolling and the join of the
 * directions (y along axis 1, h and c along axis 0). */
static int expand_cells(cell_emit *ce, int *hs)
{
	const cell_spec *s = ce->s;
	int parts[2];

	ce->clip_lo = s->has_clip ? fl_emit_const(ce->em, "clip_lo", -s->clip)
				  : -1;
	ce->clip_hi = s->has_clip ? fl_emit_const(ce->em, "clip_hi", s->clip)
				  : -1;
	for (int d = 0; d < s->dirs; d++)
		parts[d] = unroll_direction(ce, d, hs);
	if (s->dirs == 1)
		return parts[0];
	return emit_concat(ce, s->out == OUT_Y ? "y" : "last", parts, 2,
			   s->out == OUT_Y ? 1 : 0);
}

static int expand_cell(fl_graph *dst, const fl_op *op, cell_kind cell,
		       fl_error *err)
{
	fl_shape in[IN_P + 1];
	cell_spec s;
	cell_emit ce = {.g = dst, .op = op, .s = &s, .err = err};
	fl_emitter *em = fl_emit_begin(dst, op, err);
	int *hs, t = -1;

	if (!em)
		return -1;
	for (int k = 0; k < op->n_in && k <= IN_P; k++)
		in[k] = dst->tensors[op->in[k]].shape;
	read_spec(op, cell, in, &s, NULL);	/* begin checked it */
	ce.em = em;
	ce.xt = malloc((size_t)s.T * sizeof *ce.xt);
	hs = malloc((size_t)s.T * sizeof *hs);
	if (ce.xt && hs) {
		for (int64_t k = 0; k < s.T; k++)
			ce.xt[k] = -1;
		t = expand_cells(&ce, hs);
	} else {
		fl_error_set(err, "out of memory expanding \"%s\"", op->name);
	}
	free(ce.xt);
	free(hs);
	if (fl_emit_finish(em, t) < 0) {
		if (!err->msg[0])
			fl_error_set(err, "out of memory expanding \"%s\"",
				     op->name);
		return -1;
	}
	return 0;
}

int fl_expand_lstm(fl_graph *dst, const fl_op *op, fl_error *err)
{
	return expand_cell(dst, op, CELL_LSTM, err);
}

int fl_expand_gru(fl_graph *dst, const fl_op *op, fl_error *err)
{
	return expand_cell(dst, op, CELL_GRU, err);
}

int fl_expand_rnn(fl_graph *dst, const fl_op *op, fl_error *err)
{
	return expand_cell(dst, op, CELL_RNN, err);
}
