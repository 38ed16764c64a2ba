/* Classification of primitive ops as elementwise, broadcast, reduction or
 * opaque (DESIGN 1.2 step 3, ISL_GUIDE 9), from the isl dataflow relation
 * F_k: I_k -> O of each input -- never from the op's name.
 *
 * Per input k (inputs with one element are skipped):
 *   1. a may-read (data-dependent access, gather) is general;
 *   2. whole map: neither single-valued nor injective is general (a
 *      contraction: matmul, conv);
 *   3. per input dim a, F projected onto (a -> all output dims):
 *      a single read index is a broadcast source when the extent is 1
 *      (neutral here; the output side reports the broadcast) and a
 *      selection (general) otherwise; then per output dim b the 1-D pair
 *      P_ab: equal to dom x ran means unrelated; single-valued and
 *      injective is bijective only if it is the identity, at the aligned
 *      position (b = a + rank_out - rank_in, numpy's right alignment) and
 *      with equal extents, else general (transpose, slice, concat, pad);
 *      single-valued only is surjective when out extent 1, else a window
 *      (general); anything else is general.  An input dim related to no
 *      output dim is reduced (surjective);
 *   4. an output dim of extent > 1 related to no input dim is a broadcast
 *      (injective).  Output dims of extent 1 carry no data and are ignored.
 * Type: any general -> O, else any surjective -> R, else any injective ->
 * B, else E.  The reason is the first finding of the deciding relation;
 * the scan stops at the first general relation. */
#include "classify.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <isl/map.h>
#include <isl/set.h>

#include "poly.h"

/* The first finding of each relation kind, in scan order. */
typedef struct findings {
	bool has[4];
	char first[4][FL_CLASSIFY_REASON];
} findings;

/* What the per-input helpers share. */
typedef struct input_scan {
	isl_ctx *ctx;
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

/* Classifies a one-to-one pair: bijective only when it is the identity at
 * the aligned position with equal extents. */
static int one_to_one_pair(input_scan *s, __isl_keep isl_map *p, int a,
			   int b)
{
	int64_t ea = s->si->dim[a], eb = s->so->dim[b];
	isl_bool id = is_plain_identity(p);
	const char *why;

	if (id < 0)
		return SCAN_ERROR;
	if (!id)
		why = "one-to-one but shifted or strided";
	else if (b != a + s->so->rank - s->si->rank)
		why = "one-to-one but moved to another position";
	else if (ea != eb)
		why = "one-to-one but the extents differ";
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
	if (sv && s->so->dim[b] == 1) {
		note(s->f, FL_REL_SURJECTIVE,
		     "in[%d] dim %d -> out dim %d: many-to-one onto extent 1 "
		     "(surjective, a reduction)", s->k, a, b);
		return SCAN_GO;
	}
	why = sv ? "many-to-one window" : inj ? "one-to-many" : "many-to-many";
	note(s->f, FL_REL_GENERAL,
	     "in[%d] dim %d -> out dim %d (extent %lld): %s (general)", s->k,
	     a, b, (long long)s->so->dim[b], why);
	return SCAN_STOP;
}

/* Pairs input dim a (fa: F with the other input dims projected out) with
 * every output dim; an input dim related to none is reduced. */
static int pair_in_dim(input_scan *s, __isl_keep isl_map *fa, int a)
{
	bool related = false;

	for (int b = 0; b < s->so->rank; b++) {
		isl_map *p = keep_dim(isl_map_copy(fa), isl_dim_out, b);
		isl_bool prod = is_product(p);
		int rc = SCAN_GO;

		if (prod < 0)
			rc = SCAN_ERROR;
		else if (!prod) {
			related = true;
			s->out_related[b] = true;
			rc = classify_pair(s, p, a, b);
		}
		isl_map_free(p);
		if (rc != SCAN_GO)
			return rc;
	}
	if (!related)
		note(s->f, FL_REL_SURJECTIVE,
		     "in[%d] dim %d (extent %lld) reduced: it indexes no output "
		     "dim (surjective)", s->k, a, (long long)s->si->dim[a]);
	return SCAN_GO;
}

/* Scans input dim a of F. */
static int scan_in_dim(input_scan *s, __isl_keep isl_map *f, int a)
{
	isl_map *fa = keep_dim(isl_map_copy(f), isl_dim_in, a);
	isl_set *dom = isl_map_domain(isl_map_copy(fa));
	isl_bool single = isl_set_is_singleton(dom);
	int rc;

	isl_set_free(dom);
	if (single < 0)
		rc = SCAN_ERROR;
	else if (single && s->si->dim[a] == 1)
		rc = SCAN_GO;	/* broadcast source: see report_broadcasts */
	else if (single) {
		note(s->f, FL_REL_GENERAL,
		     "in[%d] dim %d (extent %lld): only one index is read "
		     "(a selection, general)", s->k, a,
		     (long long)s->si->dim[a]);
		rc = SCAN_STOP;
	} else
		rc = pair_in_dim(s, fa, a);
	isl_map_free(fa);
	return rc;
}

/* Output dims of extent > 1 that no input dim indexes: broadcasts. */
static void report_broadcasts(input_scan *s)
{
	int shift = s->so->rank - s->si->rank;

	for (int b = 0; b < s->so->rank; b++) {
		int a = b - shift;
		long long eb = (long long)s->so->dim[b];

		if (s->out_related[b] || eb == 1)
			continue;
		if (a >= 0 && s->si->dim[a] == 1)
			note(s->f, FL_REL_INJECTIVE,
			     "in[%d] dim %d (extent 1) -> out dim %d (extent "
			     "%lld): injective (broadcast)", s->k, a, b, eb);
		else
			note(s->f, FL_REL_INJECTIVE,
			     "in[%d] -> out dim %d (extent %lld): not indexed "
			     "by the input, injective (broadcast)", s->k, b, eb);
	}
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

/* Whole-map tests, then the per-dimension scan of F = F_k. */
static int scan_relation(input_scan *s, __isl_keep isl_map *f)
{
	isl_bool sv = isl_map_is_single_valued(f);
	isl_bool inj = sv < 0 ? isl_bool_error : isl_map_is_injective(f);

	if (sv < 0 || inj < 0)
		return SCAN_ERROR;
	if (!sv && !inj) {
		note(s->f, FL_REL_GENERAL,
		     "in[%d] -> out: neither single-valued nor injective (a "
		     "contraction, general)", s->k);
		return SCAN_STOP;
	}
	for (int a = 0; a < s->si->rank; a++) {
		int rc = scan_in_dim(s, f, a);

		if (rc != SCAN_GO)
			return rc;
	}
	report_broadcasts(s);
	return SCAN_GO;
}

/* Scans input k of op description p. */
static int scan_input(isl_ctx *ctx, const fl_graph *g, const fl_poly_op *p,
		      int k, findings *f)
{
	const fl_op *op = &g->ops[p->op];
	input_scan s = {ctx, k, &g->tensors[op->in[k]].shape,
			&g->tensors[op->out[0]].shape, {false}, f};
	isl_map *rel;
	int rc;

	if (fl_shape_numel(s.si) == 1)
		return SCAN_GO;
	if (!reads_exact(p, k)) {
		note(f, FL_REL_GENERAL, "in[%d]: data-dependent read (by index), "
		     "general", k);
		return SCAN_STOP;
	}
	rel = fl_poly_dataflow(p, k);
	if (!rel)
		return isl_ctx_last_error(ctx) == isl_error_none ? SCAN_GO
								 : SCAN_ERROR;
	rc = scan_relation(&s, rel);
	isl_map_free(rel);
	return rc;
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
	int rc = SCAN_GO;

	isl_ctx_reset_error(ctx);
	p = fl_poly_describe(ctx, g, op, err);
	if (!p)
		return -1;
	memset(&f, 0, sizeof f);
	for (int k = 0; k < g->ops[op].n_in && rc == SCAN_GO; k++)
		rc = scan_input(ctx, g, p, k, &f);
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
