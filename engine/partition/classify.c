/* Classification of primitive ops as elementwise, broadcast, reduction or
 * opaque (DESIGN 1.2 step 3, ISL_GUIDE 9), from the isl dataflow relation
 * F_k: I_k -> O of each input -- never from the op's name.
 *
 * Per input k (inputs with one element are left out when another input
 * has more, so that a [1] broadcast to [8] is still seen):
 *   1. a may-read (data-dependent access: gather) is general;
 *   2. fast path: when F_k equals the relation numpy broadcasting and
 *      keep-dims reduction would give for the two shapes (aligned dims of
 *      equal extent equal, the rest free), the outcome of steps 3-5 is
 *      known from the shapes and is recorded without projecting
 *      (elementwise, broadcast and reduction ops take this path);
 *   3. whole map: neither single-valued nor injective is general (a
 *      contraction: matmul, conv);
 *   4. per input dim a of extent > 1 and output dim b of extent > 1 (a
 *      dim of extent 1 is a one-point side, unrelated to everything; an
 *      input dim of extent 1 is a broadcast source), the 1-D pair P_ab
 *      (other dims projected out): P = dom x ran means unrelated;
 *      single-valued and injective is bijective only when it is the
 *      identity at the aligned position (b = a + rank_out - rank_in,
 *      numpy's right alignment) with equal extents, else general
 *      (transpose, slice, concat, pad, reshape); anything else is general
 *      (a window such as stride-2 pooling maps many to one onto an extent
 *      > 1).  An input dim related to no output dim is reduced
 *      (surjective), or a selection (general) when one index is read;
 *   5. an output dim of extent > 1 related to no input dim is a broadcast
 *      (injective) when the input reaches all of it, else a placement
 *      (general).
 * Type: any general -> O, else any surjective -> R, else any injective ->
 * B, else E.  The reason is the first finding of the deciding kind; the
 * scan stops at the first general one. */
#include "classify.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <isl/ilp.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/val.h>

#include "poly.h"

/* The first finding of each relation kind, in scan order. */
typedef struct findings {
	bool has[4];
	char first[4][FL_CLASSIFY_REASON];
} findings;

/* What the per-input helpers share. */
typedef struct input_scan {
	int k;
	const fl_shape *si, *so;
	bool out_related[FL_MAX_RANK];
	findings *f;
} input_scan;

/* Result of a scan step: keep going, stop (a general relation decides
 * the type), or an isl error. */
enum { SCAN_GO = 0, SCAN_STOP = 1, SCAN_ERROR = -1 };

const char *fl_op_type_name(fl_op_type t)
{
	static const char *const n[] = {"E", "B", "R", "O"};

	return (unsigned)t < 4 ? n[t] : "?";
}

const char *fl_op_type_long_name(fl_op_type t)
{
	static const char *const n[] = {"elementwise", "broadcast",
					"reduction", "opaque"};

	return (unsigned)t < 4 ? n[t] : "?";
}

const char *fl_dim_rel_name(fl_dim_rel r)
{
	static const char *const n[] = {"bijective", "injective",
					"surjective", "general"};

	return (unsigned)r < 4 ? n[r] : "?";
}

static void note(findings *f, fl_dim_rel rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records a finding unless one of the same kind came first. */
static void note(findings *f, fl_dim_rel rel, const char *fmt, ...)
{
	va_list ap;

	if (f->has[rel])
		return;
	f->has[rel] = true;
	va_start(ap, fmt);
	vsnprintf(f->first[rel], sizeof f->first[rel], fmt, ap);
	va_end(ap);
}

/* m with every dim of type t but `pos` projected out.  __isl_give. */
static isl_map *keep_dim(__isl_take isl_map *m, enum isl_dim_type t,
			 int pos)
{
	isl_size n = isl_map_dim(m, t);

	if (n < 0)
		return isl_map_free(m);
	m = isl_map_project_out(m, t, (unsigned)pos + 1,
				(unsigned)(n - pos - 1));
	return isl_map_project_out(m, t, 0, (unsigned)pos);
}

/* The 1-D set of the values that dim `pos` of the domain (t = isl_dim_in)
 * or range (isl_dim_out) of f takes.  __isl_give. */
static isl_set *dim_values(__isl_keep isl_map *f, enum isl_dim_type t,
			   int pos)
{
	isl_map *m = keep_dim(isl_map_copy(f), t, pos);

	return t == isl_dim_in ? isl_map_domain(m) : isl_map_range(m);
}

/* Whether the 1-D set s (taken) is a single point. */
static isl_bool is_single_point(__isl_take isl_set *s)
{
	isl_val *lo = isl_set_dim_min_val(isl_set_copy(s), 0);
	isl_val *hi = isl_set_dim_max_val(s, 0);
	isl_bool eq = lo && hi ? isl_val_eq(lo, hi) : isl_bool_error;

	isl_val_free(lo);
	isl_val_free(hi);
	return eq;
}

/* Whether the 1-D set s (taken) is all of 0 <= x < extent. */
static isl_bool is_whole_extent(__isl_take isl_set *s, int64_t extent)
{
	isl_val *hi = isl_val_int_from_si(isl_set_get_ctx(s), (long)extent - 1);
	isl_set *all = isl_set_universe(isl_set_get_space(s));
	isl_bool eq;

	all = isl_set_lower_bound_si(all, isl_dim_set, 0, 0);
	all = isl_set_upper_bound_val(all, isl_dim_set, 0, hi);
	eq = isl_set_is_equal(s, all);
	isl_set_free(s);
	isl_set_free(all);
	return eq;
}

/* Whether p relates every point of its domain to every point of its
 * range, i.e. the two dims are unrelated. */
static isl_bool is_product(__isl_keep isl_map *p)
{
	isl_map *prod = isl_map_from_domain_and_range(
		isl_map_domain(isl_map_copy(p)),
		isl_map_range(isl_map_copy(p)));
	isl_bool eq = isl_map_is_equal(p, prod);

	isl_map_free(prod);
	return eq;
}

/* Whether the 1-D relation p is x -> x once the array names are dropped. */
static isl_bool is_plain_identity(__isl_keep isl_map *p)
{
	isl_map *q = isl_map_copy(p);
	isl_bool id;

	q = isl_map_reset_tuple_id(q, isl_dim_in);
	q = isl_map_reset_tuple_id(q, isl_dim_out);
	id = isl_map_is_identity(q);
	isl_map_free(q);
	return id;
}

/* ---- findings, worded for the event log ---------------------------- */

static void note_reduced(input_scan *s, int a)
{
	note(s->f, FL_REL_SURJECTIVE,
	     "in[%d] dim %d (extent %lld) reduced: it indexes no output dim "
	     "(surjective)", s->k, a, (long long)s->si->dim[a]);
}

static void note_broadcast(input_scan *s, int b)
{
	int a = b - (s->so->rank - s->si->rank);
	long long eb = (long long)s->so->dim[b];

	if (a >= 0 && s->si->dim[a] == 1)
		note(s->f, FL_REL_INJECTIVE,
		     "in[%d] dim %d (extent 1) -> out dim %d (extent %lld): "
		     "injective (broadcast)", s->k, a, b, eb);
	else
		note(s->f, FL_REL_INJECTIVE,
		     "in[%d] -> out dim %d (extent %lld): not indexed by the "
		     "input, injective (broadcast)", s->k, b, eb);
}

static void note_contraction(input_scan *s)
{
	note(s->f, FL_REL_GENERAL,
	     "in[%d] -> out: neither single-valued nor injective (a "
	     "contraction, general)", s->k);
}

/* ---- fast path: the numpy-aligned relation ------------------------- */

/* Whether every output dim b and its aligned input dim a = b - shift
 * (extent 1 when missing) have equal extents or one of them 1. */
static bool has_aligned_form(const input_scan *s)
{
	int shift = s->so->rank - s->si->rank;

	if (shift < 0)
		return false;
	for (int b = 0; b < s->so->rank; b++) {
		int64_t ea = b >= shift ? s->si->dim[b - shift] : 1;
		int64_t eb = s->so->dim[b];

		if (ea != eb && ea != 1 && eb != 1)
			return false;
	}
	return true;
}

/* m with 0 <= dim pos of type t < extent.  __isl_give. */
static isl_map *bound_dim(__isl_take isl_map *m, enum isl_dim_type t,
			  int pos, int64_t extent)
{
	isl_val *hi = isl_val_int_from_si(isl_map_get_ctx(m), (long)extent - 1);

	m = isl_map_lower_bound_si(m, t, (unsigned)pos, 0);
	return isl_map_upper_bound_val(m, t, (unsigned)pos, hi);
}

/* The relation that numpy broadcasting and keep-dims reduction give on
 * f's space: aligned dims of equal extent are equal, the others range
 * freely over their boxes.  __isl_give. */
static isl_map *aligned_relation(const input_scan *s, __isl_keep isl_map *f)
{
	isl_map *m = isl_map_universe(isl_map_get_space(f));
	int shift = s->so->rank - s->si->rank;

	for (int a = 0; a < s->si->rank; a++)
		m = bound_dim(m, isl_dim_in, a, s->si->dim[a]);
	for (int b = 0; b < s->so->rank; b++) {
		m = bound_dim(m, isl_dim_out, b, s->so->dim[b]);
		if (b >= shift && s->si->dim[b - shift] == s->so->dim[b])
			m = isl_map_equate(m, isl_dim_in, b - shift,
					   isl_dim_out, b);
	}
	return m;
}

/* The findings of an input whose relation is the aligned one: exactly
 * what the per-dimension scan finds on it, without the projections.
 * Aligned dims of equal extent are bijective pairs; an input dim > 1 over
 * an output dim of extent 1 is reduced; an output dim > 1 over an input
 * dim of extent 1 (or none) is a broadcast; both at once make the whole
 * map neither single-valued nor injective. */
static int aligned_findings(input_scan *s)
{
	int shift = s->so->rank - s->si->rank;
	bool red = false, bc = false;

	for (int b = 0; b < s->so->rank; b++) {
		int64_t ea = b >= shift ? s->si->dim[b - shift] : 1;

		red |= ea > 1 && s->so->dim[b] == 1;
		bc |= ea == 1 && s->so->dim[b] > 1;
	}
	if (red && bc) {
		note_contraction(s);
		return SCAN_STOP;
	}
	for (int b = shift; b < s->so->rank; b++)
		if (s->si->dim[b - shift] > 1 && s->so->dim[b] == 1)
			note_reduced(s, b - shift);
	for (int b = 0; b < s->so->rank; b++)
		if (s->so->dim[b] > 1 &&
		    (b < shift || s->si->dim[b - shift] == 1))
			note_broadcast(s, b);
	return SCAN_GO;
}

/* Tries the fast path: 1 when f is the aligned relation (findings
 * recorded in *rc), 0 when the full scan is needed, -1 on error. */
static int try_aligned(input_scan *s, __isl_keep isl_map *f, int *rc)
{
	isl_map *m;
	isl_bool eq;

	if (!has_aligned_form(s))
		return 0;
	m = aligned_relation(s, f);
	eq = isl_map_is_equal(f, m);
	isl_map_free(m);
	if (eq < 0)
		return -1;
	if (eq)
		*rc = aligned_findings(s);
	return eq;
}

/* ---- full scan ----------------------------------------------------- */

/* Classifies a one-to-one pair: bijective only when it is the identity at
 * the aligned position with equal extents. */
static int one_to_one_pair(input_scan *s, __isl_keep isl_map *p, int a,
			   int b)
{
	int64_t ea = s->si->dim[a], eb = s->so->dim[b];
	int aligned = a + s->so->rank - s->si->rank;
	isl_bool id = is_plain_identity(p);
	char why[96];

	if (id < 0)
		return SCAN_ERROR;
	if (!id)
		snprintf(why, sizeof why, "one-to-one but shifted or strided");
	else if (b != aligned && aligned >= 0)
		snprintf(why, sizeof why, "one-to-one but not aligned "
			 "(broadcasting pairs in dim %d with out dim %d)", a,
			 aligned);
	else if (b != aligned)
		snprintf(why, sizeof why, "one-to-one but not aligned "
			 "(broadcasting pairs in dim %d with no out dim)", a);
	else if (ea != eb)
		snprintf(why, sizeof why, "one-to-one but the extents differ");
	else
		return SCAN_GO;
	note(s->f, FL_REL_GENERAL,
	     "in[%d] dim %d (extent %lld) -> out dim %d (extent %lld): %s "
	     "(general)", s->k, a, (long long)ea, b, (long long)eb, why);
	return SCAN_STOP;
}

/* Classifies the related pair (a, b) of input s->k. */
static int classify_pair(input_scan *s, __isl_keep isl_map *p, int a, int b)
{
	isl_bool sv = isl_map_is_single_valued(p);
	isl_bool inj = sv < 0 ? isl_bool_error : isl_map_is_injective(p);
	const char *why;

	if (sv < 0 || inj < 0)
		return SCAN_ERROR;
	if (sv && inj)
		return one_to_one_pair(s, p, a, b);
	why = sv ? "many-to-one window" : inj ? "one-to-many" : "many-to-many";
	note(s->f, FL_REL_GENERAL,
	     "in[%d] dim %d -> out dim %d (extent %lld): %s (general)", s->k,
	     a, b, (long long)s->so->dim[b], why);
	return SCAN_STOP;
}

/* An input dim (extent > 1) related to no output dim: reduced, unless
 * only one of its indices is read (a selection, general). */
static int unrelated_in_dim(input_scan *s, __isl_keep isl_map *f, int a)
{
	isl_bool one = is_single_point(dim_values(f, isl_dim_in, a));

	if (one < 0)
		return SCAN_ERROR;
	if (!one) {
		note_reduced(s, a);
		return SCAN_GO;
	}
	note(s->f, FL_REL_GENERAL,
	     "in[%d] dim %d (extent %lld): only one index is read (a "
	     "selection, general)", s->k, a, (long long)s->si->dim[a]);
	return SCAN_STOP;
}

/* Pairs input dim a (extent > 1) with every output dim of extent > 1
 * (a pair with a one-point side is always unrelated). */
static int scan_in_dim(input_scan *s, __isl_keep isl_map *f, int a)
{
	isl_map *fa = keep_dim(isl_map_copy(f), isl_dim_in, a);
	bool related = false;
	int rc = SCAN_GO;

	for (int b = 0; b < s->so->rank && rc == SCAN_GO; b++) {
		isl_map *p;
		isl_bool prod;

		if (s->so->dim[b] == 1)
			continue;
		p = keep_dim(isl_map_copy(fa), isl_dim_out, b);
		prod = is_product(p);
		if (prod < 0)
			rc = SCAN_ERROR;
		else if (!prod) {
			related = true;
			s->out_related[b] = true;
			rc = classify_pair(s, p, a, b);
		}
		isl_map_free(p);
	}
	isl_map_free(fa);
	if (rc == SCAN_GO && !related)
		rc = unrelated_in_dim(s, f, a);
	return rc;
}

/* An output dim (extent > 1) related to no input dim: a broadcast when
 * the input reaches all of it, else a placement (general). */
static int unrelated_out_dim(input_scan *s, __isl_keep isl_map *f, int b)
{
	isl_bool all = is_whole_extent(dim_values(f, isl_dim_out, b),
				       s->so->dim[b]);

	if (all < 0)
		return SCAN_ERROR;
	if (all) {
		note_broadcast(s, b);
		return SCAN_GO;
	}
	note(s->f, FL_REL_GENERAL,
	     "in[%d] -> out dim %d (extent %lld): written only in part, "
	     "independently of the input (a placement, general)", s->k, b,
	     (long long)s->so->dim[b]);
	return SCAN_STOP;
}

/* Whole-map tests, then the per-dimension scan of F = F_k. */
static int scan_relation(input_scan *s, __isl_keep isl_map *f)
{
	isl_bool sv = isl_map_is_single_valued(f);
	isl_bool inj = isl_bool_true;	/* only asked when not single-valued */
	int rc = SCAN_GO;

	if (sv == isl_bool_false)
		inj = isl_map_is_injective(f);
	if (sv < 0 || inj < 0)
		return SCAN_ERROR;
	if (!sv && !inj) {
		note_contraction(s);
		return SCAN_STOP;
	}
	for (int a = 0; a < s->si->rank && rc == SCAN_GO; a++)
		if (s->si->dim[a] > 1)
			rc = scan_in_dim(s, f, a);
	for (int b = 0; b < s->so->rank && rc == SCAN_GO; b++)
		if (!s->out_related[b] && s->so->dim[b] > 1)
			rc = unrelated_out_dim(s, f, b);
	return rc;
}

/* Whether every read of input k is exact (no data-dependent access). */
static bool reads_exact(const fl_poly_op *p, int k)
{
	for (int i = 0; i < p->n_stmts; i++)
		for (int r = 0; r < p->stmts[i].n_reads; r++)
			if (p->stmts[i].reads[r].input == k &&
			    !p->stmts[i].reads[r].exact)
				return false;
	return true;
}

/* Classifies input k's relation: the aligned fast path, else the scan. */
static int scan_flow(input_scan *s, __isl_keep isl_map *f)
{
	int rc = SCAN_GO;
	int fast = try_aligned(s, f, &rc);

	if (fast < 0)
		return SCAN_ERROR;
	return fast ? rc : scan_relation(s, f);
}

/* Scans input k of op description p; single-element inputs are left out
 * when `skip_scalars` (some input has more than one element). */
static int scan_input(isl_ctx *ctx, const fl_graph *g, const fl_poly_op *p,
		      int k, bool skip_scalars, findings *f)
{
	const fl_op *op = &g->ops[p->op];
	input_scan s = {k, &g->tensors[op->in[k]].shape,
			&g->tensors[op->out[0]].shape, {false}, f};
	isl_map *rel;
	int rc;

	if (skip_scalars && fl_shape_numel(s.si) == 1)
		return SCAN_GO;
	if (!reads_exact(p, k)) {
		note(f, FL_REL_GENERAL, "in[%d]: data-dependent read (by "
		     "index), general", k);
		return SCAN_STOP;
	}
	rel = fl_poly_dataflow(p, k);
	if (!rel)
		return isl_ctx_last_error(ctx) == isl_error_none ? SCAN_GO
								 : SCAN_ERROR;
	rc = scan_flow(&s, rel);
	isl_map_free(rel);
	return rc;
}

/* Whether some input of op has more than one element.  Only then are
 * single-element inputs left out: broadcasting a [1] to [8] or
 * concatenating scalars still has to be seen. */
static bool has_tensor_input(const fl_graph *g, const fl_op *op)
{
	for (int k = 0; k < op->n_in; k++)
		if (fl_shape_numel(&g->tensors[op->in[k]].shape) > 1)
			return true;
	return false;
}

/* The type and reason from the findings. */
static void decide(const findings *f, fl_classification *c)
{
	static const fl_dim_rel order[] = {FL_REL_GENERAL, FL_REL_SURJECTIVE,
					   FL_REL_INJECTIVE};
	static const fl_op_type type[] = {FL_TYPE_O, FL_TYPE_R, FL_TYPE_B};

	for (int i = 0; i < 3; i++) {
		if (f->has[order[i]]) {
			c->type = type[i];
			snprintf(c->reason, sizeof c->reason, "%s",
				 f->first[order[i]]);
			return;
		}
	}
	c->type = FL_TYPE_E;
	snprintf(c->reason, sizeof c->reason,
		 "every input maps one-to-one onto the output");
}

int fl_classify_op(isl_ctx *ctx, const fl_graph *g, int op,
		   fl_classification *c, fl_error *err)
{
	fl_poly_op *p;
	findings f;
	bool skip;
	int rc = SCAN_GO;

	isl_ctx_reset_error(ctx);
	p = fl_poly_describe(ctx, g, op, err);
	if (!p)
		return -1;
	memset(&f, 0, sizeof f);
	skip = has_tensor_input(g, &g->ops[op]);
	for (int k = 0; k < g->ops[op].n_in && rc == SCAN_GO; k++)
		rc = scan_input(ctx, g, p, k, skip, &f);
	fl_poly_op_free(p);
	if (rc == SCAN_ERROR) {
		const char *msg = isl_ctx_last_error_msg(ctx);

		fl_error_set(err, "op \"%s\": isl failed while classifying%s%s",
			     g->ops[op].name, msg ? ": " : "", msg ? msg : "");
		return -1;
	}
	decide(&f, c);
	return 0;
}
