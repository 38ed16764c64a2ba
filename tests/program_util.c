/* Hand-built programs for the code generator's tests (see
 * program_util.h).  The unfused builder follows ISL_GUIDE 1 (identity
 * band per statement, statements in a sequence); the fused one follows
 * ISL_GUIDE 5-6 (tile with scale 0 / shift 0, extension node for the
 * recomputed producer with the tile coordinates in its instance, box of
 * the per-tile footprint), which is also the contract layer 1 meets. */
#include "program_util.h"

#include <stdlib.h>
#include <string.h>

#include <isl/aff.h>
#include <isl/fixed_box.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include "poly.h"
#include "test_util.h"

static fl_poly_op *describe(isl_ctx *ctx, const fl_graph *g, int op)
{
	fl_error err = {""};
	fl_poly_op *po = fl_poly_describe(ctx, g, op, &err);

	if (!po)
		fail_msg("describe op %d: %s", op, err.msg);
	return po;
}

/* Member j of a statement's identity band is coincident when instances
 * writing the same element never differ in iterator j. */
static bool member_coincident(const fl_poly_stmt *s, int j)
{
	isl_map *same = isl_map_apply_range(isl_map_copy(s->write),
					    isl_map_reverse(isl_map_copy(s->write)));
	isl_set *d = isl_map_deltas(same);
	isl_set *d0 = isl_set_fix_si(isl_set_copy(d), isl_dim_set,
				     (unsigned)j, 0);
	isl_bool sub = isl_set_is_subset(d, d0);

	isl_set_free(d);
	isl_set_free(d0);
	return sub == isl_bool_true;
}

/* { S[i] -> [i] } as a partial schedule.  __isl_give. */
static isl_multi_union_pw_aff *identity_band(__isl_keep isl_set *dom)
{
	isl_map *id = isl_set_identity(isl_set_copy(dom));

	id = isl_map_reset_tuple_id(id, isl_dim_out);
	return isl_multi_union_pw_aff_from_union_map(isl_union_map_from_map(id));
}

/* One statement's schedule: its identity band with coincidence flags. */
static isl_schedule *stmt_schedule(const fl_poly_stmt *s)
{
	isl_schedule *sch = isl_schedule_from_domain(
		isl_union_set_from_set(isl_set_copy(s->domain)));
	isl_size n = isl_set_dim(s->domain, isl_dim_set);
	isl_schedule_node *node;

	if (n == 0)
		return sch;
	sch = isl_schedule_insert_partial_schedule(sch, identity_band(s->domain));
	node = isl_schedule_node_child(isl_schedule_get_root(sch), 0);
	isl_schedule_free(sch);
	for (int j = 0; j < n; j++)
		if (member_coincident(s, j))
			node = isl_schedule_node_band_member_set_coincident(node,
									   j, 1);
	sch = isl_schedule_node_get_schedule(node);
	isl_schedule_node_free(node);
	return sch;
}

/* Adds tensor t to the kernel's list (merging flags of repeats). */
static void add_tensor(fl_kernel *k, const fl_graph *g, int t, bool read,
		       bool written)
{
	fl_kernel_tensor *kt;

	for (int i = 0; i < k->n_tensors; i++)
		if (k->tensors[i].tensor == t) {
			k->tensors[i].read |= read;
			k->tensors[i].written |= written;
			return;
		}
	kt = &k->tensors[k->n_tensors++];
	memset(kt, 0, sizeof *kt);
	kt->tensor = t;
	kt->place = FL_PLACE_GLOBAL;
	kt->read = read;
	kt->written = written;
	kt->rank = g->tensors[t].shape.rank;
}

static void kernel_tensors(fl_kernel *k, const fl_graph *g)
{
	int n = 1;

	for (int i = 0; i < k->n_ops; i++)
		n += g->ops[k->ops[i]].n_in + 1;
	k->tensors = calloc((size_t)n, sizeof *k->tensors);
	assert_non_null(k->tensors);
	for (int i = 0; i < k->n_ops; i++) {
		const fl_op *op = &g->ops[k->ops[i]];

		for (int j = 0; j < op->n_in; j++)
			add_tensor(k, g, op->in[j], true, false);
		add_tensor(k, g, op->out[0], false, true);
	}
}

/* Domain, reads and writes of op `po` added to the kernel's model. */
static void add_model(fl_kernel *k, const fl_poly_op *po)
{
	for (int s = 0; s < po->n_stmts; s++) {
		const fl_poly_stmt *st = &po->stmts[s];
		isl_union_set *d = isl_union_set_from_set(isl_set_copy(st->domain));
		isl_union_map *w = isl_union_map_from_map(isl_map_copy(st->write));

		k->domain = k->domain ? isl_union_set_union(k->domain, d) : d;
		k->writes = k->writes ? isl_union_map_union(k->writes, w) : w;
		for (int r = 0; r < st->n_reads; r++) {
			isl_union_map *m = isl_union_map_from_map(
				isl_map_copy(st->reads[r].access));

			k->reads = k->reads ? isl_union_map_union(k->reads, m) : m;
		}
	}
}

static void kernel_init(fl_kernel *k, int id, const int *ops, int n_ops)
{
	memset(k, 0, sizeof *k);
	k->id = id;
	snprintf(k->name, sizeof k->name, "fl_k%d", id);
	k->group = -1;
	k->n_ops = n_ops;
	k->ops = malloc((size_t)n_ops * sizeof *k->ops);
	assert_non_null(k->ops);
	memcpy(k->ops, ops, (size_t)n_ops * sizeof *ops);
}

static void unfused_kernel(isl_ctx *ctx, const fl_graph *g, int op,
			   fl_kernel *k)
{
	fl_poly_op *po;

	kernel_init(k, op, &op, 1);
	kernel_tensors(k, g);
	if (g->ops[op].kind == FL_OP_CUSTOM)
		return;		/* opaque: a hand-written loop */
	po = describe(ctx, g, op);
	add_model(k, po);
	for (int s = 0; s < po->n_stmts; s++) {
		isl_schedule *one = stmt_schedule(&po->stmts[s]);

		k->schedule = k->schedule ? isl_schedule_sequence(k->schedule, one)
					  : one;
	}
	fl_poly_op_free(po);
	assert_non_null(k->schedule);
}

static fl_program *program_new(isl_ctx *ctx, const fl_graph *g,
			       fl_strategy s, int n)
{
	fl_program *p = calloc(1, sizeof *p);

	assert_non_null(p);
	p->strategy = s;
	p->graph = g;
	p->ctx = ctx;
	p->n_kernels = n;
	p->kernels = calloc((size_t)n + 1, sizeof *p->kernels);
	assert_non_null(p->kernels);
	return p;
}

fl_program *t_unfused_program(isl_ctx *ctx, const fl_graph *g)
{
	fl_program *p = program_new(ctx, g, FL_STRATEGY_UNFUSED, g->n_ops);

	for (int i = 0; i < g->n_ops; i++)
		unfused_kernel(ctx, g, i, &p->kernels[i]);
	return p;
}

/* ---- the tiled, fused kernel -------------------------------------- */

/* { S[i0..] -> [i0..i(n-1)] } over every statement of po.  __isl_give. */
static isl_multi_union_pw_aff *leading_band(const fl_poly_op *po, int n)
{
	isl_union_map *um = NULL;

	for (int s = 0; s < po->n_stmts; s++) {
		isl_set *d = po->stmts[s].domain;
		isl_size nd = isl_set_dim(d, isl_dim_set);
		isl_map *m = isl_set_identity(isl_set_copy(d));

		m = isl_map_project_out(m, isl_dim_out, (unsigned)n,
					(unsigned)(nd - n));
		m = isl_map_reset_tuple_id(m, isl_dim_out);
		um = um ? isl_union_map_add_map(um, m) : isl_union_map_from_map(m);
	}
	return isl_multi_union_pw_aff_from_union_map(um);
}

/* { S[i0..] -> [in..] }: the iterators after the first n.  __isl_give. */
static isl_multi_union_pw_aff *trailing_band(__isl_keep isl_set *d, int n)
{
	isl_map *m = isl_set_identity(isl_set_copy(d));

	m = isl_map_project_out(m, isl_dim_out, 0, (unsigned)n);
	m = isl_map_reset_tuple_id(m, isl_dim_out);
	return isl_multi_union_pw_aff_from_union_map(isl_union_map_from_map(m));
}

/* C's schedule: the output band over every statement, then a sequence of
 * the statements, each with its remaining iterators as a band.  Returns
 * the node at the output band. */
static isl_schedule_node *consumer_tree(const fl_poly_op *pc, int rank)
{
	isl_union_set *dom = NULL;
	isl_union_set_list *filters;
	isl_schedule_node *n;
	isl_schedule *s;

	filters = isl_union_set_list_alloc(isl_set_get_ctx(pc->stmts[0].domain),
					   pc->n_stmts);
	for (int i = 0; i < pc->n_stmts; i++) {
		isl_union_set *d = isl_union_set_from_set(
			isl_set_copy(pc->stmts[i].domain));

		filters = isl_union_set_list_add(filters, isl_union_set_copy(d));
		dom = dom ? isl_union_set_union(dom, d) : d;
	}
	s = isl_schedule_from_domain(dom);
	s = isl_schedule_insert_partial_schedule(s, leading_band(pc, rank));
	n = isl_schedule_node_child(isl_schedule_get_root(s), 0);
	isl_schedule_free(s);
	for (int j = 0; j < rank; j++)
		n = isl_schedule_node_band_member_set_coincident(n, j, 1);
	n = isl_schedule_node_band_set_permutable(n, 1);
	n = isl_schedule_node_child(n, 0);
	n = isl_schedule_node_insert_sequence(n, filters);
	for (int i = 0; i < pc->n_stmts; i++) {
		isl_set *d = pc->stmts[i].domain;

		n = isl_schedule_node_child(isl_schedule_node_child(n, i), 0);
		if (isl_set_dim(d, isl_dim_set) > rank)
			n = isl_schedule_node_insert_partial_schedule(n,
				trailing_band(d, rank));
		n = isl_schedule_node_parent(isl_schedule_node_parent(n));
	}
	return isl_schedule_node_parent(n);
}

/* Tiles the band at n with `tile` on its last two members. */
static isl_schedule_node *tile_band(isl_schedule_node *n, int rank,
				    int64_t tile)
{
	isl_ctx *ctx = isl_schedule_node_get_ctx(n);
	int scale = isl_options_get_tile_scale_tile_loops(ctx);
	int shift = isl_options_get_tile_shift_point_loops(ctx);
	isl_multi_val *sizes = isl_multi_val_zero(isl_schedule_node_band_get_space(n));

	for (int j = 0; j < rank; j++)
		sizes = isl_multi_val_set_val(sizes, j, isl_val_int_from_si(ctx,
			j >= rank - 2 ? (long)tile : 1));
	isl_options_set_tile_scale_tile_loops(ctx, 0);
	isl_options_set_tile_shift_point_loops(ctx, 0);
	n = isl_schedule_node_band_tile(n, sizes);
	isl_options_set_tile_scale_tile_loops(ctx, scale);
	isl_options_set_tile_shift_point_loops(ctx, shift);
	return n;
}

/* C's reads of tensor t.  __isl_give. */
static isl_union_map *reads_of(const fl_poly_op *pc, int t, const fl_graph *g)
{
	isl_union_map *um = NULL;

	for (int s = 0; s < pc->n_stmts; s++)
		for (int r = 0; r < pc->stmts[s].n_reads; r++) {
			const fl_poly_read *rd = &pc->stmts[s].reads[r];
			int tt = rd->input < 0 ? g->ops[pc->op].out[0]
					       : g->ops[pc->op].in[rd->input];
			isl_union_map *m;

			if (tt != t)
				continue;
			m = isl_union_map_from_map(isl_map_copy(rd->access));
			um = um ? isl_union_map_union(um, m) : m;
		}
	return um;
}

/* [t] -> S_r[t, i] from the extension [t] -> S[i].  __isl_give. */
static isl_map *renamed_extension(__isl_take isl_map *ext, const char *name)
{
	isl_map *m = isl_map_reverse(isl_map_domain_map(ext));

	m = isl_map_flatten_range(m);
	return isl_map_set_tuple_name(m, isl_dim_out, name);
}

/* Inserts "parallel" marks above bands with a coincident first member. */
static isl_schedule_node *mark_band(isl_schedule_node *n, void *user)
{
	(void)user;
	if (isl_schedule_node_get_type(n) != isl_schedule_node_band ||
	    isl_schedule_node_band_member_get_coincident(n, 0) != isl_bool_true)
		return n;
	return isl_schedule_node_insert_mark(n,
		isl_id_alloc(isl_schedule_node_get_ctx(n), "parallel", NULL));
}

/* The recomputed producer's band { S_r[t.., i..] -> [i..] } under the
 * extension er (keep), grafted before the point band n (taken); returns
 * the whole schedule with "parallel" marks. */
static isl_schedule *graft_producer(isl_schedule_node *n,
				    __isl_keep isl_map *er, int n_tile)
{
	isl_set *rset = isl_map_range(isl_map_copy(er));
	isl_schedule_node *ext;
	isl_schedule *s;

	ext = isl_schedule_node_from_extension(isl_union_map_from_map(
		isl_map_copy(er)));
	ext = isl_schedule_node_child(ext, 0);
	ext = isl_schedule_node_insert_partial_schedule(ext,
		trailing_band(rset, n_tile));
	ext = isl_schedule_node_parent(ext);
	isl_set_free(rset);
	n = isl_schedule_node_graft_before(n, ext);
	s = isl_schedule_node_get_schedule(n);
	isl_schedule_node_free(n);
	return isl_schedule_map_schedule_node_bottom_up(s, &mark_band, NULL);
}

/* inst2tile of the recomputed statements: { S_r[t.., i..] -> [t..] }. */
static isl_union_pw_multi_aff *add_recompute_tiles(
	isl_union_pw_multi_aff *i2t, __isl_keep isl_map *er, int n_tile)
{
	isl_space *sp = isl_space_range(isl_map_get_space(er));
	isl_size n = isl_space_dim(sp, isl_dim_set);
	isl_multi_aff *proj = isl_multi_aff_project_out_map(sp, isl_dim_set,
		(unsigned)n_tile, (unsigned)(n - n_tile));

	proj = isl_multi_aff_reset_tuple_id(proj, isl_dim_out);
	return isl_union_pw_multi_aff_add_pw_multi_aff(i2t,
		isl_pw_multi_aff_from_multi_aff(proj));
}

/* Tensor a is placed `place`; tile-local gets the box of the footprint
 * tile2a (taken). */
static void place_local(fl_kernel *k, int a, __isl_take isl_union_map *tile2a,
			fl_placement place)
{
	isl_map *m = isl_map_from_union_map(tile2a);

	for (int i = 0; i < k->n_tensors; i++) {
		fl_kernel_tensor *kt = &k->tensors[i];
		isl_multi_val *size;

		if (kt->tensor != a)
			continue;
		kt->place = place;
		if (place != FL_PLACE_TILE_LOCAL)
			continue;
		kt->box_isl = isl_map_get_range_simple_fixed_box_hull(m);
		size = isl_fixed_box_get_size(kt->box_isl);
		for (int d = 0; d < kt->rank; d++) {
			isl_val *v = isl_multi_val_get_at(size, d);

			kt->box[d] = isl_val_get_num_si(v);
			isl_val_free(v);
		}
		isl_multi_val_free(size);
		snprintf(kt->why, sizeof kt->why, "recomputed per tile");
	}
	isl_map_free(m);
}

fl_program *t_fused_program(isl_ctx *ctx, const fl_graph *g, int64_t tile,
			    fl_placement place)
{
	fl_program *p = program_new(ctx, g, FL_STRATEGY_APOLLO_L1, 1);
	fl_kernel *k = &p->kernels[0];
	const int ops[2] = {0, 1};
	int a = g->ops[0].out[0], rank = g->tensors[g->ops[1].out[0]].shape.rank;
	fl_poly_op *pp, *pc;
	isl_schedule_node *n;
	isl_union_map *tile2a, *e;
	isl_map *er;
	char name[64];

	assert_int_equal(g->n_ops, 2);
	kernel_init(k, 0, ops, 2);
	kernel_tensors(k, g);
	pp = describe(ctx, g, 0);
	pc = describe(ctx, g, 1);
	add_model(k, pp);
	add_model(k, pc);
	n = tile_band(consumer_tree(pc, rank), rank, tile);
	n = isl_schedule_node_child(n, 0);	/* the point band */
	k->inst2tile = isl_schedule_node_get_prefix_schedule_union_pw_multi_aff(n);
	tile2a = isl_union_map_apply_range(
		isl_union_map_reverse(isl_union_map_from_union_pw_multi_aff(
			isl_union_pw_multi_aff_copy(k->inst2tile))),
		reads_of(pc, a, g));
	e = isl_union_map_apply_range(isl_union_map_copy(tile2a),
		isl_union_map_reverse(isl_union_map_from_map(
			isl_map_copy(pp->stmts[0].write))));
	snprintf(name, sizeof name, "%s_r0", pp->stmts[0].name);
	er = renamed_extension(isl_map_from_union_map(e), name);
	k->schedule = graft_producer(n, er, rank);
	k->inst2tile = add_recompute_tiles(k->inst2tile, er, rank);
	place_local(k, a, tile2a, place);
	k->n_tile = rank;
	for (int j = 0; j < rank; j++)
		k->tile[j] = j >= rank - 2 ? tile : 1;
	isl_map_free(er);
	fl_poly_op_free(pp);
	fl_poly_op_free(pc);
	assert_non_null(k->schedule);
	assert_non_null(k->inst2tile);
	return p;
}
