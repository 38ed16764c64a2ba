/* Graphviz exporter (see dot.h).
 *
 * Everything is built as a cgraph graph and either written by agwrite
 * (.dot: no layout, so large graphs export at once) or laid out by dot
 * and rendered by gvc into memory (.svg, .png: in a forked child, see
 * render_to); the bytes then go through fl_out_write_file, so a failed
 * export leaves nothing behind.
 *
 * Labels are plain Graphviz strings: lines end in "\n" (or "\l" for
 * left-justified isl text), and a backslash in a name or an isl text is
 * doubled so that dot does not read it as an escape such as \N.  Quotes
 * are agwrite's business; braces only matter in record shapes, which are
 * not used. */
#include "dot.h"

#include <errno.h>
#include <gvc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "output.h"
#include "stitch.h"
#include "strbuf.h"

#define WRAP_COLS 60		/* isl text wrapped at this many columns */
#define WRAP_LINES 40		/* and cut after this many lines */

/* One Graphviz context for the process, never freed: each gvContext reads
 * the plugin configuration into a buffer gvFreeContext does not free
 * (Graphviz 2.43), and loading the plugins takes milliseconds
 * (views/graph_layout.c keeps its own for the same reason). */
static GVC_t *shared_gvc;

/* Graphviz would print its warnings to stderr; an exporter never prints,
 * and a failed layout or render is reported through its return value. */
static int swallow(char *msg)
{
	(void)msg;
	return 0;
}

static GVC_t *dot_gvc(void)
{
	if (!shared_gvc) {
		agseterr(AGMAX);
		agseterrf(swallow);
		shared_gvc = gvContext();
	}
	return shared_gvc;
}

/* ---- writing: agwrite into memory, or gvc rendering ---------------------- */

static int put_str(void *chan, const char *str)
{
	fl_strbuf_printf(chan, "%s", str);
	return 0;
}

static int flush_none(void *chan)
{
	(void)chan;
	return 0;
}

/* agwrite hands its text to the graph's io discipline; ours appends it to
 * the fl_strbuf passed as the channel. */
static Agiodisc_t mem_io;
static Agdisc_t mem_disc;

static Agraph_t *graph_open(const char *name)
{
	dot_gvc();		/* silences cgraph before it can complain */
	mem_io.afread = AgIoDisc.afread;
	mem_io.putstr = put_str;
	mem_io.flush = flush_none;
	mem_disc.mem = &AgMemDisc;
	mem_disc.id = &AgIdDisc;
	mem_disc.io = &mem_io;
	return agopen((char *)name, Agdirected, &mem_disc);
}

static void set(void *obj, const char *name, const char *value)
{
	agsafeset(obj, (char *)name, (char *)value, "");
}

static int write_dot(Agraph_t *gr, const char *file, fl_error *err)
{
	fl_strbuf b = {0};
	char *text;
	int rc;

	if (agwrite(gr, &b) != 0) {
		free(fl_strbuf_take(&b));
		fl_error_set(err, "%s: cannot write the graph", file);
		return -1;
	}
	text = fl_strbuf_take(&b);
	if (!text) {
		fl_error_set(err, "%s: out of memory", file);
		return -1;
	}
	rc = fl_out_write_file(file, text, strlen(text), err);
	free(text);
	return rc;
}

/* Lays gr out and renders it into memory; 0 with the bytes in *buf (free
 * with gvFreeRenderData), or -1 with the reason. */
static int render_mem(Agraph_t *gr, const char *file, const char *format,
		      char **buf, unsigned int *len, fl_error *err)
{
	GVC_t *gvc = dot_gvc();
	int rc;

	*buf = NULL;
	if (!gvc) {
		fl_error_set(err, "%s: cannot start Graphviz", file);
		return -1;
	}
	if (gvLayout(gvc, gr, "dot") != 0) {
		fl_error_set(err, "%s: Graphviz could not lay the graph out",
			     file);
		return -1;
	}
	rc = gvRenderData(gvc, gr, format, buf, len);
	gvFreeLayout(gvc, gr);
	if (rc != 0 || !*buf) {
		if (*buf)
			gvFreeRenderData(*buf);
		fl_error_set(err, "%s: Graphviz cannot render %s", file,
			     format);
		return -1;
	}
	return 0;
}

static int render_here(Agraph_t *gr, const char *file, const char *format,
		       fl_error *err)
{
	char *buf;
	unsigned int len;
	int rc;

	if (render_mem(gr, file, format, &buf, &len, err) < 0)
		return -1;
	rc = fl_out_write_file(file, buf, len, err);
	gvFreeRenderData(buf);
	return rc;
}

/* The child's side: render, send the bytes, and end with _exit (no
 * atexit handlers, no stdio flushing, no leak check). */
static void render_child(Agraph_t *gr, const char *file, const char *format,
			 int fd)
{
	char *buf;
	unsigned int len, done = 0;
	fl_error err;

	if (render_mem(gr, file, format, &buf, &len, &err) < 0)
		_exit(3);
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(4);
		done += (unsigned int)n;
	}
	_exit(0);
}

/* Reads everything the child sends; NULL when out of memory or on a read
 * error (the caller still reaps the child). */
static char *read_all(int fd, size_t *len)
{
	size_t cap = 1 << 16;
	char *buf = malloc(cap), *more;
	ssize_t n;

	*len = 0;
	while (buf) {
		if (*len == cap) {
			more = realloc(buf, cap * 2);
			if (!more)
				break;
			buf = more;
			cap *= 2;
		}
		n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		if (n == 0)
			return buf;
		*len += (size_t)n;
	}
	free(buf);
	return NULL;
}

static int reap(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Whether this process runs one thread.  A child forked from a process
 * with threads (the explorer's workers, the font-loading threads pango
 * starts once text was laid out here) can inherit a lock another thread
 * held at the fork, the allocator's or fontconfig's, and hang. */
static bool single_threaded(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	int threads = 0;

	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &threads) == 1)
			break;
	if (f)
		fclose(f);
	return threads == 1;
}

/* Lays out and renders in a forked child that sends the bytes back
 * through a pipe: Graphviz 2.43 leaks on every layout of a graph with
 * clusters (dot_mincross's virtual edges) and pango keeps font caches,
 * which would pile up in a long-lived explorer (and fail the sanitizer's
 * leak check); a Graphviz abort kills only the child.  This process then
 * writes the file, so safe writes and their failure hook apply as
 * everywhere.  Renders here when no child can be made, or safely forked
 * (a process with threads: the explorer; there an export is a deliberate
 * act and its leak stays small). */
static int render_to(Agraph_t *gr, const char *file, const char *format,
		     fl_error *err)
{
	int fd[2], status, rc;
	char *buf;
	size_t len;
	pid_t pid;

	if (!single_threaded() || pipe(fd) < 0)
		return render_here(gr, file, format, err);
	pid = fork();
	if (pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return render_here(gr, file, format, err);
	}
	if (pid == 0) {
		close(fd[0]);
		render_child(gr, file, format, fd[1]);
	}
	close(fd[1]);
	buf = read_all(fd[0], &len);
	close(fd[0]);
	status = reap(pid);
	if (status == 0 && buf) {
		rc = fl_out_write_file(file, buf, len, err);
		free(buf);
		return rc;
	}
	free(buf);
	if (status == 3)
		fl_error_set(err, "%s: Graphviz could not lay out or render "
			     "the %s picture", file, format);
	else if (status == 0)
		fl_error_set(err, "%s: out of memory", file);
	else
		fl_error_set(err, "%s: the Graphviz renderer stopped "
			     "(status %d)", file, status);
	return -1;
}

static int check_format(const char *file, const char *format, fl_error *err)
{
	if (format && (!strcmp(format, "dot") || !strcmp(format, "svg") ||
		       !strcmp(format, "png")))
		return 0;
	fl_error_set(err, "%s: unknown picture format \"%s\" (dot, svg, png)",
		     file, format ? format : "");
	return -1;
}

static int emit(Agraph_t *gr, const char *file, const char *format,
		fl_error *err)
{
	if (!strcmp(format, "dot"))
		return write_dot(gr, file, err);
	return render_to(gr, file, format, err);
}

const char *fl_export_format_of(const char *file)
{
	const char *dot = file ? strrchr(file, '.') : NULL;

	if (!dot || strchr(dot, '/'))
		return NULL;
	if (!strcasecmp(dot, ".dot") || !strcasecmp(dot, ".gv"))
		return "dot";
	if (!strcasecmp(dot, ".svg"))
		return "svg";
	if (!strcasecmp(dot, ".png"))
		return "png";
	return NULL;
}

void fl_export_graph_opts_default(fl_export_graph_opts *o)
{
	memset(o, 0, sizeof *o);
	o->neighbourhood = -1;
}

/* ---- labels -------------------------------------------------------------- */

/* Appends text with each backslash doubled (dot reads \N, \G, \l ...). */
static void put_escaped(fl_strbuf *b, const char *text, size_t n)
{
	for (size_t i = 0; i < n && text[i]; i++) {
		if (text[i] == '\\')
			fl_strbuf_printf(b, "\\\\");
		else if (text[i] == '\n')
			fl_strbuf_printf(b, " ");
		else
			fl_strbuf_printf(b, "%c", text[i]);
	}
}

static void put_text(fl_strbuf *b, const char *text)
{
	put_escaped(b, text, strlen(text));
}

/* Appends isl text as left-justified lines: a new line after each "; "
 * (one statement or piece per line), long pieces wrapped at spaces, at
 * most WRAP_LINES lines. */
static void put_wrapped(fl_strbuf *b, const char *text)
{
	const char *p = text;
	int lines = 0;

	while (*p && lines < WRAP_LINES) {
		size_t n = strlen(p), cut = n, semi;
		const char *s = strstr(p, "; ");

		semi = s ? (size_t)(s - p) + 2 : n;
		cut = semi < WRAP_COLS ? semi : n;
		if (cut > WRAP_COLS) {
			cut = WRAP_COLS;
			while (cut > WRAP_COLS / 2 && p[cut - 1] != ' ')
				cut--;
			if (p[cut - 1] != ' ')
				cut = WRAP_COLS;
		}
		put_escaped(b, p, cut);
		fl_strbuf_printf(b, "\\l");
		p += cut;
		lines++;
	}
	if (*p)
		fl_strbuf_printf(b, "...\\l");
}

/* Sets attribute `name` of obj to the text built in b (freed). */
static int set_built(void *obj, const char *name, fl_strbuf *b)
{
	char *text = fl_strbuf_take(b);

	if (!text)
		return -1;
	set(obj, name, text);
	free(text);
	return 0;
}

/* ---- the graph: what is drawn -------------------------------------------- */

/* Fill colours: one per E/B/R/O type once classified, one per op class
 * before; ops in no cluster are grey whatever they are. */
static const char *const type_fill[] = {
	[FL_TYPE_E] = "#cfe2f3", [FL_TYPE_B] = "#d9ead3",
	[FL_TYPE_R] = "#f4cccc", [FL_TYPE_O] = "#d9d2e9",
};
static const char *const class_fill[] = {
	[FL_CLASS_UNARY] = "#cfe2f3", [FL_CLASS_BINARY] = "#fff2cc",
	[FL_CLASS_REDUCE] = "#f4cccc", [FL_CLASS_OPAQUE] = "#d9d2e9",
	[FL_CLASS_CUSTOM] = "#eeeeee", [FL_CLASS_COMPOUND] = "#fce5cd",
};
#define GREY_FILL "#eeeeee"
#define HOT_COLOUR "red"
#define PAR_COLOUR "blue"

typedef struct gx {
	const fl_session *s;
	const fl_export_graph_opts *o;
	const fl_graph *g;
	const fl_program *prog;
	const fl_event *last;	/* the decision that led here, or NULL */
	int n_units;		/* kernels, or micro-graph slots */
	int *unit_of;		/* op -> unit, -1: none */
	bool *boxed;		/* unit -> drawn as a cluster */
	int *par_unit;		/* unit -> parallel group (1..), 0: none */
	int *par_op;		/* op -> parallel group when ops are units */
	bool *hot;		/* op -> named by the last decision */
	bool *shown;		/* op -> drawn */
	Agnode_t **node;	/* op -> its node */
	Agraph_t **cluster;	/* unit -> its cluster, made when needed */
	Agraph_t *root;
} gx;

static bool classified(const gx *x)
{
	const fl_partition *p = fl_engine_partition(x->s);

	return p && p->classified && p->type_of && p->n_ops == x->g->n_ops;
}

/* The units: kernels once layer 1 ran, else micro-graphs once the
 * partition made them; a unit whose ops are all excluded from fusion is
 * not boxed. */
static void find_units(gx *x)
{
	const fl_partition *p = fl_engine_partition(x->s);

	for (int i = 0; i < x->g->n_ops; i++)
		x->unit_of[i] = -1;
	if (x->prog) {
		x->n_units = x->prog->n_kernels;
		for (int k = 0; k < x->prog->n_kernels; k++) {
			const fl_kernel *kn = &x->prog->kernels[k];

			for (int j = 0; j < kn->n_ops; j++)
				if (kn->ops[j] < x->g->n_ops)
					x->unit_of[kn->ops[j]] = k;
		}
	} else if (p && p->n_groups > 0 && p->group_of &&
		   p->n_ops == x->g->n_ops) {
		x->n_units = p->n_groups;
		for (int i = 0; i < x->g->n_ops; i++) {
			int m = p->group_of[i];

			if (m >= 0 && m < p->n_groups && p->groups[m].alive)
				x->unit_of[i] = m;
		}
	}
}

static void find_boxed(gx *x)
{
	const fl_partition *p = fl_engine_partition(x->s);
	bool excl = p && p->cluster_of && p->n_ops == x->g->n_ops;

	for (int i = 0; i < x->g->n_ops; i++) {
		int u = x->unit_of[i];

		if (u >= 0 && (!excl || p->cluster_of[i] >= 0))
			x->boxed[u] = true;
	}
}

/* Gives the units of accepted try tr of round rd group number n. */
static void mark_group(gx *x, const fl_par_analysis *a,
		       const fl_par_round *rd, const fl_par_try *tr, int n)
{
	for (int c = tr->first; c < tr->first + tr->count && c < rd->n; c++) {
		int id = a->units[rd->cand[c]].id;

		if (a->kind == FL_PAR_OPS && id < x->g->n_ops)
			x->par_op[id] = n;
		else if (a->kind != FL_PAR_OPS && id < x->n_units)
			x->par_unit[id] = n;
	}
}

/* Marks the units of every group the parallel analysis accepted, numbered
 * from 1 in the analysis's order.  Once layer 3 ran, the groups it
 * stitched are kernels with branches (drawn by make_cluster) and no
 * other group is marked: what the analysis would make of the stitched
 * program is no decision of the session. */
static int find_parallel(gx *x, fl_error *err)
{
	fl_par_analysis *a;
	int n = 0;

	if (fl_engine_parallel(x->s))
		return 0;
	a = fl_stitch_parallel_analyze(x->g, fl_engine_partition(x->s),
				       x->prog, NULL, err);
	if (!a)
		return -1;
	for (int si = 0; si < a->n_sets; si++)
		for (int r = 0; r < a->sets[si].n_rounds; r++) {
			const fl_par_round *rd = &a->sets[si].rounds[r];

			for (int t = 0; t < rd->n_tries; t++)
				if (rd->tries[t].accepted)
					mark_group(x, a, rd, &rd->tries[t],
						   ++n);
		}
	fl_par_analysis_free(a);
	return 0;
}

static void find_hot(gx *x)
{
	if (!x->last)
		return;
	for (int i = 0; i < x->last->n_ops; i++) {
		int op = fl_graph_find_op(x->g, x->last->ops[i]);

		if (op >= 0)
			x->hot[op] = true;
	}
}

/* Which ops to draw: all, or the decision's ops and k hops around them
 * (all when the decision names no op of the graph). */
static int find_shown(gx *x)
{
	const fl_graph *g = x->g;
	int k = x->o->neighbourhood, *dist, seeds = 0;

	for (int i = 0; i < g->n_ops; i++)
		x->shown[i] = true;
	if (k < 0)
		return 0;
	dist = malloc(((size_t)g->n_ops + 1) * sizeof *dist);
	if (!dist)
		return -1;
	for (int i = 0; i < g->n_ops; i++) {
		dist[i] = x->hot[i] ? 0 : -1;
		seeds += x->hot[i];
	}
	for (int level = 0; seeds && level < k; level++)
		for (int c = 0; c < g->n_ops; c++)
			for (int j = 0; j < g->ops[c].n_in; j++) {
				int p = g->tensors[g->ops[c].in[j]].producer;

				if (p < 0)
					continue;
				if (dist[p] == level && dist[c] < 0)
					dist[c] = level + 1;
				if (dist[c] == level && dist[p] < 0)
					dist[p] = level + 1;
			}
	for (int i = 0; seeds && i < g->n_ops; i++)
		x->shown[i] = dist[i] >= 0;
	free(dist);
	return 0;
}

/* ---- the graph: drawing -------------------------------------------------- */

/* A node name not taken yet, from base (tensors and the legend share the
 * namespace of the op names). */
static Agnode_t *new_node(Agraph_t *gr, const char *base)
{
	char name[320];

	snprintf(name, sizeof name, "%s", base);
	for (int i = 2; agnode(gr, name, 0); i++)
		snprintf(name, sizeof name, "%s #%d", base, i);
	return agnode(gr, name, 1);
}

static const char *kernel_tag(const gx *x, int k, char *buf, size_t n)
{
	const fl_ladder_step *t = x->o->timed;

	buf[0] = '\0';
	if (!t)
		return buf;
	for (int i = 0; i < t->n_kernels; i++)
		if (!strcmp(t->kernels[i].name, x->prog->kernels[k].name) &&
		    t->kernels[i].r.n_timed > 0)
			snprintf(buf, n, "\\nmedian %.3f ms",
				 t->kernels[i].r.seconds * 1e3);
	return buf;
}

/* The micro-graph a unit stands for (a kernel's may be none). */
static const fl_micro_graph *unit_group(const gx *x, int u)
{
	const fl_partition *p = fl_engine_partition(x->s);
	int id = x->prog ? x->prog->kernels[u].group : u;

	if (!p || id < 0 || id >= p->n_groups)
		return NULL;
	return &p->groups[id];
}

/* The gain layer 3 estimated for the kernel it named `kernel`, in
 * seconds; -1 when it made no such kernel. */
static double parallel_gain(const gx *x, const char *kernel)
{
	const fl_par_analysis *a = fl_engine_parallel(x->s);

	for (int si = 0; a && si < a->n_sets; si++)
		for (int r = 0; r < a->sets[si].n_rounds; r++) {
			const fl_par_round *rd = &a->sets[si].rounds[r];

			for (int t = 0; t < rd->n_tries; t++)
				if (rd->tries[t].stitched &&
				    !strcmp(rd->tries[t].kernel, kernel))
					return rd->tries[t].gain;
		}
	return -1;
}

/* Micro-graphs of kernel k: more than one once layer 2 stitched it. */
static int kernel_groups(const gx *x, const fl_kernel *k)
{
	return fl_stitch_kernel_groups(k, fl_engine_partition(x->s), NULL, 0);
}

/* "stitched (layer 2): G0 + G3" for a kernel stitching micro-graphs. */
static void stitched_label(const gx *x, const fl_kernel *k, fl_strbuf *b)
{
	int ids[32], n = fl_stitch_kernel_groups(k, fl_engine_partition(x->s),
						 ids, 32);

	fl_strbuf_printf(b, "stitched (layer 2):");
	for (int i = 0; i < n && i < 32; i++)
		fl_strbuf_printf(b, "%s G%d", i ? " +" : "", ids[i]);
}

/* What layers 2 and 3 made of kernel u, for its cluster's label. */
static void layers_label(const gx *x, int u, fl_strbuf *b)
{
	const fl_kernel *k = &x->prog->kernels[u];
	double gain;

	if (k->n_branches > 0) {
		gain = parallel_gain(x, k->name);
		fl_strbuf_printf(b, "\\nparallel group (layer 3): %d branches",
				 k->n_branches);
		if (gain >= 0)
			fl_strbuf_printf(b, ", gain %.1f us", gain * 1e6);
	} else if (kernel_groups(x, k) > 1) {
		fl_strbuf_printf(b, "\\n");
		stitched_label(x, k, b);
	}
}

static int make_cluster(gx *x, int u)
{
	const fl_micro_graph *m = unit_group(x, u);
	const fl_kernel *k = x->prog ? &x->prog->kernels[u] : NULL;
	bool par = x->par_unit[u] || (k && k->n_branches > 0);
	fl_strbuf b = {0};
	char name[64], tag[64];
	Agraph_t *c;

	if (k)
		snprintf(name, sizeof name, "cluster_%s", k->name);
	else
		snprintf(name, sizeof name, "cluster_G%d", u);
	c = agsubg(x->root, name, 1);
	if (!c)
		return -1;
	x->cluster[u] = c;
	if (k)
		fl_strbuf_printf(&b, "%s", k->name);
	/* a stitched kernel's micro-graphs label its sub-clusters */
	if (m && (!k || (k->n_branches == 0 && kernel_groups(x, k) < 2)))
		fl_strbuf_printf(&b, "%sG%d type %s\\nrules: %s",
				 k ? "\\n" : "", m->id,
				 fl_op_type_name(m->type),
				 m->history[0] ? m->history : "none");
	if (k) {
		layers_label(x, u, &b);
		fl_strbuf_printf(&b, "%s", kernel_tag(x, u, tag, sizeof tag));
	}
	if (x->par_unit[u])
		fl_strbuf_printf(&b, "\\nparallel group P%d", x->par_unit[u]);
	set(c, "style", x->par_unit[u] ? "rounded,dashed" :
			par ? "rounded,bold" : "rounded");
	set(c, "color", par ? PAR_COLOUR : "grey40");
	set(c, "penwidth", par ? "2" : "1");
	set(c, "labeljust", "l");
	return set_built(c, "label", &b);
}

/* The sub-cluster `name` of parent, made with its label and style the
 * first time. */
static Agraph_t *sub_cluster(Agraph_t *parent, const char *name,
			     fl_strbuf *label, const char *style,
			     const char *colour)
{
	Agraph_t *c = agsubg(parent, (char *)name, 0);

	if (c) {
		free(fl_strbuf_take(label));
		return c;
	}
	c = agsubg(parent, (char *)name, 1);
	if (!c || set_built(c, "label", label) < 0)
		return NULL;
	set(c, "style", style);
	set(c, "color", colour);
	set(c, "labeljust", "l");
	return c;
}

/* Inside kernel k's cluster (or a branch's) `in`, named `base`: the
 * sub-cluster of op's micro-graph when k stitched several (layer 2),
 * else `in` itself. */
static Agraph_t *group_cluster(gx *x, const fl_kernel *k, Agraph_t *in,
			       const char *base, int op)
{
	const fl_partition *p = fl_engine_partition(x->s);
	const fl_micro_graph *m;
	fl_strbuf b = {0};
	char name[128];
	int gid;

	if (!in || kernel_groups(x, k) < 2 || !p->group_of ||
	    op >= p->n_ops || (gid = p->group_of[op]) < 0)
		return in;
	m = &p->groups[gid];
	snprintf(name, sizeof name, "%s_G%d", base, gid);
	fl_strbuf_printf(&b, "G%d type %s\\nrules: %s", gid,
			 fl_op_type_name(m->type),
			 m->history[0] ? m->history : "none");
	return sub_cluster(in, name, &b, "rounded,dotted", "grey40");
}

/* The branch of layer-3 kernel k holding op, -1. */
static int branch_of(const fl_kernel *k, int op)
{
	for (int b = 0; b < k->n_branches; b++)
		for (int i = 0; i < k->branches[b].n_ops; i++)
			if (k->branches[b].ops[i] == op)
				return b;
	return -1;
}

/* The innermost cluster op goes into inside kernel u's cluster: its
 * branch's (layer 3), then its micro-graph's when the kernel or the
 * branch stitched several (layer 2). */
static Agraph_t *op_cluster(gx *x, int u, int op)
{
	const fl_kernel *k = &x->prog->kernels[u];
	char base[96];
	fl_strbuf b = {0};
	Agraph_t *in;
	int br;

	snprintf(base, sizeof base, "cluster_%s", k->name);
	if (k->n_branches == 0)
		return group_cluster(x, k, x->cluster[u], base, op);
	br = branch_of(k, op);
	if (br < 0)
		return x->cluster[u];
	k = &k->branches[br];
	snprintf(base + strlen(base), sizeof base - strlen(base), "_b%d", br);
	fl_strbuf_printf(&b, "branch %d\\n", br + 1);
	if (kernel_groups(x, k) > 1)
		stitched_label(x, k, &b);
	else if (unit_group(x, u) && k->group >= 0)
		fl_strbuf_printf(&b, "G%d type %s", k->group, fl_op_type_name(
			fl_engine_partition(x->s)->groups[k->group].type));
	in = sub_cluster(x->cluster[u], base, &b, "rounded,dashed",
			 PAR_COLOUR);
	return group_cluster(x, k, in, base, op);
}

static const char *op_fill(const gx *x, int i)
{
	const fl_partition *p = fl_engine_partition(x->s);
	int u = x->unit_of[i];

	if (u < 0 || !x->boxed[u])
		return GREY_FILL;
	if (classified(x))
		return type_fill[p->type_of[i]];
	return class_fill[fl_op_info_of(x->g->ops[i].kind)->cls];
}

static int draw_op(gx *x, int i)
{
	const fl_partition *p = fl_engine_partition(x->s);
	const fl_op *op = &x->g->ops[i];
	int u = x->unit_of[i];
	bool boxed = u >= 0 && x->boxed[u];
	Agraph_t *in = x->root;
	fl_strbuf b = {0};
	Agnode_t *n;

	if (boxed && !x->cluster[u] && make_cluster(x, u) < 0)
		return -1;
	if (boxed)
		in = x->prog ? op_cluster(x, u, i) : x->cluster[u];
	n = in ? agnode(in, op->name, 1) : NULL;
	if (!n)
		return -1;
	x->node[i] = n;
	put_text(&b, op->name);
	fl_strbuf_printf(&b, "\\n%s", fl_op_kind_name(op->kind));
	if (classified(x))
		fl_strbuf_printf(&b, " (%s)",
				 fl_op_type_name(p->type_of[i]));
	if (op->prov.source_op) {	/* an imported model's node type */
		fl_strbuf_printf(&b, "\\nONNX ");
		put_text(&b, op->prov.source_op);
	}
	if (x->par_op[i])
		fl_strbuf_printf(&b, "\\nparallel group P%d", x->par_op[i]);
	set(n, "shape", "box");
	set(n, "style", x->hot[i] ? "filled,rounded,bold" : "filled,rounded");
	set(n, "fillcolor", op_fill(x, i));
	set(n, "color", x->hot[i] ? HOT_COLOUR :
			x->par_op[i] ? PAR_COLOUR : boxed ? "black" : "grey60");
	set(n, "fontcolor", boxed ? "black" : "grey45");
	set(n, "penwidth", x->hot[i] ? "3" : x->par_op[i] ? "2" : "1");
	return set_built(n, "label", &b);
}

/* Where tensor t lives in the kernel of op c ("" before layer 1). */
static const char *placement(const gx *x, int c, int t)
{
	int k = x->unit_of[c];

	if (!x->prog || k < 0)
		return "";
	for (int i = 0; i < x->prog->kernels[k].n_tensors; i++)
		if (x->prog->kernels[k].tensors[i].tensor == t)
			return fl_placement_name(
				x->prog->kernels[k].tensors[i].place);
	return fl_placement_name(FL_PLACE_GLOBAL);
}

/* Whether the edge from op pr to op c crosses micro-graphs inside one
 * kernel: an edge layer 2 stitched (layer 1 keeps one micro-graph a
 * kernel, and layer 3's branches share no edge). */
static bool stitched_edge(const gx *x, int pr, int c)
{
	const fl_partition *p = fl_engine_partition(x->s);

	return x->prog && pr >= 0 && x->unit_of[pr] >= 0 &&
	       x->unit_of[pr] == x->unit_of[c] && p && p->group_of &&
	       c < p->n_ops && pr < p->n_ops &&
	       p->group_of[pr] != p->group_of[c];
}

static int draw_edge(gx *x, Agnode_t *from, Agnode_t *to, int t,
		     const char *place, bool stitched, const char *key)
{
	char shape[128];
	fl_strbuf b = {0};
	Agedge_t *e = agedge(x->root, from, to, (char *)key, 1);

	if (!e)
		return -1;
	fl_shape_format(&x->g->tensors[t].shape, shape, sizeof shape);
	fl_strbuf_printf(&b, "%s", shape);
	if (place[0])
		fl_strbuf_printf(&b, "\\n%s", place);
	if (stitched)
		fl_strbuf_printf(&b, "\\nstitched edge");
	set(e, "fontsize", "10");
	/* a tensor layer 2 kept in the tile: the point of stitching */
	if (stitched && !strcmp(place, "tile-local")) {
		set(e, "color", "darkgreen");
		set(e, "style", "bold");
		set(e, "penwidth", "3");
	} else if (!strcmp(place, "tile-local"))
		set(e, "color", "darkgreen");
	else if (!strcmp(place, "register"))
		set(e, "color", "darkorange");
	return set_built(e, "label", &b);
}

/* A small ellipse for a graph input, parameter or output tensor. */
static Agnode_t *tensor_node(gx *x, int t, Agnode_t **made)
{
	const fl_tensor *ts = &x->g->tensors[t];
	fl_strbuf b = {0};

	if (*made)
		return *made;
	*made = new_node(x->root, ts->name);
	if (!*made)
		return NULL;
	put_text(&b, ts->name);
	fl_strbuf_printf(&b, "\\n%s", fl_role_name(ts->role));
	set(*made, "shape", "ellipse");
	set(*made, "fontsize", "10");
	set(*made, "style", ts->role == FL_ROLE_PARAM ? "dashed" : "solid");
	if (set_built(*made, "label", &b) < 0)
		return NULL;
	return *made;
}

/* Edges into op c: from the producer's node, or from an input or
 * parameter ellipse (constants are left out: scalars splatted over
 * shapes would crowd the picture). */
static int draw_inputs(gx *x, int c, Agnode_t **tnode)
{
	const fl_op *op = &x->g->ops[c];

	for (int j = 0; j < op->n_in; j++) {
		int t = op->in[j], p = x->g->tensors[t].producer;
		fl_role role = x->g->tensors[t].role;
		Agnode_t *from = NULL;
		char key[64];

		if (p >= 0 && x->shown[p])
			from = x->node[p];
		else if (p < 0 && (role == FL_ROLE_INPUT ||
				   role == FL_ROLE_PARAM))
			from = tensor_node(x, t, &tnode[t]);
		else
			continue;
		snprintf(key, sizeof key, "t%d_op%d_in%d", t, c, j);
		if (!from || draw_edge(x, from, x->node[c], t,
				       placement(x, c, t),
				       stitched_edge(x, p, c), key) < 0)
			return -1;
	}
	return 0;
}

static int draw_outputs(gx *x, int c, Agnode_t **tnode)
{
	const fl_op *op = &x->g->ops[c];

	for (int j = 0; j < op->n_out; j++) {
		int t = op->out[j];
		Agnode_t *to;
		char key[64];

		if (x->g->tensors[t].role != FL_ROLE_OUTPUT)
			continue;
		to = tensor_node(x, t, &tnode[t]);
		snprintf(key, sizeof key, "t%d_out", t);
		if (!to || draw_edge(x, x->node[c], to, t, "", false,
				     key) < 0)
			return -1;
	}
	return 0;
}

static int legend_entry(Agraph_t *lg, const char *text, const char *fill,
			const char *colour, const char *width)
{
	Agnode_t *n = new_node(agroot(lg), text);

	if (!n || !agsubnode(lg, n, 1))
		return -1;
	set(n, "shape", "box");
	set(n, "style", "filled,rounded");
	set(n, "fontsize", "10");
	set(n, "fillcolor", fill);
	set(n, "color", colour);
	set(n, "penwidth", width);
	return 0;
}

/* The colours and marks, in a cluster of their own. */
static int draw_legend(gx *x)
{
	Agraph_t *lg = agsubg(x->root, "cluster_legend", 1);
	int rc = 0;

	if (!lg)
		return -1;
	set(lg, "label", "legend");
	set(lg, "style", "dotted");
	if (classified(x)) {
		for (int t = FL_TYPE_E; t <= FL_TYPE_O; t++) {
			char text[64];

			snprintf(text, sizeof text, "%s: %s",
				 fl_op_type_name(t), fl_op_type_long_name(t));
			rc |= legend_entry(lg, text, type_fill[t], "black",
					   "1");
		}
	} else {
		for (int c = FL_CLASS_UNARY; c <= FL_CLASS_COMPOUND; c++)
			rc |= legend_entry(lg, fl_op_class_name(c),
					   class_fill[c], "black", "1");
	}
	rc |= legend_entry(lg, "in no micro-graph or kernel", GREY_FILL,
			   "grey60", "1");
	rc |= legend_entry(lg, "this step's decision", "white", HOT_COLOUR,
			   "3");
	rc |= legend_entry(lg, "parallel group (layer 3)", "white",
			   PAR_COLOUR, "2");
	rc |= legend_entry(lg, "bold green edge: stitched (layer 2), "
			   "kept in the tile", "white", "darkgreen", "3");
	return rc;
}

static int draw_title(gx *x)
{
	int k = fl_engine_position(x->s), n = x->o->total;
	fl_strbuf b = {0};

	if (x->o->title) {
		put_text(&b, x->o->title);
	} else {
		put_text(&b, x->g->name ? x->g->name : "graph");
		if (!n && fl_engine_done(x->s))
			n = k;
		fl_strbuf_printf(&b, "\\nstep %d", k);
		if (n > 0)
			fl_strbuf_printf(&b, "/%d", n);
		fl_strbuf_printf(&b, ": ");
		put_text(&b, x->last ? x->last->reason : "nothing decided yet");
	}
	set(x->root, "labelloc", "t");
	set(x->root, "fontsize", "16");
	return set_built(x->root, "label", &b);
}

static int draw_graph(gx *x)
{
	const fl_graph *g = x->g;
	Agnode_t **tnode = calloc((size_t)g->n_tensors + 1, sizeof *tnode);
	int rc = 0;

	if (!tnode)
		return -1;
	set(x->root, "rankdir", "TB");
	for (int i = 0; i < g->n_ops && !rc; i++)
		if (x->shown[i])
			rc = draw_op(x, i);
	for (int i = 0; i < g->n_ops && !rc; i++)
		if (x->shown[i])
			rc = draw_inputs(x, i, tnode) ||
			     draw_outputs(x, i, tnode);
	free(tnode);
	if (!rc)
		rc = draw_legend(x) || draw_title(x);
	return rc ? -1 : 0;
}

static void gx_free(gx *x)
{
	free(x->unit_of);
	free(x->boxed);
	free(x->par_unit);
	free(x->par_op);
	free(x->hot);
	free(x->shown);
	free(x->node);
	free(x->cluster);
	if (x->root)
		agclose(x->root);
}

static int gx_init(gx *x, const fl_session *s, const fl_export_graph_opts *o)
{
	const fl_event_log *log = fl_engine_events(s);
	int pos = fl_engine_position(s);
	size_t n, u;

	x->s = s;
	x->o = o;
	x->g = fl_engine_graph(s);
	x->prog = fl_engine_program(s);
	x->last = pos > 0 && log ? fl_event_log_get(log, pos - 1) : NULL;
	n = (size_t)x->g->n_ops + 1;
	x->unit_of = malloc(n * sizeof *x->unit_of);
	x->hot = calloc(n, sizeof *x->hot);
	x->shown = calloc(n, sizeof *x->shown);
	x->node = calloc(n, sizeof *x->node);
	x->par_op = calloc(n, sizeof *x->par_op);
	if (!x->unit_of || !x->hot || !x->shown || !x->node || !x->par_op)
		return -1;
	find_units(x);
	u = (size_t)x->n_units + 1;
	x->boxed = calloc(u, sizeof *x->boxed);
	x->par_unit = calloc(u, sizeof *x->par_unit);
	x->cluster = calloc(u, sizeof *x->cluster);
	if (!x->boxed || !x->par_unit || !x->cluster)
		return -1;
	find_boxed(x);
	find_hot(x);
	return find_shown(x);
}

int fl_export_graph(const fl_session *s, const fl_export_graph_opts *o,
		    const char *file, const char *format, fl_error *err)
{
	fl_export_graph_opts def;
	gx x = {0};
	int rc = -1;

	if (!o) {
		fl_export_graph_opts_default(&def);
		o = &def;
	}
	if (check_format(file, format, err) < 0)
		return -1;
	if (gx_init(&x, s, o) < 0) {
		fl_error_set(err, "%s: out of memory", file);
		goto out;
	}
	if (find_parallel(&x, err) < 0) {
		fl_error_prefix(err, "%s", file);
		goto out;
	}
	x.root = graph_open(x.g->name ? x.g->name : "graph");
	if (!x.root || draw_graph(&x) < 0) {
		fl_error_set(err, "%s: cannot build the graph (out of memory)",
			     file);
		goto out;
	}
	rc = emit(x.root, file, format, err);
out:
	gx_free(&x);
	return rc;
}

/* ---- schedule trees ------------------------------------------------------ */

static const char *const tree_kind_name[] = {
	[FL_TREE_DOMAIN] = "domain", [FL_TREE_BAND] = "band",
	[FL_TREE_SEQUENCE] = "sequence", [FL_TREE_SET] = "set",
	[FL_TREE_FILTER] = "filter", [FL_TREE_EXTENSION] = "extension",
	[FL_TREE_MARK] = "mark", [FL_TREE_CONTEXT] = "context",
	[FL_TREE_GUARD] = "guard", [FL_TREE_EXPANSION] = "expansion",
	[FL_TREE_LEAF] = "leaf",
};

/* The band's flags; a band whose schedule divides with floor() is the
 * tile band that layer 1 made, so it gets the kernel's tile sizes (the
 * walkable tree does not say which band was tiled). */
static void band_label(fl_strbuf *b, const fl_tree_node *t,
		       const fl_kernel *k)
{
	fl_strbuf_printf(b, "band%s\\n", t->permutable ? " permutable" : "");
	fl_strbuf_printf(b, "coincident:");
	for (int i = 0; i < t->n_members; i++)
		fl_strbuf_printf(b, " %d", t->coincident && t->coincident[i]);
	fl_strbuf_printf(b, "\\n");
	if (k->n_tile > 0 && t->text && strstr(t->text, "floor(")) {
		fl_strbuf_printf(b, "tile sizes ");
		for (int i = 0; i < k->n_tile; i++)
			fl_strbuf_printf(b, "%s%lld", i ? "x" : "",
					 (long long)k->tile[i]);
		fl_strbuf_printf(b, "\\n");
	}
}

static void style_tree_node(Agnode_t *n, fl_tree_kind kind)
{
	switch (kind) {
	case FL_TREE_DOMAIN:
		set(n, "shape", "box");
		set(n, "style", "filled");
		set(n, "fillcolor", "#eeeeee");
		break;
	case FL_TREE_BAND:
		set(n, "shape", "box");
		set(n, "style", "filled,bold");
		set(n, "fillcolor", "#cfe2f3");
		break;
	case FL_TREE_SEQUENCE:
	case FL_TREE_SET:
		set(n, "shape", "ellipse");
		break;
	case FL_TREE_FILTER:
		set(n, "shape", "note");
		break;
	case FL_TREE_EXTENSION:
		set(n, "shape", "box");
		set(n, "style", "filled");
		set(n, "fillcolor", "#fce5cd");
		set(n, "color", "darkorange");
		break;
	case FL_TREE_MARK:
		set(n, "shape", "hexagon");
		set(n, "style", "filled");
		set(n, "fillcolor", "#d9ead3");
		break;
	case FL_TREE_LEAF:
		set(n, "shape", "plaintext");
		set(n, "fontsize", "10");
		break;
	default:
		set(n, "shape", "box");
		set(n, "style", "dashed");
		break;
	}
}

static Agnode_t *tree_node(Agraph_t *gr, const fl_tree_node *t,
			   const fl_kernel *k, int *next)
{
	fl_strbuf b = {0};
	char name[32];
	Agnode_t *n;

	snprintf(name, sizeof name, "n%d", (*next)++);
	n = agnode(gr, name, 1);
	if (!n)
		return NULL;
	if (t->kind == FL_TREE_BAND)
		band_label(&b, t, k);
	else if (t->kind == FL_TREE_MARK)
		fl_strbuf_printf(&b, "mark: ");
	else
		fl_strbuf_printf(&b, "%s\\n", tree_kind_name[t->kind]);
	if (t->kind == FL_TREE_MARK && t->text)
		put_text(&b, t->text);
	else if (t->text && t->text[0])
		put_wrapped(&b, t->text);
	style_tree_node(n, t->kind);
	if (set_built(n, "label", &b) < 0)
		return NULL;
	return n;
}

static int tree_add(Agraph_t *gr, const fl_tree_node *t, const fl_kernel *k,
		    Agnode_t *parent, int *next)
{
	Agnode_t *n = tree_node(gr, t, k, next);

	if (!n || (parent && !agedge(gr, parent, n, NULL, 1)))
		return -1;
	for (int i = 0; i < t->n_children; i++)
		if (tree_add(gr, &t->children[i], k, n, next) < 0)
			return -1;
	return 0;
}

int fl_export_schedule_tree(const fl_session *s, int kernel,
			    const char *file, const char *format,
			    fl_error *err)
{
	const fl_program *prog = fl_engine_program(s);
	const fl_kernel *k;
	Agraph_t *gr;
	char name[64];
	int next = 0, rc;

	if (check_format(file, format, err) < 0)
		return -1;
	if (!prog) {
		fl_error_set(err, "%s: no schedule trees before layer 1 ran",
			     file);
		return -1;
	}
	if (kernel < 0 || kernel >= prog->n_kernels ||
	    !prog->kernels[kernel].tree) {
		fl_error_set(err, "%s: no kernel %d (the program has %d)",
			     file, kernel, prog->n_kernels);
		return -1;
	}
	k = &prog->kernels[kernel];
	snprintf(name, sizeof name, "%s schedule tree", k->name);
	gr = graph_open(name);
	if (!gr) {
		fl_error_set(err, "%s: out of memory", file);
		return -1;
	}
	set(gr, "label", name);
	set(gr, "labelloc", "t");
	set(gr, "ordering", "out");
	set(gr, "fontname", "monospace");
	rc = tree_add(gr, k->tree, k, NULL, &next);
	if (rc < 0)
		fl_error_set(err, "%s: cannot build the tree (out of memory)",
			     file);
	else
		rc = emit(gr, file, format, err);
	agclose(gr);
	return rc;
}
