/* The C printer of the C + OpenMP backend (DESIGN 1.6) and its entry
 * points (codegen.h): one C function per kernel, printed from the AST that
 * annotate.c built, inside a translation unit with a fixed prologue and a
 * table of the kernels in execution order.
 *
 * Needs, per polyhedral kernel: the attempts driven here -- prepare.c
 * decides placements, annotate.c builds the AST, and when a tensor could
 * not stay tile-local the attempt is redone with it in global memory --
 * until one settles; only that one is printed.  Gives: the function
 * "void <name>(float *const *bufs)" where bufs[t] is graph tensor t
 * (row-major, in its element type: docs/types.md), read through "T<t>"
 * pointers of that C type with their row shapes;
 * the comment above it lists its ops with their provenance and every
 * tensor kept off main memory, or kept in it against layer 1's placement,
 * with the reason.
 *
 * Statements print "element = rhs;" where rhs comes from the op table's C
 * templates (fl_op_c in ops.h) with each "$k" replaced by the access of
 * the statement's read of input k.  Some statements are written whole:
 * gather, gather_elements and a scatter_elements update, whose data
 * index is itself data (resolved as the reference does: floored, for
 * the latter two counted from the end when negative, clamped), and
 * reshape of a global tensor, read through the flat
 * buffer at the output's linear index rather than through isl's division
 * and modulo per dimension.  For loops print with what annotate.c decided
 * for them: "#pragma omp parallel for" (outermost parallel loop), "omp
 * simd", or scalar accumulators around the loop; an innermost loop that
 * split.c planned to split prints as its parts, one loop per link of a
 * chain of expensive maths calls.  Tile-local tensors
 * become local arrays sized by their footprint box and indexed by access
 * - offset(tile(instance)), declared in the body of the loop that is
 * their scope (or at function scope when the tile loops all vanished), so
 * each tile -- and so each thread of a parallel tile loop -- has its own
 * copy while a parallel point loop shares the one its tile filled; arrays
 * over 64 KiB do not live on an OpenMP worker's stack but in a scratch
 * buffer allocated once per kernel call (checked; the program aborts with
 * a message when it cannot be had): per thread, in a "#pragma omp
 * parallel" team around the work-shared tile loop, or at function scope
 * outside any parallel loop -- never per tile.  A tensor layer 1 placed
 * in registers that prepare.c could make a scalar is "float T<t>_r;" in
 * the body of its loop.  Custom ops are opaque to isl and get a
 * hand-written loop nest in a kernel of their own.
 *
 * Identifiers in the output are all generated (T<tensor>, fl_k<id>, c<n>);
 * names from the input file appear only in comments, sanitised. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <isl/ast.h>
#include <isl/id.h>
#include <isl/printer.h>

#include "codegen_impl.h"
#include "machine.h"
#include "strbuf.h"

/* ---- a growable string ------------------------------------------- */

/* ---- comments ---------------------------------------- */

/* A '/' after '*' or a '*' after '/' would end or open a comment; a '?'
 * after '?' could start a trigraph; a backslash could splice lines. */
void fl_sanitize_comment(const char *s, char *buf, size_t n)
{
	size_t j = 0;

	if (!n)
		return;
	for (; s && *s && j + 1 < n; s++) {
		unsigned char c = (unsigned char)*s;
		char prev = j ? buf[j - 1] : '\0';

		if (c < 0x20 || c >= 0x7f || c == '\\' ||
		    (c == '/' && prev == '*') || (c == '*' && prev == '/') ||
		    (c == '?' && prev == '?'))
			c = '_';
		buf[j++] = (char)c;
	}
	buf[j] = '\0';
}

/* ---- printing statements -------------------------------------------- */

/* Whether e (keep) is the integer 2^k, k >= 1. */
static bool power_of_two(__isl_keep isl_ast_expr *e)
{
	isl_val *v = isl_ast_expr_get_type(e) == isl_ast_expr_int ?
		     isl_ast_expr_get_val(e) : NULL;
	long w = v ? isl_val_get_num_si(v) : 0;

	isl_val_free(v);
	return w >= 2 && (w & (w - 1)) == 0;
}

/* The index of a rotated array's row (prepare.c: row % rotate, rotate a
 * power of two) as C, each remainder of a non-negative value by 2^k
 * (isl's pdiv_r) printed as "& (2^k - 1)": gcc 12 miscompiled "c3 % 2"
 * inside an "omp simd" loop of BERT's heads softmax (wrong rows under
 * -fopenmp, right without), and the mask is what it computes anyway.
 * Sums, differences, negations and products are printed here, anything
 * else by isl, in parentheses. */
static __isl_give isl_printer *print_masked_index(__isl_take isl_printer *p,
						  __isl_keep isl_ast_expr *e)
{
	static const struct {
		enum isl_ast_expr_op_type type;
		const char *op;
	} binary[] = {
		{isl_ast_expr_op_add, " + "},
		{isl_ast_expr_op_sub, " - "},
		{isl_ast_expr_op_mul, " * "},
	};
	enum isl_ast_expr_op_type type;
	isl_ast_expr *a, *b;
	char buf[32];

	if (isl_ast_expr_get_type(e) != isl_ast_expr_op)
		return isl_printer_print_ast_expr(p, e);
	type = isl_ast_expr_op_get_type(e);
	a = isl_ast_expr_op_get_arg(e, 0);
	b = isl_ast_expr_op_get_n_arg(e) > 1 ? isl_ast_expr_op_get_arg(e, 1)
					       : NULL;
	p = isl_printer_print_str(p, "(");
	if (type == isl_ast_expr_op_pdiv_r && b && power_of_two(b)) {
		isl_val *w = isl_ast_expr_get_val(b);

		p = print_masked_index(p, a);
		snprintf(buf, sizeof buf, " & %ld", isl_val_get_num_si(w) - 1);
		p = isl_printer_print_str(p, buf);
		isl_val_free(w);
	} else if (type == isl_ast_expr_op_minus && !b) {
		p = isl_printer_print_str(p, "-");
		p = print_masked_index(p, a);
	} else {
		const char *op = NULL;

		for (size_t i = 0; b && i < sizeof binary / sizeof *binary; i++)
			if (binary[i].type == type)
				op = binary[i].op;
		if (op) {
			p = print_masked_index(p, a);
			p = isl_printer_print_str(p, op);
			p = print_masked_index(p, b);
		} else {
			p = isl_printer_print_ast_expr(p, e);
		}
	}
	isl_ast_expr_free(a);
	isl_ast_expr_free(b);
	return isl_printer_print_str(p, ")");
}

static __isl_give isl_printer *print_access(__isl_take isl_printer *p,
					    const fl_cg_kernel *cg,
					    __isl_keep isl_ast_expr *acc, int t)
{
	isl_size n = isl_ast_expr_op_get_n_arg(acc);
	char name[32];

	if (cg->arr[t].reg && cg->strip && cg->strip->carry[t]) {
		/* carried between the parts of a split loop (split.c) */
		snprintf(name, sizeof name, "T%d_s[", t);
		p = isl_printer_print_str(p, name);
		p = isl_printer_print_str(p, cg->strip_index);
		return isl_printer_print_str(p, "]");
	}
	if (t == cg->block_t)	/* the element of a register block */
		return isl_printer_print_str(p, "fl_r[fl_m * FL_NR + fl_v]");
	if (t == cg->stream_t) {	/* staged for a streamed store */
		snprintf(name, sizeof name, "T%d_nt[", t);
		p = isl_printer_print_str(p, name);
		p = isl_printer_print_str(p, cg->stream_index);
		return isl_printer_print_str(p, "]");
	}
	if (cg->arr[t].reg) {	/* a scalar: one element per point */
		snprintf(name, sizeof name, "T%d_r", t);
		return isl_printer_print_str(p, name);
	}
	snprintf(name, sizeof name, cg->arr[t].local ? "T%d_loc" : "T%d", t);
	p = isl_printer_print_str(p, name);
	if (n <= 1)
		return isl_printer_print_str(p, "[0]");
	for (int i = 1; i < n; i++) {
		isl_ast_expr *e = isl_ast_expr_op_get_arg(acc, i);

		p = isl_printer_print_str(p, "[");
		if (cg->arr[t].local && cg->arr[t].rotate > 0 &&
		    i - 1 == cg->arr[t].rotate_dim)
			p = print_masked_index(p, e);
		else
			p = isl_printer_print_ast_expr(p, e);
		p = isl_printer_print_str(p, "]");
		isl_ast_expr_free(e);
	}
	return p;
}

/* The access of the statement's read of op input `input` (-1: its own
 * output), and that tensor. */
__isl_give isl_printer *fl_cg_print_access(__isl_take isl_printer *p,
					   const fl_cg_kernel *cg,
					   __isl_keep isl_ast_expr *acc, int t)
{
	return print_access(p, cg, acc, t);
}

static isl_ast_expr *read_of(const fl_cg_stmt *st, int input, int *t)
{
	for (int r = 0; r < st->ps->n_reads; r++)
		if (st->ps->reads[r].input == input && st->reads[r]) {
			*t = fl_cg_read_tensor(st->op, &st->ps->reads[r]);
			return st->reads[r];
		}
	return NULL;
}

/* Prints template `tpl`, where "$<k>" stands for the read of op input k
 * and "$o" for the read of the op's own output -- or for `self` when
 * given (a scalar accumulator holding that element). */
static __isl_give isl_printer *print_template_as(__isl_take isl_printer *p,
						 fl_cg_kernel *cg,
						 const fl_cg_stmt *st,
						 const char *tpl,
						 const char *self)
{
	char text[256];
	size_t n = 0;

	for (const char *c = tpl; *c; c++) {
		int input, t = -1;
		char *end;
		isl_ast_expr *e;

		if (*c != '$') {
			if (n + 1 >= sizeof text) {
				text[n] = '\0';
				p = isl_printer_print_str(p, text);
				n = 0;
			}
			text[n++] = *c;
			continue;
		}
		text[n] = '\0';
		p = isl_printer_print_str(p, text);
		n = 0;
		if (c[1] == 'o') {
			input = -1;
			end = (char *)c + 2;
		} else {
			input = (int)strtol(c + 1, &end, 10);
		}
		c = end - 1;
		if (input < 0 && self) {
			p = isl_printer_print_str(p, self);
			continue;
		}
		e = read_of(st, input, &t);
		if (!e) {
			fl_cg_fail(cg, "statement body reads an input it has "
				   "no access for");
			continue;
		}
		p = print_access(p, cg, e, t);
	}
	text[n] = '\0';
	return isl_printer_print_str(p, text);
}

static __isl_give isl_printer *print_template(__isl_take isl_printer *p,
					      fl_cg_kernel *cg,
					      const fl_cg_stmt *st,
					      const char *tpl)
{
	return print_template_as(p, cg, st, tpl, NULL);
}

static const char *role_name(fl_stmt_role r)
{
	switch (r) {
	case FL_STMT_COMPUTE: return "compute";
	case FL_STMT_INIT: return "init";
	case FL_STMT_UPDATE: return "update";
	case FL_STMT_FINALIZE: return "finalize";
	case FL_STMT_COPY: return "copy";
	case FL_STMT_FILL: return "fill";
	case FL_STMT_SCATTER: return "scatter";
	}
	return "?";
}

/* exp with an argument the value ranges bound (value_range.c): the
 * maths runtime's variant without the selects it cannot need. */
static const char *exp_template(const fl_cg_kernel *cg, const fl_op *op)
{
	fl_value_range r = cg->range[op->in[0]];

	if (fl_value_range_within(r, -FL_EXPF_ARG_SMALL, FL_EXPF_ARG_SMALL))
		return "fl_expf_small($0)";
	if (fl_value_range_within(r, FL_EXPF_ARG_LO, FL_EXPF_ARG_HI))
		return "fl_expf_in_range($0)";
	if (r.hi <= 0.0f)
		return cg->cuda ? "fl_expf_nonpos($0)"
				: "fl_expf_nonpos_b($0, fl_b)";
	return cg->cuda ? NULL : "fl_expf_b($0, fl_b)";
}

/* min and max against a constant that holds no NaN: fl_fminf(a, b) is
 * "a < b ? a : b" when b is not NaN (a NaN a gives b either way), one
 * vector min instead of a NaN test, a compare and a select (chain8's cap
 * at 2: 5% of its time).  With the constant first the operands swap,
 * which can differ only in the sign of a zero result. */
static const char *minmax_template(const fl_cg_kernel *cg, const fl_op *op)
{
	bool min = op->kind == FL_OP_MIN;

	if (fl_value_never_nan(cg->g, op->in[1]))
		return min ? "$0 < $1 ? $0 : $1" : "$0 > $1 ? $0 : $1";
	if (fl_value_never_nan(cg->g, op->in[0]))
		return min ? "$1 < $0 ? $1 : $0" : "$1 > $0 ? $1 : $0";
	return NULL;
}

/* The C forms of the ops whose selects compare with a literal: the same
 * expressions with the bounds the kernel hid from the compiler (fl_b;
 * runtime/math_rt.c says why), so that each clamp is one vector min or
 * max.  relu is "x > 0 ? x : 0", vmaxps(x, 0) to the bit.  exp has its
 * forms in exp_template. */
static const char *bounds_template(const fl_op *op)
{
	switch (op->kind) {
	case FL_OP_TANH: return "fl_tanhf_b($0, fl_b)";
	case FL_OP_ERF: return "fl_erff_b($0, fl_b)";
	case FL_OP_SIGMOID: return "1.0f / (1.0f + fl_expf_b(-$0, fl_b))";
	case FL_OP_RELU: return "$0 > fl_b.zero ? $0 : fl_b.zero";
	default: return NULL;
	}
}

/* A compute statement's template: the op's own, or one the kernel's
 * facts make cheaper -- exp of a bounded argument, min and max against
 * a constant, and a division by a value the innermost loop does not
 * change, which becomes a multiplication by its reciprocal (gcc then
 * hoists the one division out of the loop: softmax's last phase, 6% of
 * its time; the result is within an ulp of the quotient) -- and in C
 * the forms with hidden bounds. */
static const char *compute_template(fl_cg_kernel *cg, const fl_cg_stmt *st,
				    const char *tpl)
{
	const char *better = NULL;

	if (st->op->kind == FL_OP_EXP)
		better = exp_template(cg, st->op);
	else if (st->op->kind == FL_OP_MIN || st->op->kind == FL_OP_MAX)
		better = minmax_template(cg, st->op);
	else if (st->op->kind == FL_OP_DIV && fl_cg_read_invariant(st, 1))
		better = "$0 * (1.0f / $1)";
	else if (!cg->cuda)
		better = bounds_template(st->op);
	if (better && strstr(better, "fl_b"))
		cg->uses_bounds = true;
	return better ? better : tpl;
}

/* The right-hand side template of a statement (from the op table; a copy
 * reads its input), formatted into buf when needed; NULL, and the kernel
 * failed, when the table has none. */
static const char *rhs_template(fl_cg_kernel *cg, const fl_cg_stmt *st,
				char *buf, size_t n)
{
	const char *tpl = NULL;
	fl_dtype dt;
	fl_op_c c;
	char what[96];

	if (st->ps->role == FL_STMT_COPY) {
		snprintf(buf, n, "$%d", st->ps->input);
		return buf;
	}
	dt = fl_op_operand_dtype(cg->g, st->op);
	if ((st->ps->role == FL_STMT_COMPUTE || st->ps->role == FL_STMT_FILL) &&
	    (tpl = fl_op_c_half_template(st->op, dt,
			cg->g->tensors[st->op->out[0]].dtype, buf, n)))
		return tpl;
	c = fl_op_c_templates_typed(st->op, dt, buf, n);
	switch (st->ps->role) {
	case FL_STMT_COMPUTE:
		/* the cheaper forms are float arithmetic */
		tpl = dt != FL_F32 ? c.compute
				   : compute_template(cg, st, c.compute);
		break;
	case FL_STMT_INIT: tpl = c.init; break;
	case FL_STMT_UPDATE: tpl = c.update; break;
	case FL_STMT_FINALIZE: tpl = c.finalize; break;
	case FL_STMT_FILL: tpl = c.fill; break;
	case FL_STMT_COPY: case FL_STMT_SCATTER: break;
	}
	if (!tpl) {
		snprintf(what, sizeof what, "op %s has no C template for its "
			 "%s statement", fl_op_kind_name(st->op->kind),
			 role_name(st->ps->role));
		fl_cg_fail(cg, what);
	}
	return tpl;
}

/* The C type of loop counters and index variables: int for the usual
 * sizes (the code stays as it was), long (64 bits) in a kernel where some
 * extent, or the element count of some tensor (loops over it may be
 * coalesced or tiled), passes INT_MAX, so that neither a counter nor the
 * index arithmetic isl prints from it (32 * c0 + 31) can overflow. */
static const char *counter_type(const fl_cg_kernel *cg)
{
	return cg->wide ? "long" : "int";
}

bool fl_cg_kernel_is_wide(const fl_graph *g, const fl_kernel *k)
{
	for (int i = 0; i < k->n_tensors; i++) {
		const fl_shape *s = &g->tensors[k->tensors[i].tensor].shape;
		int64_t n = fl_shape_numel(s);

		if (n < 0 || n > INT_MAX)
			return true;
	}
	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &g->ops[k->ops[i]];

		for (int j = 0; j < op->n_in; j++) {
			int64_t n = fl_shape_numel(&g->tensors[op->in[j]].shape);

			if (n < 0 || n > INT_MAX)
				return true;
		}
		for (int j = 0; j < op->n_out; j++) {
			int64_t n = fl_shape_numel(&g->tensors[op->out[j]].shape);

			if (n < 0 || n > INT_MAX)
				return true;
		}
	}
	return false;
}

/* gather: out[i] = x[i_0.., clamp(floor(idx[i_axis..])), ..]. */
static __isl_give isl_printer *print_gather(__isl_take isl_printer *p,
					    fl_cg_kernel *cg,
					    const fl_cg_stmt *st)
{
	const fl_op *op = st->op;
	const fl_shape *xs = &cg->g->tensors[op->in[0]].shape;
	int rq = cg->g->tensors[op->in[1]].shape.rank, axis;
	int64_t a = 0;
	char buf[128];

	fl_attr_int(&op->attrs, "axis", 0, &a, NULL);
	axis = fl_axis_normalize(a, xs->rank);
	p = isl_printer_print_str(p, "{ const float fl_v = floorf(");
	p = print_template(p, cg, st, "$1");
	snprintf(buf, sizeof buf, "); const %s fl_j = !(fl_v >= 0.0f) ? 0 : "
		 "fl_v >= %lld.0f ? %lld : (%s)fl_v; ", counter_type(cg),
		 (long long)(xs->dim[axis] - 1), (long long)(xs->dim[axis] - 1),
		 counter_type(cg));
	p = isl_printer_print_str(p, buf);
	p = print_access(p, cg, st->write, op->out[0]);
	snprintf(buf, sizeof buf, " = T%d", op->in[0]);
	p = isl_printer_print_str(p, buf);
	for (int d = 0; d < xs->rank; d++) {
		int src = d < axis ? d : d + rq - 1;
		isl_ast_expr *e;

		if (d == axis) {
			p = isl_printer_print_str(p, "[fl_j]");
			continue;
		}
		e = isl_ast_expr_op_get_arg(st->iters, src + 1);
		p = isl_printer_print_str(p, "[");
		p = isl_printer_print_ast_expr(p, e);
		p = isl_printer_print_str(p, "]");
		isl_ast_expr_free(e);
	}
	return isl_printer_print_str(p, "; }");
}

/* The opening of an indexed statement: "{ long fl_j = <index>; ", the
 * element along an axis of `extent` that the index read $1 picks --
 * fl_index_resolve's rule (ops.h): floored, NaN reads 0, negative counts
 * from the end, then clamped into [0, extent). */
static __isl_give isl_printer *print_index(__isl_take isl_printer *p,
					   fl_cg_kernel *cg,
					   const fl_cg_stmt *st, int64_t extent)
{
	long long x = (long long)extent;
	char buf[256];

	if (fl_dtype_is_int(cg->g->tensors[st->op->in[1]].dtype)) {
		p = isl_printer_print_str(p, "{ long fl_j = (long)(");
		p = print_template(p, cg, st, "$1");
		snprintf(buf, sizeof buf, "); if (fl_j < 0) fl_j += %lldL; "
			 "fl_j = fl_j < 0 ? 0 : fl_j > %lldL ? %lldL : fl_j; ",
			 x, x - 1, x - 1);
		return isl_printer_print_str(p, buf);
	}
	p = isl_printer_print_str(p, "{ float fl_v = floorf(");
	p = print_template(p, cg, st, "$1");
	snprintf(buf, sizeof buf, "); if (fl_v < 0.0f) fl_v += %lld.0f; "
		 "const long fl_j = !(fl_v >= 0.0f) ? 0 : fl_v >= %lld.0f ? "
		 "%lldL : (long)fl_v; ", x, x - 1, x - 1);
	return isl_printer_print_str(p, buf);
}

/* T<t>[i_0]..[fl_j]..[i_{r-1}]: the element of tensor t (global) at
 * the statement's original iterators, fl_j along the axis. */
static __isl_give isl_printer *print_indexed(__isl_take isl_printer *p,
					     const fl_cg_stmt *st, int t,
					     int rank, int axis)
{
	char buf[32];

	snprintf(buf, sizeof buf, "T%d", t);
	p = isl_printer_print_str(p, buf);
	for (int d = 0; d < rank; d++) {
		isl_ast_expr *e;

		if (d == axis) {
			p = isl_printer_print_str(p, "[fl_j]");
			continue;
		}
		e = isl_ast_expr_op_get_arg(st->iters, d + 1);
		p = isl_printer_print_str(p, "[");
		p = isl_printer_print_ast_expr(p, e);
		p = isl_printer_print_str(p, "]");
		isl_ast_expr_free(e);
	}
	return p;
}

/* gather_elements: out[i] = x[i with i_axis = index(idx[i])]. */
static __isl_give isl_printer *print_gather_elements(
	__isl_take isl_printer *p, fl_cg_kernel *cg, const fl_cg_stmt *st)
{
	const fl_op *op = st->op;
	const fl_shape *xs = &cg->g->tensors[op->in[0]].shape;
	int axis = 0;

	fl_index_axis(op, xs->rank, &axis, NULL);
	p = print_index(p, cg, st, xs->dim[axis]);
	p = print_access(p, cg, st->write, op->out[0]);
	p = isl_printer_print_str(p, " = ");
	p = print_indexed(p, st, op->in[0], xs->rank, axis);
	return isl_printer_print_str(p, "; }");
}

/* The combination of the element *fl_o with update $2 under scatter
 * reduction r, for elements of dtype dt. */
static const char *scatter_rhs(fl_scatter_red r, fl_dtype dt)
{
	bool ints = fl_dtype_is_int(dt);

	switch (r) {
	case FL_SCATTER_ADD: return "*fl_o + $2";
	case FL_SCATTER_MUL: return "*fl_o * $2";
	case FL_SCATTER_MAX: return ints ? "(*fl_o > $2 ? *fl_o : $2)"
					 : "fl_fmaxf(*fl_o, $2)";
	case FL_SCATTER_MIN: return ints ? "(*fl_o < $2 ? *fl_o : $2)"
					 : "fl_fminf(*fl_o, $2)";
	default: return "$2";
	}
}

/* A scatter_elements update: the element of out at j with j_axis =
 * index(idx[j]) becomes upd[j], or combines with it.  Its instances
 * that may hit one element differ only along the axis, which layer 1
 * keeps in order in one loop: never parallel, never a race. */
static __isl_give isl_printer *print_scatter(__isl_take isl_printer *p,
					     fl_cg_kernel *cg,
					     const fl_cg_stmt *st)
{
	const fl_op *op = st->op;
	const fl_tensor *o = &cg->g->tensors[op->out[0]];
	fl_scatter_red r = FL_SCATTER_NONE;
	int axis = 0;
	char buf[64];

	fl_index_axis(op, o->shape.rank, &axis, NULL);
	fl_scatter_reduction(op, &r, NULL);
	p = print_index(p, cg, st, o->shape.dim[axis]);
	snprintf(buf, sizeof buf, "%s *const fl_o = &",
		 fl_dtype_c_type(o->dtype));
	p = isl_printer_print_str(p, buf);
	p = print_indexed(p, st, op->out[0], o->shape.rank, axis);
	p = isl_printer_print_str(p, "; *fl_o = ");
	p = print_template(p, cg, st, scatter_rhs(r, o->dtype));
	return isl_printer_print_str(p, "; }");
}

/* reshape of a global input: the same row-major element, read through
 * the flat buffer at the output's linear index -- isl's subscripts for
 * it need a division and a modulo per dimension. */
static __isl_give isl_printer *print_reshape(__isl_take isl_printer *p,
					     fl_cg_kernel *cg,
					     const fl_cg_stmt *st)
{
	const fl_shape *so = &cg->g->tensors[st->op->out[0]].shape;
	int64_t strides[FL_MAX_RANK];
	char buf[64];

	fl_shape_strides(so, strides);
	p = print_access(p, cg, st->write, st->op->out[0]);
	snprintf(buf, sizeof buf, " = ((const %s *)T%d)[",
		 fl_dtype_c_type(cg->g->tensors[st->op->in[0]].dtype),
		 st->op->in[0]);
	p = isl_printer_print_str(p, buf);
	if (so->rank == 0)
		p = isl_printer_print_str(p, "0");
	for (int d = 0; d < so->rank; d++) {
		isl_ast_expr *e = isl_ast_expr_op_get_arg(st->iters, d + 1);

		p = isl_printer_print_str(p, d ? " + (long)(" : "(long)(");
		p = isl_printer_print_ast_expr(p, e);
		snprintf(buf, sizeof buf, ") * %lld", (long long)strides[d]);
		p = isl_printer_print_str(p, buf);
		isl_ast_expr_free(e);
	}
	return isl_printer_print_str(p, "];");
}

/* max and min into an accumulator, as one compare and select: the
 * accumulator starts at -INFINITY (or INFINITY, or an element already
 * reduced) and never becomes NaN (see annotate.c), so "x > acc ? x : acc"
 * is fl_fmaxf(acc, x) -- a NaN x leaves acc -- and it is exactly x86's
 * maxps(x, acc), one instruction where fl_fmaxf's NaN test makes the
 * update a chain of four (softmax's max pass ran 1.25x as long). */
static const char *const acc_select[][2] = {
	{"fl_fmaxf($o, $0)", "$0 > $o ? $0 : $o"},
	{"fl_fminf($o, $0)", "$0 < $o ? $0 : $o"},
};

static const char *acc_template(const char *tpl)
{
	for (size_t i = 0; tpl && i < sizeof acc_select / sizeof *acc_select;
	     i++)
		if (strcmp(tpl, acc_select[i][0]) == 0)
			return acc_select[i][1];
	return tpl;
}

/* The update of a reduction kept in accumulator fl_acc<k>: the op's own
 * update with the scalar for the element, "fl_acc0 = fl_acc0 + x;", or
 * for max and min the select above, "fl_acc0 = x > fl_acc0 ? x : fl_acc0;"
 * -- the same NaN rule as in memory. */
static __isl_give isl_printer *print_acc_update(__isl_take isl_printer *p,
						fl_cg_kernel *cg,
						const fl_cg_stmt *st)
{
	char acc[32], buf[64];
	const char *tpl = acc_template(rhs_template(cg, st, buf, sizeof buf));

	snprintf(acc, sizeof acc, "fl_acc%d", st->acc);
	p = isl_printer_print_str(p, acc);
	p = isl_printer_print_str(p, " = ");
	if (tpl)
		p = print_template_as(p, cg, st, tpl, acc);
	return isl_printer_print_str(p, ";");
}

__isl_give isl_printer *fl_cg_print_stmt(__isl_take isl_printer *p,
				     fl_cg_kernel *cg, const fl_cg_stmt *st)
{
	char tpl[64], note[96];

	if (st->acc >= 0 && st->ps->role == FL_STMT_INIT) {
		p = isl_printer_print_str(p, "(void)0;");	/* hoisted */
	} else if (st->acc >= 0) {
		p = print_acc_update(p, cg, st);
	} else if (st->op->kind == FL_OP_GATHER) {
		p = print_gather(p, cg, st);
	} else if (st->op->kind == FL_OP_GATHER_ELEMENTS) {
		p = print_gather_elements(p, cg, st);
	} else if (st->ps->role == FL_STMT_SCATTER) {
		p = print_scatter(p, cg, st);
	} else if (st->op->kind == FL_OP_RESHAPE &&
		   !cg->arr[st->op->in[0]].local) {
		p = print_reshape(p, cg, st);
	} else {
		const char *rhs = rhs_template(cg, st, tpl, sizeof tpl);

		p = print_access(p, cg, st->write, st->op->out[0]);
		p = isl_printer_print_str(p, " = ");
		if (rhs)
			p = print_template(p, cg, st, rhs);
		p = isl_printer_print_str(p, ";");
	}
	snprintf(note, sizeof note, "  /* %s: %s %s */", st->name,
		 fl_op_kind_name(st->op->kind), role_name(st->ps->role));
	return isl_printer_print_str(p, note);
}

static __isl_give isl_printer *print_user(__isl_take isl_printer *p,
					  __isl_take isl_ast_print_options *o,
					  __isl_keep isl_ast_node *node,
					  void *user)
{
	fl_cg_kernel *cg = user;
	fl_cg_stmt *st = fl_cg_stmt_of(node);

	isl_ast_print_options_free(o);
	p = isl_printer_start_line(p);
	if (st)
		p = fl_cg_print_stmt(p, cg, st);
	else
		p = isl_printer_print_str(p, ";");
	return isl_printer_end_line(p);
}

/* ---- printing loops ------------------------------------------------- */

static __isl_give isl_printer *line(__isl_take isl_printer *p,
				    const char *s)
{
	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, s);
	return isl_printer_end_line(p);
}

/* Tile-local arrays above this size go to the scratch of their region
 * (allocated once per call): a few of MICRO 2020's 64x34x34 buffers
 * already take a megabyte, more than an OpenMP worker's stack may hold. */
#define LOCAL_STACK_MAX (64 << 10)

static int64_t local_elems(const fl_cg_array *a)
{
	int64_t n = 1;

	for (int d = 0; d < a->rank; d++)
		n *= fl_cg_extent(a, d);
	return n;
}

static bool local_on_heap(const fl_cg_array *a)
{
	return !a->reg && local_elems(a) * (int64_t)sizeof(float) > LOCAL_STACK_MAX;
}

/* The parallel loop whose region holds the scratch of heap array a:
 * the loop with the pragma around its scope (each thread its own part),
 * or NULL for the function's scratch (one per call). */
static const fl_cg_loop *scratch_region(const fl_cg_array *a)
{
	for (const fl_cg_loop *l = a->scope; l; l = l->parent)
		if (l->pragma)
			return l;
	return NULL;
}

/* Floats of heap array a in a scratch buffer: rounded up to 16 (64
 * bytes), so that every array starts on a cache line. */
static int64_t scratch_floats(const fl_cg_array *a)
{
	return (local_elems(a) + 15) / 16 * 16;
}

/* Where heap array t starts in the scratch of its region (*total: the
 * floats of the whole region, arrays in tensor order). */
static int64_t scratch_offset(const fl_cg_kernel *cg, const fl_cg_loop *region,
			      int t, int64_t *total)
{
	int64_t off = 0, sum = 0;

	for (int u = 0; u < cg->g->n_tensors; u++) {
		const fl_cg_array *a = &cg->arr[u];

		if (!a->local || !a->used || !local_on_heap(a) ||
		    scratch_region(a) != region)
			continue;
		if (u == t)
			off = sum;
		sum += scratch_floats(a);
	}
	*total = sum;
	return off;
}

/* The scratch variable of region (NULL: the function's). */
static const char *scratch_name(const fl_cg_loop *region)
{
	return region ? "fl_tscratch" : "fl_scratch";
}

/* "float T5_loc[6][6];" or, on the heap, a view of the region's scratch:
 * "float (*T5_loc)[34] = (float (*)[34])(fl_tscratch + 1024);". */
static __isl_give isl_printer *print_local(__isl_take isl_printer *p,
					   const fl_cg_kernel *cg, int t)
{
	const fl_cg_array *a = &cg->arr[t];
	char buf[96], dims[256] = "";
	bool heap = local_on_heap(a);
	size_t n = 0;
	int64_t total;

	if (a->reg) {
		snprintf(buf, sizeof buf, "float T%d_r;", t);
		return line(p, buf);
	}
	for (int d = heap ? 1 : 0; d < a->rank; d++)
		n += (size_t)snprintf(dims + n, sizeof dims - n, "[%lld]",
				      (long long)fl_cg_extent(a, d));
	p = isl_printer_start_line(p);
	if (!heap) {
		snprintf(buf, sizeof buf, "float T%d_loc", t);
		p = isl_printer_print_str(p, buf);
		p = isl_printer_print_str(p, a->rank ? dims : "[1]");
		p = isl_printer_print_str(p, ";");
		return isl_printer_end_line(p);
	}
	snprintf(buf, sizeof buf, "float (*T%d_loc)", t);
	p = isl_printer_print_str(p, buf);
	p = isl_printer_print_str(p, dims);
	p = isl_printer_print_str(p, " = (float (*)");
	p = isl_printer_print_str(p, dims);
	snprintf(buf, sizeof buf, ")(%s + %lld);",
		 scratch_name(scratch_region(a)),
		 (long long)scratch_offset(cg, scratch_region(a), t, &total));
	p = isl_printer_print_str(p, buf);
	return isl_printer_end_line(p);
}

/* Declarations of the tile-local arrays whose scope is `scope`. */
__isl_give isl_printer *fl_cg_print_locals(__isl_take isl_printer *p,
					   const fl_cg_kernel *cg,
					   const fl_cg_loop *scope)
{
	for (int t = 0; t < cg->g->n_tensors; t++)
		if (fl_cg_declared_in(&cg->arr[t], scope))
			p = print_local(p, cg, t);
	return p;
}

/* The scratch of region (NULL: the function's), allocated once: before
 * the loop of the region's parallel team, in every thread, or at the top
 * of the function; nothing when no heap array lives there. */
static __isl_give isl_printer *print_scratch_alloc(__isl_take isl_printer *p,
						   const fl_cg_kernel *cg,
						   const fl_cg_loop *region)
{
	char buf[160];
	int64_t total;

	scratch_offset(cg, region, -1, &total);
	if (!total)
		return p;
	snprintf(buf, sizeof buf, "float *const %s = fl_scratch_alloc(%lldUL);",
		 scratch_name(region), (long long)total);
	return line(p, buf);
}

static __isl_give isl_printer *print_scratch_free(__isl_take isl_printer *p,
						  const fl_cg_kernel *cg,
						  const fl_cg_loop *region)
{
	char buf[48];
	int64_t total;

	scratch_offset(cg, region, -1, &total);
	if (!total)
		return p;
	snprintf(buf, sizeof buf, "free(%s);", scratch_name(region));
	return line(p, buf);
}

/* The children of a block one by one (no extra braces), else the node. */
__isl_give isl_printer *fl_cg_print_body(__isl_take isl_printer *p,
					 __isl_keep isl_ast_node *body,
					 __isl_keep isl_ast_print_options *o)
{
	isl_ast_node_list *list;
	isl_size n;

	if (isl_ast_node_get_type(body) != isl_ast_node_block)
		return isl_ast_node_print(body, p,
					  isl_ast_print_options_copy(o));
	list = isl_ast_node_block_get_children(body);
	n = isl_ast_node_list_n_ast_node(list);
	for (int i = 0; i < n; i++) {
		isl_ast_node *c = isl_ast_node_list_get_at(list, i);

		p = isl_ast_node_print(c, p, isl_ast_print_options_copy(o));
		isl_ast_node_free(c);
	}
	isl_ast_node_list_free(list);
	return p;
}

static __isl_give isl_printer *print_expr_str(__isl_take isl_printer *p,
					      isl_ast_expr *e /* taken */)
{
	p = isl_printer_print_ast_expr(p, e);
	isl_ast_expr_free(e);
	return p;
}

/* `what` (an OpenMP directive) with one reduction clause per
 * accumulator of b. */
static __isl_give isl_printer *print_acc_pragma(__isl_take isl_printer *p,
						const char *what,
						const fl_cg_acc *b)
{
	char buf[64];

	p = isl_printer_start_line(p);
	p = isl_printer_print_str(p, what);
	for (int k = 0; k < b->n; k++) {	/* one clause per accumulator */
		snprintf(buf, sizeof buf, " reduction(%s:fl_acc%d)",
			 fl_cg_acc_kind(b->upd[k]->op->kind), k);
		p = isl_printer_print_str(p, buf);
	}
	return isl_printer_end_line(p);
}

/* "{ float fl_acc0 = <element or identity>; ...", before loop l: its
 * pragma is "omp simd" with the reductions, or for an all-reduce loop
 * (acc_team) "omp parallel for" (with simd when it is innermost): the
 * threads' partial results are combined by OpenMP at the loop's end. */
static __isl_give isl_printer *print_acc_open(__isl_take isl_printer *p,
					      fl_cg_kernel *cg,
					      const fl_cg_loop *l)
{
	const fl_cg_acc *b = l->acc;
	char buf[160];

	p = line(p, "{");
	p = isl_printer_indent(p, 2);
	for (int k = 0; k < b->n; k++) {
		const fl_cg_stmt *u = b->upd[k];

		p = isl_printer_start_line(p);
		snprintf(buf, sizeof buf, "%s fl_acc%d = ",
			 fl_dtype_c_type(cg->g->tensors[u->op->out[0]].dtype), k);
		p = isl_printer_print_str(p, buf);
		if (b->init[k])
			p = isl_printer_print_str(p,
				fl_op_c_templates_typed(u->op,
					fl_op_operand_dtype(cg->g, u->op), buf,
					sizeof buf).init);
		else
			p = print_access(p, cg, u->write, u->op->out[0]);
		p = isl_printer_print_str(p, ";");
		p = isl_printer_end_line(p);
	}
	if (!l->acc_team)
		return print_acc_pragma(p, "#pragma omp simd", b);
	return print_acc_pragma(p, l->simd ? "#pragma omp parallel for simd" :
				"#pragma omp parallel for", b);
}

/* "<element> = fl_acc0; ... }", after the loop. */
static __isl_give isl_printer *print_acc_close(__isl_take isl_printer *p,
					       fl_cg_kernel *cg,
					       const fl_cg_acc *b)
{
	char buf[48];

	for (int k = 0; k < b->n; k++) {
		const fl_cg_stmt *u = b->upd[k];

		p = isl_printer_start_line(p);
		p = print_access(p, cg, u->write, u->op->out[0]);
		snprintf(buf, sizeof buf, " = fl_acc%d;", k);
		p = isl_printer_print_str(p, buf);
		p = isl_printer_end_line(p);
	}
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* Whether parallel loop l's region has heap arrays (a scratch). */
static bool has_scratch(const fl_cg_kernel *cg, const fl_cg_loop *l)
{
	int64_t total;

	scratch_offset(cg, l, -1, &total);
	return total > 0;
}

/* `what` (an OpenMP work-sharing directive) with the clauses loop l
 * takes: simd on an innermost loop, collapse over its tile loops. */
static __isl_give isl_printer *print_pragma(__isl_take isl_printer *p,
					    const char *what,
					    const fl_cg_loop *l)
{
	char buf[96];

	snprintf(buf, sizeof buf, "%s%s", what, l->simd ? " simd" : "");
	if (l->collapse > 1)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf),
			 " collapse(%d)", l->collapse);
	return line(p, buf);
}

/* The parallel team around loop l when its tiles need heap arrays: each
 * thread allocates its scratch once per call, before the work-shared
 * loop, rather than once per tile:
 *   #pragma omp parallel
 *   { float *const fl_tscratch = fl_scratch_alloc(N);
 *     #pragma omp for
 *     for (...) { float (*T5_loc)[34] = (..)(fl_tscratch + 0); .. }
 *     free(fl_tscratch); } */
static __isl_give isl_printer *print_team_open(__isl_take isl_printer *p,
					       const fl_cg_kernel *cg,
					       const fl_cg_loop *l)
{
	p = line(p, "#pragma omp parallel");
	p = line(p, "{");
	p = isl_printer_indent(p, 2);
	p = print_scratch_alloc(p, cg, l);
	/* a thread that streamed fences its own stores and needs no
	   barrier before that: the region's end is one */
	return print_pragma(p, l->stream_fence ? "#pragma omp for nowait" :
			    "#pragma omp for", l);
}

static __isl_give isl_printer *print_team_close(__isl_take isl_printer *p,
						const fl_cg_kernel *cg,
						const fl_cg_loop *l)
{
	if (l->stream_fence)	/* each thread its streamed stores */
		p = line(p, "fl_stream_fence();");
	p = print_scratch_free(p, cg, l);
	p = isl_printer_indent(p, -2);
	return line(p, "}");
}

/* A streamed loop (l->stream): for (int c<d> = 0; c<d> <= UB; ...) as
 *
 *   for (int c<d>_nt = 0; c<d>_nt < UB + 1; c<d>_nt += 16) {
 *     float T<t>_nt[16] __attribute__((aligned(64)));
 *     #pragma omp simd
 *     for (int c<d> = c<d>_nt; c<d> <= c<d>_nt + 15; c<d> += 1) {
 *       ... T<t>_nt[c<d> - c<d>_nt] = ...;
 *     }
 *     { const int c<d> = c<d>_nt; fl_stream16(&T<t>[..][c<d>], T<t>_nt); }
 *   }
 *   fl_stream_fence();
 *
 * The compiler keeps the 16 staged floats in vector registers and the
 * block's store goes straight to memory; the fence orders these stores
 * before whatever follows (they are weakly ordered). */
__isl_give isl_printer *fl_cg_stream_open(__isl_take isl_printer *p,
					  fl_cg_kernel *cg,
					  const fl_cg_loop *l, const char *it)
{
	const char *ty = cg->wide ? "long" : "int";
	char buf[256];

	snprintf(buf, sizeof buf, "for (%s %s_nt = 0; %s_nt < %ld; %s_nt += %d) {",
		 ty, it, it, l->stream_trips, it, FL_STREAM_FLOATS);
	p = line(p, buf);
	p = isl_printer_indent(p, 2);
	cg->stream_t = l->stream->op->out[0];
	snprintf(buf, sizeof buf, "float T%d_nt[%d] __attribute__((aligned(64)));",
		 cg->stream_t, FL_STREAM_FLOATS);
	p = line(p, buf);
	snprintf(cg->stream_index, sizeof cg->stream_index, "%s - %s_nt", it, it);
	p = line(p, "#pragma omp simd");
	snprintf(buf, sizeof buf, "for (%s %s = %s_nt; %s <= %s_nt + %d; %s += 1) {",
		 ty, it, it, it, it, FL_STREAM_FLOATS - 1, it);
	p = line(p, buf);
	return isl_printer_indent(p, 2);
}

__isl_give isl_printer *fl_cg_stream_close(__isl_take isl_printer *p,
					   fl_cg_kernel *cg,
					   const fl_cg_loop *l, const char *it)
{
	int t = l->stream->op->out[0];
	char buf[160];

	cg->stream_t = -1;
	p = isl_printer_indent(p, -2);
	p = line(p, "}");
	p = isl_printer_start_line(p);
	snprintf(buf, sizeof buf, "{ const %s %s = %s_nt; fl_stream16(&",
		 cg->wide ? "long" : "int", it, it);
	p = isl_printer_print_str(p, buf);
	p = print_access(p, cg, l->stream->write, t);
	snprintf(buf, sizeof buf, ", T%d_nt); }", t);
	p = isl_printer_print_str(p, buf);
	p = isl_printer_end_line(p);
	p = isl_printer_indent(p, -2);
	p = line(p, "}");
	if (!l->stream_fence)
		p = line(p, "fl_stream_fence();");
	if (!cg->stream_note[0]) {
		char name[64];

		fl_sanitize_comment(cg->g->tensors[t].name, name, sizeof name);
		snprintf(cg->stream_note, sizeof cg->stream_note, "T%d \"%s\" "
			 "stored around the caches, %d floats at a time "
			 "(non-temporal: an output larger than the cores' L2 "
			 "caches that no op reads)", t, name, FL_STREAM_FLOATS);
	}
	return p;
}

static __isl_give isl_printer *print_streamed_for(__isl_take isl_printer *p,
		__isl_take isl_ast_print_options *o, fl_cg_kernel *cg,
		__isl_keep isl_ast_node *node, fl_cg_loop *l)
{
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	isl_id *id = isl_ast_expr_get_id(it);
	const char *c = isl_id_get_name(id);

	p = fl_cg_stream_open(p, cg, l, c);
	p = fl_cg_print_locals(p, cg, l);
	p = fl_cg_print_body(p, body, o);
	p = fl_cg_stream_close(p, cg, l, c);
	isl_id_free(id);
	isl_ast_expr_free(it);
	isl_ast_node_free(body);
	isl_ast_print_options_free(o);
	return p;
}

/* for (int c = init; cond; c += inc) (long c in a wide kernel) { locals; body }, with what
 * annotate.c decided for it in front (pragma, simd or accumulators); a
 * degenerate loop is a block that sets its iterator once. */
static __isl_give isl_printer *print_for(__isl_take isl_printer *p,
					 __isl_take isl_ast_print_options *o,
					 __isl_keep isl_ast_node *node,
					 void *user)
{
	fl_cg_kernel *cg = user;
	fl_cg_loop *l = fl_cg_loop_of(node);
	bool degenerate = isl_ast_node_for_is_degenerate(node) == isl_bool_true;
	isl_ast_node *body = isl_ast_node_for_get_body(node);
	isl_ast_expr *it = isl_ast_node_for_get_iterator(node);
	bool team = l && l->pragma && !l->acc &&
		    (has_scratch(cg, l) || l->stream_fence);

	if (l && l->absorbed) {	/* printed by the contraction before it */
		isl_ast_expr_free(it);
		isl_ast_node_free(body);
		isl_ast_print_options_free(o);
		return p;
	}
	if (l && l->split) {
		isl_ast_expr_free(it);
		isl_ast_node_free(body);
		isl_ast_print_options_free(o);
		return fl_cg_print_split(p, cg, node, l);
	}
	if (l && l->contract && !l->pragma) {
		isl_ast_expr_free(it);
		isl_ast_node_free(body);
		isl_ast_print_options_free(o);
		return fl_cg_print_contract(p, cg, l->contract);
	}
	if (l && l->stream && !degenerate) {
		isl_ast_expr_free(it);
		isl_ast_node_free(body);
		return print_streamed_for(p, o, cg, node, l);
	}
	if (l && l->acc)
		p = print_acc_open(p, cg, l);
	else if (l && l->acc_simd)
		p = print_acc_pragma(p, "#pragma omp simd", l->acc_simd);
	else if (team)
		p = print_team_open(p, cg, l);
	else if (l && l->pragma)
		p = print_pragma(p, "#pragma omp parallel for", l);
	else if (l && l->simd)
		p = line(p, "#pragma omp simd");
	p = isl_printer_start_line(p);
	if (degenerate) {
		p = isl_printer_print_str(p, cg->wide ? "{ const long " :
					  "{ const int ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " = ");
		p = print_expr_str(p, isl_ast_node_for_get_init(node));
		p = isl_printer_print_str(p, "; (void)");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, ";");
	} else {
		p = isl_printer_print_str(p, cg->wide ? "for (long " :
					  "for (int ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " = ");
		p = print_expr_str(p, isl_ast_node_for_get_init(node));
		p = isl_printer_print_str(p, "; ");
		p = print_expr_str(p, isl_ast_node_for_get_cond(node));
		p = isl_printer_print_str(p, "; ");
		p = isl_printer_print_ast_expr(p, it);
		p = isl_printer_print_str(p, " += ");
		p = print_expr_str(p, isl_ast_node_for_get_inc(node));
		p = isl_printer_print_str(p, ") {");
	}
	p = isl_printer_end_line(p);
	p = isl_printer_indent(p, 2);
	if (l)
		p = fl_cg_print_locals(p, cg, l);
	p = fl_cg_print_body(p, body, o);
	p = isl_printer_indent(p, -2);
	p = line(p, "}");
	if (l && l->acc)
		p = print_acc_close(p, cg, l->acc);
	if (team)
		p = print_team_close(p, cg, l);
	isl_ast_expr_free(it);
	isl_ast_node_free(body);
	isl_ast_print_options_free(o);
	return p;
}

/* The body of the kernel function printed from ast (keep). */
static char *print_ast(fl_cg_kernel *cg, __isl_keep isl_ast_node *ast)
{
	isl_printer *p = isl_printer_to_str(cg->ctx);
	isl_ast_print_options *o = isl_ast_print_options_alloc(cg->ctx);
	char *s;

	p = isl_printer_set_output_format(p, ISL_FORMAT_C);
	p = isl_printer_indent(p, 2);
	o = isl_ast_print_options_set_print_user(o, &print_user, cg);
	o = isl_ast_print_options_set_print_for(o, &print_for, cg);
	p = print_scratch_alloc(p, cg, NULL);
	p = fl_cg_print_locals(p, cg, NULL);
	p = fl_cg_print_body(p, ast, o);
	p = print_scratch_free(p, cg, NULL);
	isl_ast_print_options_free(o);
	s = isl_printer_get_str(p);
	isl_printer_free(p);
	if (!s)
		fl_cg_fail(cg, "isl could not print the AST");
	return s;
}

int fl_cg_attempt(fl_cg_kernel *cg, isl_ast_node **ast)
{
	bool retry;

	fl_cg_begin_attempt(cg);
	*ast = fl_cg_build_ast(cg);
	retry = !fl_cg_settle_placement(cg) || (!cg->failed &&
						 !fl_cg_fit_budget(cg));
	if (*ast && !cg->failed && !retry) {
		fl_cg_decide_loops(cg, *ast);
		fl_cg_plan_splits(cg, *ast);
		fl_cg_plan_epilogues(cg, *ast);
		return 0;
	}
	*ast = isl_ast_node_free(*ast);
	if (cg->failed)
		return -1;
	return retry ? 1 : 0;
}

/* One attempt at the body; returns 1 when some tensor must retry in
 * global memory, 0 with *body set, -1 on failure. */
static int try_body(fl_cg_kernel *cg, char **body)
{
	isl_ast_node *ast;
	int rc = fl_cg_attempt(cg, &ast);

	if (rc == 0 && ast)
		*body = print_ast(cg, ast);
	isl_ast_node_free(ast);
	if (rc == 0 && (!ast || cg->failed))
		return -1;
	return rc;
}

static bool ident_char(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && c >= '0' && c <= '9');
}

/* Whether a kernel name from layer 1 can be used as the C name. */
static bool valid_identifier(const char *s)
{
	if (!ident_char(s[0], true))
		return false;
	for (s++; *s; s++)
		if (!ident_char(*s, false))
			return false;
	return true;
}

/* The kernel's C name into buf. */
const char *fl_cg_kernel_cname(const fl_kernel *k, int index, char *buf,
			       size_t n)
{
	if (valid_identifier(k->name))
		snprintf(buf, n, "%s", k->name);
	else
		snprintf(buf, n, "fl_kernel_%d", index);
	return buf;
}

/* The comment above a kernel: its ops with provenance, placements. */
void fl_cg_kernel_comment(fl_strbuf *out, const fl_graph *g,
			  const fl_kernel *k, const char *cname,
			  const fl_cg_kernel *cg)
{
	char a[160], b[160], c[160];

	fl_strbuf_printf(out, "/* %s: %d op%s", cname, k->n_ops, k->n_ops == 1 ? "" : "s");
	if (k->group >= 0)
		fl_strbuf_printf(out, ", micro-graph %d", k->group);
	if (k->n_tile)
		fl_strbuf_printf(out, ", tiled");
	fl_strbuf_printf(out, "\n");
	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &g->ops[k->ops[i]];

		fl_sanitize_comment(op->name, a, sizeof a);
		fl_strbuf_printf(out, " *   op %d \"%s\": %s -> T%d", k->ops[i], a,
			  fl_op_kind_name(op->kind), op->out[0]);
		if (op->prov.origin && strcmp(op->prov.origin, op->name)) {
			fl_sanitize_comment(op->prov.origin, b, sizeof b);
			fl_strbuf_printf(out, ", from \"%s\"", b);
		}
		if (op->prov.compound) {
			fl_sanitize_comment(op->prov.compound, c, sizeof c);
			fl_strbuf_printf(out, ", opened from %s", c);
		}
		if (op->prov.rewrite) {
			fl_sanitize_comment(op->prov.rewrite, c, sizeof c);
			fl_strbuf_printf(out, ", rewritten by %s", c);
		}
		fl_strbuf_printf(out, "\n");
	}
	for (int i = 0; cg && i < cg->n_contract_notes; i++)
		fl_strbuf_printf(out, " *   %s\n", cg->contract_note[i]);
	if (cg && cg->pipeline_note[0])
		fl_strbuf_printf(out, " *   %s\n", cg->pipeline_note);
	for (int i = 0; cg && i < cg->n_split_notes; i++)
		fl_strbuf_printf(out, " *   %s\n", cg->split_note[i]);
	if (cg && cg->stream_note[0])
		fl_strbuf_printf(out, " *   %s\n", cg->stream_note);
	for (int t = 0; cg && t < g->n_tensors; t++) {
		const fl_cg_array *ar = &cg->arr[t];

		if (!ar->used || (!ar->local && !cg->why[t][0]))
			continue;
		fl_sanitize_comment(g->tensors[t].name, a, sizeof a);
		if (ar->reg && fl_cg_split_carries(cg, t))
			fl_strbuf_printf(out, " *   T%d \"%s\": register, carried "
					 "between split loops in T%d_s\n", t, a,
					 t);
		else if (ar->reg)
			fl_strbuf_printf(out, " *   T%d \"%s\": register (the scalar "
					 "T%d_r)\n", t, a, t);
		else if (ar->local && ar->rotate > 0)
			fl_strbuf_printf(out, " *   T%d \"%s\": tile-local, %lld of its "
					 "%lld rows at a time (row r in row r %% "
					 "%lld)\n", t, a, (long long)ar->rotate,
					 (long long)ar->size[ar->rotate_dim],
					 (long long)ar->rotate);
		else if (ar->local)
			fl_strbuf_printf(out, " *   T%d \"%s\": tile-local\n", t, a);
		else
			fl_strbuf_printf(out, " *   T%d \"%s\": global memory (%s)\n",
				  t, a, cg->why[t]);
	}
	fl_strbuf_printf(out, " */\n");
}

/* Pointer declarations of the global tensors the body uses. */
void fl_cg_global_decls(fl_strbuf *out, const fl_graph *g,
			const fl_cg_array *arr)
{
	bool any = false;

	for (int t = 0; t < g->n_tensors; t++) {
		const fl_shape *sh = &g->tensors[t].shape;
		const char *q = arr[t].written ? "" : "const ";
		const char *ty = fl_dtype_c_type(g->tensors[t].dtype);
		char dims[256] = "";
		size_t n = 0;

		if (!arr[t].used || arr[t].local)
			continue;
		any = true;
		if (sh->rank <= 1) {
			fl_strbuf_printf(out, "  %s%s *restrict T%d = (%s *)"
					 "bufs[%d];\n", q, ty, t, ty, t);
			continue;
		}
		for (int d = 1; d < sh->rank; d++)
			n += (size_t)snprintf(dims + n, sizeof dims - n, "[%lld]",
					      (long long)sh->dim[d]);
		fl_strbuf_printf(out, "  %s%s (*restrict T%d)%s = (%s%s (*)%s)"
			  "bufs[%d];\n", q, ty, t, dims, q, ty, dims, t);
	}
	if (!any)
		fl_strbuf_printf(out, "  (void)bufs;\n");
}

/* A custom op: cumsum along the last axis (in double, like the
 * reference) or a copy; rows run in parallel. */
static int custom_kernel(fl_strbuf *out, const fl_graph *g, const fl_op *op,
			 const char *cname, fl_error *err)
{
	const fl_shape *s = &g->tensors[op->in[0]].shape;
	int64_t n = fl_shape_numel(s), len = s->rank ? s->dim[s->rank - 1] : 1;
	const char *fn = "cumsum";

	if (fl_attr_string(&op->attrs, "fn", "cumsum", &fn, err) < 0)
		return -1;
	fl_strbuf_printf(out, "void %s(float *const *bufs)\n{\n"
		  "  const %s *restrict x = (const %s *)bufs[%d];\n"
		  "  %s *restrict y = (%s *)bufs[%d];\n", cname,
		  fl_dtype_c_type(g->tensors[op->in[0]].dtype),
		  fl_dtype_c_type(g->tensors[op->in[0]].dtype), op->in[0],
		  fl_dtype_c_type(g->tensors[op->out[0]].dtype),
		  fl_dtype_c_type(g->tensors[op->out[0]].dtype), op->out[0]);
	if (strcmp(fn, "cumsum") == 0)
		fl_strbuf_printf(out, "#pragma omp parallel for\n"
			  "  for (long r = 0; r < %lldL; r++) {\n"
			  "    double acc = 0.0;\n"
			  "    for (long j = 0; j < %lldL; j++) {\n"
			  "      acc += x[r * %lldL + j];\n"
			  "      y[r * %lldL + j] = (float)acc;\n"
			  "    }\n  }\n}\n\n", (long long)(n / len),
			  (long long)len, (long long)len, (long long)len);
	else
		fl_strbuf_printf(out, "#pragma omp parallel for\n"
			  "  for (long i = 0; i < %lldL; i++)\n"
			  "    y[i] = x[i];\n}\n\n", (long long)n);
	return 0;
}

/* The kernel's body, retrying with tensors moved to global memory until
 * every tile-local one is placed. */
static char *kernel_body(fl_cg_kernel *cg)
{
	char *body = NULL;

	cg->wide = fl_cg_kernel_is_wide(cg->g, cg->k);
	for (int attempt = 0; attempt <= cg->g->n_tensors + 1; attempt++) {
		int rc = try_body(cg, &body);

		if (rc <= 0)
			return rc < 0 ? NULL : body;
	}
	fl_error_set(cg->err, "kernel %s: placement did not settle",
		     cg->k->name);
	return NULL;
}

/* The tensors layer 1 placed tile-local or in registers that cg keeps
 * in global memory, with the reason, into *d (malloc'd) and *n. */
int fl_cg_note_demotions(const fl_cg_kernel *cg, fl_codegen_demotion **d,
			 int *n)
{
	const fl_kernel *k = cg->k;

	/* appended: a layer-3 kernel notes those of each branch */
	for (int i = 0; i < k->n_tensors; i++) {
		const fl_kernel_tensor *kt = &k->tensors[i];
		fl_codegen_demotion *grown;

		if (kt->place == FL_PLACE_GLOBAL || cg->arr[kt->tensor].local)
			continue;
		grown = realloc(*d, ((size_t)*n + 1) * sizeof *grown);
		if (!grown)
			return -1;
		*d = grown;
		grown[*n].tensor = kt->tensor;
		grown[*n].from = kt->place;
		snprintf(grown[*n].why, sizeof grown[*n].why, "%s",
			 cg->why[kt->tensor][0] ? cg->why[kt->tensor]
						: "the backend could not keep "
						  "it local");
		(*n)++;
	}
	return 0;
}

static int polyhedral_kernel(fl_strbuf *out, const fl_program *p,
			     const fl_kernel *k, const char *cname,
			     int64_t budget, fl_codegen_demotion **demoted,
			     int *n_demoted, fl_error *err)
{
	fl_cg_kernel cg;
	char *body = NULL;
	int rc = -1;

	if (!k->schedule) {
		fl_error_set(err, "kernel %s has no schedule", k->name);
		return -1;
	}
	if (fl_cg_init(&cg, p, k, err) == 0 &&
	    (cg.budget = budget > 0 ? budget : fl_machine_get()->l2) > 0 &&
	    (body = kernel_body(&cg))) {
		fl_cg_kernel_comment(out, p->graph, k, cname, &cg);
		fl_strbuf_printf(out, "void %s(float *const *bufs)\n{\n", cname);
		fl_cg_global_decls(out, p->graph, cg.arr);
		if (cg.uses_bounds)
			fl_strbuf_printf(out, "  const fl_bounds fl_b = "
					 "fl_bounds_hidden();\n");
		fl_strbuf_printf(out, "%s}\n\n", body);
		rc = 0;
		if (demoted && fl_cg_note_demotions(&cg, demoted, n_demoted) < 0) {
			fl_error_set(err, "codegen: out of memory");
			rc = -1;
		}
	}
	free(body);
	fl_cg_clear(&cg);
	return rc;
}

bool fl_cg_is_custom_kernel(const fl_program *p, const fl_kernel *k)
{
	return k->n_ops == 1 && p->graph->ops[k->ops[0]].kind == FL_OP_CUSTOM;
}

/* ---- layer 3: branches side by side ----------------------------------- */

/* The C function of branch b of kernel cname. */
static void branch_cname(const char *cname, int b, char *buf, size_t n)
{
	snprintf(buf, n, "%s_b%d", cname, b);
}

/* The kernel that runs the branches of a layer-3 kernel side by side:
 * one parallel region whose threads take different branches (one
 * OpenMP section each).  The branches' own parallel loops are nested
 * regions: nesting is off by default (OMP_MAX_ACTIVE_LEVELS), so it is
 * allowed here for the call, one level deeper, and each section gives
 * its nested regions its share of the cores, so that the branches
 * together use the machine once and do not oversubscribe it.  With
 * fewer cores than branches, a thread runs several sections in turn. */
static void branches_wrapper(fl_strbuf *out, const fl_kernel *k,
			     const char *cname)
{
	char bname[80];
	int n = k->n_branches;

	fl_strbuf_printf(out, "/* %s: layer 3 runs %d kernels side by side,"
			 " each on its share of the cores */\n"
			 "void %s(float *const *bufs)\n{\n"
			 "  int cores = omp_get_max_threads();\n"
			 "  int levels = omp_get_max_active_levels();\n"
			 "  int teams = cores < %d ? cores : %d;\n\n"
			 "  omp_set_max_active_levels(levels + 1);\n"
			 "#pragma omp parallel sections num_threads(teams)\n"
			 "  {\n", cname, n, cname, n, n);
	for (int b = 0; b < n; b++) {
		branch_cname(cname, b, bname, sizeof bname);
		fl_strbuf_printf(out, "#pragma omp section\n    {\n"
				 "      int share = cores / %d + "
				 "(%d < cores %% %d);\n\n"
				 "      omp_set_num_threads(share > 0 ? "
				 "share : 1);\n      %s(bufs);\n    }\n", n, b, n,
				 bname);
	}
	fl_strbuf_printf(out, "  }\n  omp_set_max_active_levels(levels);\n"
			 "}\n\n");
}

/* Each branch as a kernel function of its own, then the kernel that runs
 * them together. */
static int branches_kernel(fl_strbuf *out, const fl_program *p,
			   const fl_kernel *k, const char *cname,
			   int64_t budget, fl_codegen_demotion **demoted,
			   int *n_demoted, fl_error *err)
{
	char bname[80];

	for (int b = 0; b < k->n_branches; b++) {
		branch_cname(cname, b, bname, sizeof bname);
		if (polyhedral_kernel(out, p, &k->branches[b], bname, budget,
				      demoted, n_demoted, err) < 0)
			return -1;
	}
	branches_wrapper(out, k, cname);
	return 0;
}

int fl_cg_check_ops(const fl_program *p, const fl_kernel *k,
		    const char *cname, fl_error *err)
{
	for (int j = 0; j < k->n_ops; j++)
		if (k->ops[j] < 0 || k->ops[j] >= p->graph->n_ops) {
			fl_error_set(err, "kernel %s: op %d out of range",
				     cname, k->ops[j]);
			return -1;
		}
	return 0;
}

/* An opaque custom op has no implementation: its kernel is a comment
 * saying so, and the translation unit is refused (fl_codegen_c_unit). */
static int opaque_kernel(fl_strbuf *out, const fl_op *op, const char *cname)
{
	char what[256];

	fl_sanitize_comment(op->prov.source_op ? op->prov.source_op : op->name,
			    what, sizeof what);
	fl_strbuf_printf(out, "/* %s: no code.  %s%s is an opaque custom op: "
			 "fuselab has\n * no implementation of it, so this "
			 "program cannot be compiled or run. */\n\n", cname,
			 op->prov.source_op ? "ONNX " : "op ", what);
	return 0;
}

/* Kernel k of p by b's printer of its kind. */
static int kernel_function(const fl_cg_printers *b, fl_strbuf *out,
			   const fl_program *p, int i, int64_t budget,
			   fl_codegen_demotion **demoted, int *n_demoted,
			   fl_error *err)
{
	const fl_kernel *k = &p->kernels[i];
	char cname[64];

	fl_cg_kernel_cname(k, i, cname, sizeof cname);
	if (k->n_branches > 0)
		return b->branches(out, p, k, cname, budget, demoted,
				   n_demoted, err);
	if (fl_cg_check_ops(p, k, cname, err) < 0)
		return -1;
	if (fl_cg_is_custom_kernel(p, k)) {
		fl_cg_kernel_comment(out, p->graph, k, cname, NULL);
		if (!fl_op_computable(&p->graph->ops[k->ops[0]]))
			return opaque_kernel(out, &p->graph->ops[k->ops[0]],
					     cname);
		return b->custom(out, p->graph, &p->graph->ops[k->ops[0]],
				 cname, err);
	}
	return b->polyhedral(out, p, k, cname, budget, demoted, n_demoted,
			     err);
}

/* ---- the translation unit ------------------------------------------- */

/* The prologue of every generated file.
 *
 * Vector maths: glibc's libmvec has SIMD variants of logf and powf (exp,
 * tanh and erf call fl_expf, fl_tanhf and fl_erff of the maths runtime,
 * which follows the prologue: see runtime/math_rt.c); declaring them with
 * GCC's simd attribute lets the vectoriser call them from a vectorised loop (the runner links
 * -lmvec, compiles with -fno-math-errno, and retries with FL_NO_MVEC
 * defined and without -lmvec when that fails).  Their results are within
 * a few ulp of the scalar functions.  fminf and fmaxf are written out
 * so that they vectorise while keeping their NaN rule (a NaN operand
 * yields the other one); the calls do not vectorise without
 * -ffinite-math-only, which is not used. */
static const char file_prologue[] =
	"#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n"
	"#include <stdio.h>\n#include <stdlib.h>\n\n"
	"#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) \\\n"
	"    && defined(__GLIBC__) && !defined(FL_NO_MVEC)\n"
	"#if __GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 22)\n"
	"__attribute__((simd(\"notinbranch\"))) float logf(float);\n"
	"__attribute__((simd(\"notinbranch\"))) float powf(float, float);\n"
	"#endif\n"
		"#endif\n\n"
	"static inline float *fl_scratch_alloc(unsigned long n)\n"
	"{\n  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);\n\n"
	"  if (!p) {\n    fputs(\"fuselab kernel: out of memory for the scratch "
	"of tile-local buffers\\n\", stderr);\n    abort();\n  }\n"
	"  return p;\n}\n\n"
	"static inline float fl_fminf(float a, float b)\n"
	"{\n  return isnan(b) ? a : a < b ? a : b;\n}\n\n"
	"static inline float fl_fmaxf(float a, float b)\n"
	"{\n  return isnan(b) ? a : a > b ? a : b;\n}\n\n"
	"/* is_nan and is_inf on the bits: no compiler flag folds them */\n"
	"static inline uint32_t fl_float_bits(float x)\n"
	"{\n  union { float f; uint32_t u; } v = {.f = x};\n\n"
	"  return v.u;\n}\n\n"
	"static inline bool fl_isnan_bits(float x)\n"
	"{\n  return (fl_float_bits(x) & 0x7fffffffu) > 0x7f800000u;\n}\n\n"
	"static inline bool fl_isinf_bits(float x, int pos, int neg)\n"
	"{\n  return (pos && fl_float_bits(x) == 0x7f800000u) ||\n"
	"         (neg && fl_float_bits(x) == 0xff800000u);\n}\n\n"
	"#define floord(n, d) (((n) < 0) ? -((-(n) + (d) - 1) / (d)) "
	": (n) / (d))\n"
	"#define min(x, y) ((x) < (y) ? (x) : (y))\n"
	"#define max(x, y) ((x) > (y) ? (x) : (y))\n\n";

static void file_header(fl_strbuf *out, const fl_program *p)
{
	char name[160];

	fl_sanitize_comment(p->graph->name ? p->graph->name : "", name,
			    sizeof name);
	fl_strbuf_printf(out, "/* Generated by fuselab: graph \"%s\", strategy %s, "
		  "%d kernel%s.\n * Kernel fl_k<i> takes bufs[t] = the "
		  "row-major buffer of graph tensor t (T<t>), f32 unless "
		  "declared otherwise. */\n%s",
		  name, fl_strategy_name(p->strategy), p->n_kernels,
		  p->n_kernels == 1 ? "" : "s", file_prologue);
	fl_strbuf_printf(out, "%s\n%s\n", fl_math_rt_text, fl_half_rt_text);
}

/* The timing process's copy probe (interleave.c), in the unit so that
 * the copy runs on the OpenMP threads the kernels use: a copy on threads
 * of its own competed with the team's threads, which spin for a while
 * after each kernel, and on 2 cores measured 16 GB/s where this loop
 * measures 20-25 -- every kernel's "% copy" came out a third too high. */
static const char copy_pass[] =
	"/* the runner's copy probe, on this unit's OpenMP threads; returns "
	"how many */\n"
	"int omp_get_num_threads(void);\n"
	"int fl_copy_pass(float *restrict dst, const float *restrict src, "
	"long n);\n"
	"int fl_copy_pass(float *restrict dst, const float *restrict src, "
	"long n)\n"
	"{\n"
	"  int team = 1;\n\n"
	"  #pragma omp parallel\n"
	"  {\n"
	"    #pragma omp single nowait\n"
	"    team = omp_get_num_threads();\n"
	"    #pragma omp for schedule(static)\n"
	"    for (long i = 0; i < n; i++)\n"
	"      dst[i] = src[i];\n"
	"  }\n"
	"  return team;\n"
	"}\n";

static void kernel_table(fl_strbuf *out, const fl_program *p)
{
	char cname[64];

	fl_strbuf_printf(out, "const int fl_n_kernels = %d;\n", p->n_kernels);
	if (p->n_kernels == 0) {	/* C has no empty initialiser */
		fl_strbuf_printf(out, "void (*const fl_kernels[1])(float *const *) "
			  "= {0};\n");
		return;
	}
	fl_strbuf_printf(out, "void (*const fl_kernels[%d])(float *const *) = {\n",
		  p->n_kernels);
	for (int i = 0; i < p->n_kernels; i++)
		fl_strbuf_printf(out, "  %s,\n", fl_cg_kernel_cname(&p->kernels[i], i, cname,
						       sizeof cname));
	fl_strbuf_printf(out, "};\n");
}

/* Takes the text of b (NULL with a message when it ran out of memory). */
static char *sb_take(fl_strbuf *b, fl_error *err)
{
	char *text = fl_strbuf_take(b);

	if (!text)
		fl_error_set(err, "codegen: out of memory");
	return text;
}

int fl_cg_check_program(const fl_program *p, fl_error *err)
{
	if (!p || !p->graph || !p->ctx) {
		fl_error_set(err, "codegen: no program");
		return -1;
	}
	return 0;
}

char *fl_cg_kernel_text(const fl_cg_printers *b, const fl_program *p, int i,
			int64_t budget, fl_codegen_demotion **demoted,
			int *n_demoted, fl_error *err)
{
	fl_strbuf out = {0};

	if (demoted) {
		*demoted = NULL;
		*n_demoted = 0;
	}
	if (fl_cg_check_program(p, err) < 0)
		return NULL;
	if (i < 0 || i >= p->n_kernels) {
		fl_error_set(err, "codegen: no kernel %d", i);
		return NULL;
	}
	if (kernel_function(b, &out, p, i, budget, demoted, n_demoted,
			    err) < 0) {
		free(out.s);
		if (demoted) {
			free(*demoted);
			*demoted = NULL;
			*n_demoted = 0;
		}
		return NULL;
	}
	return sb_take(&out, err);
}

static const fl_cg_printers c_printers = {
	branches_kernel, custom_kernel, polyhedral_kernel,
};

char *fl_codegen_c_kernel_budget(const fl_program *p, int i,
				 int64_t local_budget,
				 fl_codegen_demotion **demoted, int *n_demoted,
				 fl_error *err)
{
	return fl_cg_kernel_text(&c_printers, p, i, local_budget, demoted,
				 n_demoted, err);
}

char *fl_codegen_c_kernel_placed(const fl_program *p, int i,
				 fl_codegen_demotion **demoted, int *n_demoted,
				 fl_error *err)
{
	return fl_codegen_c_kernel_budget(p, i, 0, demoted, n_demoted, err);
}

char *fl_codegen_c_kernel(const fl_program *p, int i, fl_error *err)
{
	return fl_codegen_c_kernel_placed(p, i, NULL, NULL, err);
}

/* Whether some kernel calls the contraction runtime, which the unit then
 * includes (it is compile time spent for nothing elsewhere). */
static bool uses_contractions(const fl_program *p,
			      const char *const *kernels)
{
	for (int i = 0; i < p->n_kernels; i++)
		if (kernels[i] && (strstr(kernels[i], "fl_contract_tile(") ||
				   strstr(kernels[i], "fl_ctile_open(")))
			return true;
	return false;
}

/* Whether some kernel runs layer-3 branches (and calls the OpenMP
 * runtime). */
static bool uses_branches(const fl_program *p)
{
	for (int i = 0; i < p->n_kernels; i++)
		if (p->kernels[i].n_branches > 0)
			return true;
	return false;
}

char *fl_codegen_c_unit(const fl_program *p, const char *const *kernels,
			fl_error *err)
{
	fl_strbuf out = {0};
	char cname[64];

	if (fl_cg_check_program(p, err) < 0 ||
	    fl_graph_check_computable(p->graph, "generate a program", err) < 0)
		return NULL;
	file_header(&out, p);
	fl_strbuf_printf(&out, "extern const int fl_n_kernels;\n"
		  "extern void (*const fl_kernels[])(float *const *);\n");
	for (int i = 0; i < p->n_kernels; i++)
		fl_strbuf_printf(&out, "void %s(float *const *bufs);\n",
			  fl_cg_kernel_cname(&p->kernels[i], i, cname, sizeof cname));
	fl_strbuf_printf(&out, "\n");
	if (uses_branches(p))
		fl_strbuf_printf(&out, "#include <omp.h>\n\n");
	if (uses_contractions(p, kernels))
		fl_strbuf_printf(&out, "#define FL_L1D %lld\n%s\n",
				 (long long)fl_machine_get()->l1d,
				 fl_cg_contract_runtime());
	for (int i = 0; i < p->n_kernels; i++)
		fl_strbuf_printf(&out, "%s", kernels[i]);
	kernel_table(&out, p);
	fl_strbuf_printf(&out, "\n%s", copy_pass);
	return sb_take(&out, err);
}

char *fl_cg_whole_unit(const fl_program *p, fl_cg_kernel_fn kernel,
		       fl_cg_unit_fn unit, fl_error *err)
{
	char **kernels;
	char *text = NULL;
	int i;

	if (fl_cg_check_program(p, err) < 0)
		return NULL;
	kernels = calloc((size_t)p->n_kernels + 1, sizeof *kernels);
	if (!kernels) {
		fl_error_set(err, "codegen: out of memory");
		return NULL;
	}
	for (i = 0; i < p->n_kernels; i++)
		if (!(kernels[i] = kernel(p, i, err)))
			break;
	if (i == p->n_kernels)
		text = unit(p, (const char *const *)kernels, err);
	for (int j = 0; j < p->n_kernels; j++)
		free(kernels[j]);
	free(kernels);
	return text;
}

char *fl_codegen_c(const fl_program *p, fl_error *err)
{
	return fl_cg_whole_unit(p, fl_codegen_c_kernel, fl_codegen_c_unit, err);
}

