/* ONNX import of the recurrent operators LSTM, GRU and RNN as fuselab's
 * lstm, gru and rnn compound ops (ops_recurrent.c).
 *
 * Contract (called through the mapping table of onnx_ops.c):
 *   - inputs: X, W, R and the optional B, initial_h, initial_c and P
 *     become the op's inputs in ONNX's order; a missing one before a
 *     present one is a zero constant of its shape.  sequence_lens is
 *     dropped when it is known at import and every entry equals the
 *     sequence length (it changes nothing then).
 *   - layout 1 (batch first) is transposed into the ops' time-first
 *     layout on the way in (X, initial_h, initial_c) and back on the way
 *     out (Y, Y_h, Y_c).
 *   - outputs: the graph keeps one output per op, so Y is an op with
 *     "output" "y"; Y_h is sliced out of Y when Y is computed (the last
 *     step of the forward direction, time 0 of the reverse one), else an
 *     op of its own with "output" "h"; LSTM's Y_c is an op with "output"
 *     "c".  Each op recomputes the time loop it needs; an unused output
 *     costs nothing.
 *   - what the ops cannot compute -- an activation other than Sigmoid,
 *     Tanh or Relu, a sequence_lens that is not known or not all equal
 *     to the sequence length -- makes the node's outputs opaque custom
 *     ops (the model loads, partitions and shows but does not run) whose
 *     "reason" attribute says why.  Malformed nodes (a bad direction or
 *     layout, shapes that disagree) are errors. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnx_import_impl.h"

/* ONNX's input positions. */
enum { X, W, R, B, SEQ_LENS, INIT_H, INIT_C, P };

typedef struct node_plan {
	fl_op_kind kind;
	int gates;		/* 4, 3, 1 */
	int layout;
	int64_t T, Bt, I, H, D;	/* Bt: batch */
	int in[7];		/* the op's inputs, in fuselab order */
	int n_in;
	fl_attrs attrs;		/* common to the node's ops */
	char why[200];		/* non-empty: opaque, for this reason */
} node_plan;

static const fl_shape *shape_of(const fl_onnx_ctx *c, int t)
{
	return &c->g->tensors[t].shape;
}

static bool has_output(const fl_onnx_ctx *c, int k)
{
	return (size_t)k < c->node->n_output && c->node->output[k] &&
	       *c->node->output[k];
}

static int transpose(fl_onnx_ctx *c, int x, const int64_t *perm, int rank,
		     int out, fl_error *err)
{
	fl_attrs a = {0};
	int t;

	if (x < 0)
		return -1;
	if (fl_attrs_set_ints(&a, "perm", perm, rank) < 0) {
		fl_attrs_free(&a);
		return fl_onnx_oom(err);
	}
	t = fl_onnx_emit(c, FL_OP_TRANSPOSE, &x, 1, &a, out, err);
	fl_attrs_free(&a);
	return t;
}

/* A zero constant of shape s (one value splatted over it). */
static int zeros(fl_onnx_ctx *c, const fl_shape *s, fl_error *err)
{
	int t = fl_onnx_scalar(c, 0, err);

	if (t >= 0)
		c->g->tensors[t].shape = *s;
	return t;
}

/* ---- attributes ---- */

/* "activations" as the op's comma-separated lower-case list; sets
 * p->why for one the op does not compute. */
static int read_activations(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	const Onnx__AttributeProto *a = fl_onnx_attr(c, "activations");
	char list[256] = "";
	size_t len = 0;

	if (!a || !a->n_strings)
		return 0;
	for (size_t k = 0; k < a->n_strings; k++) {
		const ProtobufCBinaryData *s = &a->strings[k];
		char name[32];
		size_t n = s->len < sizeof name - 1 ? s->len : sizeof name - 1;

		memcpy(name, s->data, n);
		name[n] = '\0';
		if (strcasecmp(name, "Sigmoid") && strcasecmp(name, "Tanh") &&
		    strcasecmp(name, "Relu")) {
			snprintf(p->why, sizeof p->why, "activation \"%s\" is "
				 "not one fuselab's %s computes (Sigmoid, Tanh, "
				 "Relu)", name, fl_op_kind_name(p->kind));
			return 0;
		}
		for (size_t i = 0; i < n; i++)
			name[i] = (char)tolower((unsigned char)name[i]);
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%s",
					k ? "," : "", name);
		if (len >= sizeof list) {
			fl_error_set(err, "attribute activations: too many");
			return -1;
		}
	}
	return fl_attrs_set_string(&p->attrs, "activations", list) < 0
		? fl_onnx_oom(err) : 0;
}

static int read_direction(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	char buf[32];
	const char *dir = fl_onnx_attr_string(c, "direction", "forward", buf,
					      sizeof buf);

	if (strcmp(dir, "forward") && strcmp(dir, "reverse") &&
	    strcmp(dir, "bidirectional")) {
		fl_error_set(err, "attribute direction: \"%s\" is not forward, "
			     "reverse or bidirectional", dir);
		return -1;
	}
	p->D = strcmp(dir, "bidirectional") ? 1 : 2;
	return fl_attrs_set_string(&p->attrs, "direction", dir) < 0 ? fl_onnx_oom(err)
								     : 0;
}

/* clip, hidden_size, input_forget (LSTM), linear_before_reset (GRU),
 * layout. */
static int read_numbers(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	int rc = 0;

	p->layout = (int)fl_onnx_attr_int(c, "layout", 0);
	if (p->layout != 0 && p->layout != 1) {
		fl_error_set(err, "attribute layout: %d is not 0 or 1",
			     p->layout);
		return -1;
	}
	if (fl_onnx_attr(c, "clip"))
		rc |= fl_attrs_set_number(&p->attrs, "clip",
					  fl_onnx_attr_float(c, "clip", 0));
	if (fl_onnx_attr(c, "hidden_size"))
		rc |= fl_attrs_set_number(&p->attrs, "hidden_size",
			(double)fl_onnx_attr_int(c, "hidden_size", 0));
	if (p->kind == FL_OP_LSTM && fl_onnx_attr_int(c, "input_forget", 0))
		rc |= fl_attrs_set_bool(&p->attrs, "input_forget", true);
	if (p->kind == FL_OP_GRU &&
	    fl_onnx_attr_int(c, "linear_before_reset", 0))
		rc |= fl_attrs_set_bool(&p->attrs, "linear_before_reset", true);
	return rc < 0 ? fl_onnx_oom(err) : 0;
}

/* ---- inputs ---- */

/* sequence_lens changes nothing when known and all equal to T; else
 * the node is opaque. */
static int check_seq_lens(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	const fl_onnx_values *v;

	if (!fl_onnx_has_input(c, SEQ_LENS))
		return 0;
	if (!fl_onnx_input(c, SEQ_LENS, err))
		return -1;
	v = fl_onnx_input_known(c, SEQ_LENS);
	if (!v || !v->i) {
		snprintf(p->why, sizeof p->why, "sequence_lens is not known at "
			 "import (fuselab unrolls a fixed number of steps)");
		return 0;
	}
	for (int64_t k = 0; k < v->n; k++)
		if (v->i[k] != p->T) {
			snprintf(p->why, sizeof p->why, "sequence_lens[%lld] is "
				 "%lld, not the sequence length %lld (fuselab "
				 "unrolls every step of every sequence)",
				 (long long)k, (long long)v->i[k],
				 (long long)p->T);
			return 0;
		}
	return 0;
}

/* X in time-first layout, and T, B, I, H, D. */
static int read_x(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	static const int64_t swap01[3] = {1, 0, 2};
	int x = fl_onnx_data(c, X, err), r = fl_onnx_data(c, R, err);
	const fl_shape *xs;

	if (x < 0 || r < 0)
		return -1;
	if (shape_of(c, x)->rank != 3 || shape_of(c, r)->rank != 3) {
		fl_error_set(err, "X and R must have rank 3");
		return -1;
	}
	if (p->layout == 1)
		x = transpose(c, x, swap01, 3, -1, err);
	if (x < 0)
		return -1;
	xs = shape_of(c, x);
	p->T = xs->dim[0];
	p->Bt = xs->dim[1];
	p->I = xs->dim[2];
	p->H = shape_of(c, r)->dim[2];
	p->in[0] = x;
	p->in[2] = r;
	return 0;
}

/* Optional input k (ONNX position) as op input slot, or -1 when absent;
 * initial states are transposed from layout 1. */
static int optional_input(fl_onnx_ctx *c, node_plan *p, int k, fl_error *err)
{
	static const int64_t swap01[3] = {1, 0, 2};
	int t;

	if (!fl_onnx_has_input(c, k))
		return -2;
	t = fl_onnx_data(c, k, err);
	if (t >= 0 && p->layout == 1 && (k == INIT_H || k == INIT_C))
		t = transpose(c, t, swap01, 3, -1, err);
	return t;
}

/* The op's inputs: X, W, R, then B, initial_h, initial_c, P up to the
 * last present one, zeros in the gaps. */
static int read_inputs(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	static const int onnx_pos[] = {B, INIT_H, INIT_C, P};
	int n_opt = p->kind == FL_OP_LSTM ? 4 : 2, got[4];
	fl_shape want[4];

	if (read_x(c, p, err) < 0 || (p->in[1] = fl_onnx_data(c, W, err)) < 0)
		return -1;
	want[0] = fl_shape_make(2, (const int64_t[]){p->D,
						     2 * p->gates * p->H});
	want[1] = want[2] = fl_shape_make(3, (const int64_t[]){p->D, p->Bt,
							       p->H});
	want[3] = fl_shape_make(2, (const int64_t[]){p->D, 3 * p->H});
	p->n_in = 3;
	for (int k = 0; k < n_opt; k++) {
		got[k] = optional_input(c, p, onnx_pos[k], err);
		if (got[k] == -1)
			return -1;
		if (got[k] >= 0)
			p->n_in = 4 + k;
	}
	for (int k = 0; k + 3 < p->n_in; k++) {
		p->in[3 + k] = got[k] >= 0 ? got[k] : zeros(c, &want[k], err);
		if (p->in[3 + k] < 0)
			return -1;
	}
	return 0;
}

/* ---- outputs ---- */

/* One op of the node with "output" `which`, writing ONNX output `out`
 * (-1: a new tensor). */
static int emit_cell(fl_onnx_ctx *c, node_plan *p, const char *which,
		     int out, fl_error *err)
{
	fl_attrs a = {0};
	int t = -1;

	if (fl_attrs_copy(&a, &p->attrs) < 0 ||
	    fl_attrs_set_string(&a, "output", which) < 0)
		fl_onnx_oom(err);
	else
		t = fl_onnx_emit(c, p->kind, p->in, p->n_in, &a, out, err);
	fl_attrs_free(&a);
	return t;
}

/* Direction d's last hidden state out of y [T, D, B, H], as [1, 1, B, H]:
 * the last step going forward, step 0 going back. */
static int last_of_y(fl_onnx_ctx *c, node_plan *p, int y, int d, bool back,
		     fl_error *err)
{
	int64_t t = back ? 0 : p->T - 1;
	int64_t st[4] = {t, d, 0, 0}, en[4] = {t + 1, d + 1, p->Bt, p->H};
	fl_attrs a = {0};
	int s = -1;

	if (fl_attrs_set_ints(&a, "starts", st, 4) < 0 ||
	    fl_attrs_set_ints(&a, "ends", en, 4) < 0)
		fl_onnx_oom(err);
	else
		s = fl_onnx_emit(c, FL_OP_SLICE, &y, 1, &a, -1, err);
	fl_attrs_free(&a);
	return s;
}

/* Y_h [D, B, H] sliced out of y. */
static int y_h_from_y(fl_onnx_ctx *c, node_plan *p, int y, int out,
		      fl_error *err)
{
	char buf[32];
	bool reverse = !strcmp(fl_onnx_attr_string(c, "direction", "forward",
						   buf, sizeof buf),
			       "reverse");
	int parts[2], h;
	fl_shape s = fl_shape_make(3, (const int64_t[]){p->D, p->Bt, p->H});

	for (int d = 0; d < p->D; d++)
		if ((parts[d] = last_of_y(c, p, y, d, reverse || d == 1,
					  err)) < 0)
			return -1;
	h = parts[0];
	if (p->D == 2) {
		fl_attrs a = {0};

		if (fl_attrs_set_number(&a, "axis", 1) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		h = fl_onnx_emit(c, FL_OP_CONCAT, parts, 2, &a, -1, err);
		fl_attrs_free(&a);
	}
	return h < 0 ? -1 : fl_onnx_reshape(c, h, &s, out, err);
}

/* Writes ONNX output k of a layout 1 node from the time-first tensor
 * t. */
static int finish_output(fl_onnx_ctx *c, int t, int k, fl_error *err)
{
	static const int64_t y_perm[4] = {2, 0, 1, 3}, s_perm[3] = {1, 0, 2};

	return transpose(c, t, k == 0 ? y_perm : s_perm, k == 0 ? 4 : 3, k,
			 err);
}

/* In layout 0 the ops write the ONNX outputs themselves; in layout 1
 * they write temps that finish_output transposes. */
static int emit_outputs(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	int direct = p->layout == 0, y = -1, t;

	if (has_output(c, 0)) {
		y = emit_cell(c, p, "y", direct ? 0 : -1, err);
		if (y < 0 || (!direct && finish_output(c, y, 0, err) < 0))
			return -1;
	}
	if (has_output(c, 1)) {
		if (y >= 0)
			t = y_h_from_y(c, p, y, direct ? 1 : -1, err);
		else
			t = emit_cell(c, p, "h", direct ? 1 : -1, err);
		if (t < 0 || (!direct && finish_output(c, t, 1, err) < 0))
			return -1;
	}
	if (p->kind == FL_OP_LSTM && has_output(c, 2)) {
		t = emit_cell(c, p, "c", direct ? 2 : -1, err);
		if (t < 0 || (!direct && finish_output(c, t, 2, err) < 0))
			return -1;
	}
	return 0;
}

/* ---- opaque fallback ---- */

/* Shape of ONNX output k in the model's layout. */
static fl_shape output_shape(const node_plan *p, int k)
{
	if (k == 0)
		return p->layout == 0
			? fl_shape_make(4, (const int64_t[]){p->T, p->D, p->Bt,
							     p->H})
			: fl_shape_make(4, (const int64_t[]){p->Bt, p->T, p->D,
							     p->H});
	return p->layout == 0
		? fl_shape_make(3, (const int64_t[]){p->D, p->Bt, p->H})
		: fl_shape_make(3, (const int64_t[]){p->Bt, p->D, p->H});
}

/* Every output the node names as an opaque custom op reading the
 * node's data inputs, with the reason in "reason". */
static int emit_opaque(fl_onnx_ctx *c, node_plan *p, fl_error *err)
{
	int n_out = p->kind == FL_OP_LSTM ? 3 : 2;

	for (int k = 0; k < n_out; k++) {
		fl_shape s = output_shape(p, k);
		fl_attrs a = {0};
		int t;

		if (!has_output(c, k))
			continue;
		if (fl_attrs_set_string(&a, "fn", "opaque") < 0 ||
		    fl_attrs_set_ints(&a, "shape", s.dim, s.rank) < 0 ||
		    fl_attrs_set_string(&a, "reason", p->why) < 0) {
			fl_attrs_free(&a);
			return fl_onnx_oom(err);
		}
		t = fl_onnx_emit(c, FL_OP_CUSTOM, p->in, p->n_in, &a, k, err);
		fl_attrs_free(&a);
		if (t < 0)
			return -1;
	}
	return 0;
}

static int map_cell(fl_onnx_ctx *c, fl_op_kind kind, int gates,
		    fl_error *err)
{
	node_plan p = {.kind = kind, .gates = gates};
	int rc = -1;

	if (read_direction(c, &p, err) < 0 || read_numbers(c, &p, err) < 0 ||
	    read_activations(c, &p, err) < 0 || read_inputs(c, &p, err) < 0 ||
	    check_seq_lens(c, &p, err) < 0)
		goto out;
	rc = p.why[0] ? emit_opaque(c, &p, err) : emit_outputs(c, &p, err);
out:
	fl_attrs_free(&p.attrs);
	return rc;
}

int fl_onnx_map_lstm(fl_onnx_ctx *c, fl_error *err)
{
	return map_cell(c, FL_OP_LSTM, 4, err);
}

int fl_onnx_map_gru(fl_onnx_ctx *c, fl_error *err)
{
	return map_cell(c, FL_OP_GRU, 3, err);
}

int fl_onnx_map_rnn(fl_onnx_ctx *c, fl_error *err)
{
	return map_cell(c, FL_OP_RNN, 1, err);
}
