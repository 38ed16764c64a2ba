/* Primitive ops: shape inference, its error messages, and the reference
 * implementations against values worked out by hand.
 *
 * Ops are built on the stack and driven through the op table
 * (fl_op_info_of(kind)->infer / ->eval), as the graph and the
 * interpreter drive them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "ops.h"
#include "test_util.h"

#define I64(...) ((const int64_t[]){__VA_ARGS__})
#define F32(...) ((const float[]){__VA_ARGS__})
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define SH(...) shape_of(I64(__VA_ARGS__), COUNT(I64(__VA_ARGS__)))

static fl_shape shape_of(const int64_t *d, int rank)
{
	return fl_shape_make(rank, d);
}

static fl_buf buf(fl_shape s, const float *data)
{
	fl_buf b = {.shape = s, .data = (float *)data};

	return b;
}

static fl_op make_op(fl_op_kind kind, int n_in)
{
	fl_op op;

	memset(&op, 0, sizeof op);
	op.kind = kind;
	op.n_in = n_in;
	op.n_out = 1;
	return op;
}

static void set_ints(fl_op *op, const char *key, const int64_t *v, int n)
{
	assert_int_equal(fl_attrs_set_ints(&op->attrs, key, v, n), 0);
}

#define SET_INTS(op, key, ...) \
	set_ints(op, key, I64(__VA_ARGS__), COUNT(I64(__VA_ARGS__)))

static void assert_shape(const fl_shape *got, const fl_shape *want)
{
	char g[128], w[128];

	if (!fl_shape_equal(got, want))
		fail_msg("shape %s, want %s", fl_shape_format(got, g, sizeof g),
			 fl_shape_format(want, w, sizeof w));
}

/* Infers op's output shape from the inputs, checks it against `shape`,
 * evaluates and compares the result with want (atol = rtol = tol). */
static void check_eval(const fl_op *op, const fl_buf *in, fl_shape shape,
		       const float *want, double tol)
{
	const fl_op_info *info = fl_op_info_of(op->kind);
	fl_shape in_shapes[8], out_shape;
	fl_error err = {""};
	fl_buf out;
	int64_t n;

	for (int k = 0; k < op->n_in; k++)
		in_shapes[k] = in[k].shape;
	memset(&out_shape, 0, sizeof out_shape);
	if (info->infer(op, in_shapes, &out_shape, &err) < 0)
		fail_msg("%s: inference failed: %s", info->name, err.msg);
	assert_shape(&out_shape, &shape);
	n = fl_shape_numel(&out_shape);
	out.shape = out_shape;
	out.data = malloc((size_t)n * sizeof(float));
	assert_non_null(out.data);
	for (int64_t i = 0; i < n; i++)
		out.data[i] = NAN;	/* every element must be written */
	info->eval(op, in, &out);
	t_assert_close(out.data, want, n, tol, tol);
	free(out.data);
}


/* ------------------------------------------------------------------ */

typedef struct unary_case {
	fl_op_kind kind;
	float in[4], want[4];
} unary_case;

static void test_unary_values(void **state)
{
	static const unary_case cases[] = {
		{FL_OP_NEG, {-2, 0, 1.5f, 3}, {2, 0, -1.5f, -3}},
		{FL_OP_ABS, {-2, 0, 1.5f, -0.25f}, {2, 0, 1.5f, 0.25f}},
		{FL_OP_EXP, {0, 1, -1, 2}, {1, 2.718281828f, 0.367879441f,
					    7.389056099f}},
		{FL_OP_LOG, {1, 2.718281828f, 0.5f, 10},
		 {0, 1, -0.693147181f, 2.302585093f}},
		{FL_OP_SQRT, {0, 4, 2, 0.25f}, {0, 2, 1.414213562f, 0.5f}},
		{FL_OP_RSQRT, {4, 1, 0.25f, 2}, {0.5f, 1, 2, 0.707106781f}},
		{FL_OP_RECIP, {4, -2, 0.5f, 1}, {0.25f, -0.5f, 2, 1}},
		{FL_OP_TANH, {0, 0.5f, -1, 3}, {0, 0.462117157f, -0.761594156f,
					       0.995054754f}},
		{FL_OP_SIGMOID, {0, 2, -2, 1}, {0.5f, 0.880797078f,
					       0.119202922f, 0.731058579f}},
		{FL_OP_RELU, {-2, 0, 0.5f, -0.0f}, {0, 0, 0.5f, 0}},
		{FL_OP_ERF, {0, 0.5f, -1, 2}, {0, 0.520499878f, -0.842700793f,
					      0.995322265f}},
		{FL_OP_SQUARE, {-3, 0.5f, 0, 2}, {9, 0.25f, 0, 4}},
		{FL_OP_COPY, {-3, 0.5f, 0, 7}, {-3, 0.5f, 0, 7}},
		{FL_OP_CAST, {-3, 0.5f, 0, 7}, {-3, 0.5f, 0, 7}},
		/* ties to even */
		{FL_OP_ROUND, {2.5f, -1.5f, 0.5f, 1.4f}, {2, -2, 0, 1}},
		{FL_OP_ROUND, {3.5f, -2.5f, -0.6f, 1.6f}, {4, -2, -1, 2}},
	};

	(void)state;
	for (int c = 0; c < COUNT(cases); c++) {
		fl_op op = make_op(cases[c].kind, 1);
		fl_buf in = buf(SH(2, 2), cases[c].in);

		check_eval(&op, &in, SH(2, 2), cases[c].want, 1e-6);
	}
}

static void test_unary_shapes_and_cast(void **state)
{
	fl_op op = make_op(FL_OP_CAST, 1);
	fl_shape scalar = fl_shape_scalar();
	fl_buf in = buf(scalar, F32(-4));
	fl_op neg = make_op(FL_OP_NEG, 1);

	(void)state;
	check_eval(&neg, &in, scalar, F32(4), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "dtype", "f32"), 0);
	in = buf(SH(1, 3), F32(1, 2, 3));
	check_eval(&op, &in, SH(1, 3), F32(1, 2, 3), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "dtype", "f64"), 0);
	t_infer_fails(&op, &in.shape,
			  "attrs.dtype: unknown dtype \"f64\" (f32, bool, i8, u8, "
			  "i16, u16, i32, u32, i64, u64, f16 or bf16)");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "dtype", 32), 0);
	t_infer_fails(&op, &in.shape, "attrs.dtype: expected a string");
	fl_attrs_free(&op.attrs);
}

/* ------------------------------------------------------------------ */

typedef struct binary_case {
	fl_op_kind kind;
	float want[6];
} binary_case;

/* a [2,3] = {1,2,3,4,5,6} against b [3] = {2,-1,0.5} */
static void test_binary_values(void **state)
{
	static const binary_case cases[] = {
		{FL_OP_ADD, {3, 1, 3.5f, 6, 4, 6.5f}},
		{FL_OP_SUB, {-1, 3, 2.5f, 2, 6, 5.5f}},
		{FL_OP_MUL, {2, -2, 1.5f, 8, -5, 3}},
		{FL_OP_DIV, {0.5f, -2, 6, 2, -5, 12}},
		{FL_OP_MAX, {2, 2, 3, 4, 5, 6}},
		{FL_OP_MIN, {1, -1, 0.5f, 2, -1, 0.5f}},
		{FL_OP_POW, {1, 0.5f, 1.732050808f, 16, 0.2f, 2.449489743f}},
	};
	const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {2, -1, 0.5f};

	(void)state;
	for (int c = 0; c < COUNT(cases); c++) {
		fl_op op = make_op(cases[c].kind, 2);
		fl_buf in[2] = {buf(SH(2, 3), a), buf(SH(3), b)};

		check_eval(&op, in, SH(2, 3), cases[c].want, 1e-6);
	}
}

static void test_binary_broadcast_both_sides(void **state)
{
	fl_op op = make_op(FL_OP_SUB, 2);
	/* [2,1] - [1,3]: a column against a row */
	fl_buf in[2] = {buf(SH(2, 1), F32(10, 20)),
			buf(SH(1, 3), F32(1, 2, 3))};
	fl_buf sc[2] = {buf(fl_shape_scalar(), F32(2)),
			buf(SH(2, 1, 2), F32(1, 2, 3, 4))};

	(void)state;
	check_eval(&op, in, SH(2, 3), F32(9, 8, 7, 19, 18, 17), 0);
	op.kind = FL_OP_MUL;
	check_eval(&op, sc, SH(2, 1, 2), F32(2, 4, 6, 8), 0);
}

static void test_binary_errors(void **state)
{
	fl_op op = make_op(FL_OP_ADD, 2);
	fl_shape bad[2] = {SH(4, 3), SH(5)};
	fl_shape huge[2] = {SH(4294967296, 1), SH(4294967296)};
	fl_shape neg[2] = {SH(4, 0), SH(1)};
	fl_shape uncountable[2] = {SH(4294967296, 4294967296), SH(1)};

	(void)state;
	t_infer_fails(&op, bad,
			  "in[1]: shapes [4,3] and [5] do not broadcast "
			  "(dim 1: 3 vs 5)");
	op.kind = FL_OP_MUL;
	t_infer_fails(&op, huge, "out: output has too many elements");
	t_infer_fails(&op, neg, "in[0]: dim 1 is 0, must be >= 1");
	t_infer_fails(&op, uncountable, "in[0]: too many elements");
}

static void test_where(void **state)
{
	fl_op op = make_op(FL_OP_WHERE, 3);
	/* c [2,1] picks a row of a [2,3] or the scalar b */
	fl_buf in[3] = {buf(SH(2, 1), F32(1, 0)),
			buf(SH(2, 3), F32(1, 2, 3, 4, 5, 6)),
			buf(fl_shape_scalar(), F32(-1))};
	fl_buf in2[3] = {buf(SH(3), F32(0, -2, NAN)),
			 buf(SH(1), F32(7)), buf(SH(2, 1), F32(8, 9))};
	fl_shape bad[3] = {SH(2, 1), SH(2, 3), SH(3, 1)};

	(void)state;
	check_eval(&op, in, SH(2, 3), F32(1, 2, 3, -1, -1, -1), 0);
	/* nonzero (and NaN) conditions select a */
	check_eval(&op, in2, SH(2, 3), F32(8, 7, 7, 9, 7, 7), 0);
	t_infer_fails(&op, bad,
			  "in[2]: shapes [2,3] and [3,1] do not broadcast "
			  "(dim 0: 2 vs 3)");
}

/* ------------------------------------------------------------------ */

/* x [2,3] = {1,-2,3, 4,5,-6} */
static void test_reduce_values(void **state)
{
	const float x[] = {1, -2, 3, 4, 5, -6};
	fl_buf in = buf(SH(2, 3), x);
	fl_op op = make_op(FL_OP_REDUCE_SUM, 1);

	(void)state;
	check_eval(&op, &in, SH(1, 1), F32(5), 0);	/* default: all */
	SET_INTS(&op, "axes", 1);
	check_eval(&op, &in, SH(2, 1), F32(2, 3), 0);
	SET_INTS(&op, "axes", -2);
	check_eval(&op, &in, SH(1, 3), F32(5, 3, -3), 0);
	op.kind = FL_OP_REDUCE_MAX;
	check_eval(&op, &in, SH(1, 3), F32(4, 5, 3), 0);
	SET_INTS(&op, "axes", 1);
	check_eval(&op, &in, SH(2, 1), F32(3, 5), 0);
	op.kind = FL_OP_REDUCE_MIN;
	check_eval(&op, &in, SH(2, 1), F32(-2, -6), 0);
	SET_INTS(&op, "axes", 1, 0);
	check_eval(&op, &in, SH(1, 1), F32(-6), 0);
	fl_attrs_free(&op.attrs);
}

static void test_reduce_inner_and_outer_axes(void **state)
{
	/* x [2,2,3]: x[i][j][k] = 100i + 10j + k */
	const float x[] = {0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112};
	fl_buf in = buf(SH(2, 2, 3), x);
	fl_op op = make_op(FL_OP_REDUCE_SUM, 1);

	(void)state;
	SET_INTS(&op, "axes", 0, 2);
	check_eval(&op, &in, SH(1, 2, 1), F32(306, 366), 0);
	SET_INTS(&op, "axes", 1);
	check_eval(&op, &in, SH(2, 1, 3), F32(10, 12, 14, 210, 212, 214), 0);
	op.kind = FL_OP_REDUCE_MAX;
	SET_INTS(&op, "axes", 0);
	check_eval(&op, &in, SH(1, 2, 3),
		   F32(100, 101, 102, 110, 111, 112), 0);
	fl_attrs_free(&op.attrs);
	/* a scalar reduces to itself */
	in = buf(fl_shape_scalar(), F32(3.5f));
	check_eval(&op, &in, fl_shape_scalar(), F32(3.5f), 0);
}

static void test_reduce_errors(void **state)
{
	fl_op op = make_op(FL_OP_REDUCE_SUM, 1);
	fl_shape in = SH(4, 3);

	(void)state;
	SET_INTS(&op, "axes", 0, 5);
	t_infer_fails(&op, &in,
			  "attrs.axes[1]: axis 5 out of range for rank 2");
	SET_INTS(&op, "axes", 1, -1);
	t_infer_fails(&op, &in, "attrs.axes[1]: axis 1 given twice");
	set_ints(&op, "axes", NULL, 0);
	t_infer_fails(&op, &in, "attrs.axes: empty list (leave it out to "
			  "reduce every axis)");
	assert_int_equal(fl_attrs_set_list(&op.attrs, "axes",
					   (const double[]){0.5}, 1), 0);
	t_infer_fails(&op, &in, "attrs.axes[0]: expected an integer");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axes", 1), 0);
	t_infer_fails(&op, &in, "attrs.axes: expected a list of integers");
	fl_attrs_free(&op.attrs);
}

/* ------------------------------------------------------------------ */

/* a [2,3] = {1,2,3,4,5,6}, b [3,2] = {1,0,0,1,1,1}:
 * a*b = {1+3, 2+3, 4+6, 5+6} = {4,5,10,11} */
static void test_matmul_values(void **state)
{
	const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1, 1, 1};
	/* a^T [3,2] = {1,4,2,5,3,6}, b^T [2,3] = {1,0,1,0,1,1} */
	const float at[] = {1, 4, 2, 5, 3, 6}, bt[] = {1, 0, 1, 0, 1, 1};
	fl_op op = make_op(FL_OP_MATMUL, 2);
	fl_buf in[2] = {buf(SH(2, 3), a), buf(SH(3, 2), b)};
	fl_buf in_ta[2] = {buf(SH(3, 2), at), buf(SH(3, 2), b)};
	fl_buf in_tb[2] = {buf(SH(2, 3), a), buf(SH(2, 3), bt)};
	fl_buf in_tt[2] = {buf(SH(3, 2), at), buf(SH(2, 3), bt)};

	(void)state;
	check_eval(&op, in, SH(2, 2), F32(4, 5, 10, 11), 0);
	assert_int_equal(fl_attrs_set_bool(&op.attrs, "transpose_a", true), 0);
	check_eval(&op, in_ta, SH(2, 2), F32(4, 5, 10, 11), 0);
	assert_int_equal(fl_attrs_set_bool(&op.attrs, "transpose_b", true), 0);
	check_eval(&op, in_tt, SH(2, 2), F32(4, 5, 10, 11), 0);
	assert_int_equal(fl_attrs_set_bool(&op.attrs, "transpose_a", false), 0);
	check_eval(&op, in_tb, SH(2, 2), F32(4, 5, 10, 11), 0);
	fl_attrs_free(&op.attrs);
}

static void test_matmul_batch_broadcast(void **state)
{
	/* a [2,1,2,2]: two matrices, b [3,2,2]: three matrices -> [2,3,2,2] */
	const float a[] = {1, 0, 0, 1,	/* identity */
			   0, 1, 1, 0};	/* swap rows */
	const float b[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	const float want[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
			      3, 4, 1, 2, 7, 8, 5, 6, 11, 12, 9, 10};
	fl_op op = make_op(FL_OP_MATMUL, 2);
	fl_buf in[2] = {buf(SH(2, 1, 2, 2), a), buf(SH(3, 2, 2), b)};
	/* a [1,3] row vector against b [3,1] column: the dot product */
	fl_buf dot[2] = {buf(SH(1, 3), F32(1, 2, 3)),
			 buf(SH(3, 1), F32(4, 5, 6))};

	(void)state;
	check_eval(&op, in, SH(2, 3, 2, 2), want, 0);
	check_eval(&op, dot, SH(1, 1), F32(32), 0);
}

static void test_matmul_wide_output(void **state)
{
	/* N = 130 crosses the column blocking: c[0][j] = sum_k a[k] b[k][j]
	 * with a = {1,2}, b[0][j] = j, b[1][j] = 1 -> c = j + 2 */
	float b[2 * 130], want[130];
	fl_op op = make_op(FL_OP_MATMUL, 2);
	fl_buf in[2] = {buf(SH(1, 2), F32(1, 2)), buf(SH(2, 130), b)};

	(void)state;
	for (int j = 0; j < 130; j++) {
		b[j] = (float)j;
		b[130 + j] = 1;
		want[j] = (float)j + 2;
	}
	check_eval(&op, in, SH(1, 130), want, 0);
}

/* A transposed b, wide enough for whole column blocks and a partial one,
 * with values whose float sums round: every element equals the sum over
 * k in increasing order in double, rounded once, exactly -- as without
 * the transpose (the interpreter copies such a b into row order first). */
static void test_matmul_transposed_wide_exact(void **state)
{
	enum { M = 3, K = 7, N = 150 };
	float a[M * K], b[K * N], bt[N * K], want[M * N];
	fl_op op = make_op(FL_OP_MATMUL, 2);
	fl_buf in[2] = {buf(SH(M, K), a), buf(SH(K, N), b)};
	fl_buf in_tb[2] = {buf(SH(M, K), a), buf(SH(N, K), bt)};

	(void)state;
	for (int i = 0; i < M * K; i++)
		a[i] = 1.0f / (float)(i + 3);
	for (int k = 0; k < K; k++)
		for (int j = 0; j < N; j++) {
			b[k * N + j] = (float)(j % 11) / 7.0f - (float)k / 3.0f;
			bt[j * K + k] = b[k * N + j];
		}
	for (int i = 0; i < M; i++)
		for (int j = 0; j < N; j++) {
			double acc = 0.0;

			for (int k = 0; k < K; k++)
				acc += (double)a[i * K + k] * b[k * N + j];
			want[i * N + j] = (float)acc;
		}
	check_eval(&op, in, SH(M, N), want, 0);
	assert_int_equal(fl_attrs_set_bool(&op.attrs, "transpose_b", true), 0);
	check_eval(&op, in_tb, SH(M, N), want, 0);
	fl_attrs_free(&op.attrs);
}

static void test_matmul_errors(void **state)
{
	fl_op op = make_op(FL_OP_MATMUL, 2);
	fl_shape k_mismatch[2] = {SH(8, 64), SH(32, 16)};
	fl_shape rank1[2] = {SH(8), SH(8, 2)};
	fl_shape batch[2] = {SH(2, 4, 4), SH(3, 4, 4)};
	fl_shape ok_t[2] = {SH(64, 8), SH(16, 64)};

	(void)state;
	t_infer_fails(&op, k_mismatch,
			  "in[1]: matmul inner dims differ (K=64 vs 32)");
	t_infer_fails(&op, rank1, "in[0]: matmul needs rank >= 2, got 1");
	t_infer_fails(&op, batch,
			  "in[1]: batch dims: shapes [2] and [3] do not "
			  "broadcast (dim 0: 2 vs 3)");
	t_infer_fails(&op, ok_t,
			  "in[1]: matmul inner dims differ (K=8 vs 16)");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "transpose_a", 1), 0);
	t_infer_fails(&op, ok_t,
			  "attrs.transpose_a: expected true or false");
	fl_attrs_free(&op.attrs);
}

/* ------------------------------------------------------------------ */

/* x [1,1,3,3] = 1..9, w [1,1,2,2] = {1,0,0,-1}: x[h][w] - x[h+1][w+1] */
static void test_conv2d_values(void **state)
{
	const float x[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	fl_op op = make_op(FL_OP_CONV2D, 2);
	fl_buf in[2] = {buf(SH(1, 1, 3, 3), x),
			buf(SH(1, 1, 2, 2), F32(1, 0, 0, -1))};
	/* two output channels: the 2x2 sum and the top-left tap */
	fl_buf in2[2] = {buf(SH(1, 1, 3, 3), x),
			 buf(SH(2, 1, 2, 2), F32(1, 1, 1, 1, 1, 0, 0, 0))};

	(void)state;
	check_eval(&op, in, SH(1, 1, 2, 2), F32(-4, -4, -4, -4), 0);
	check_eval(&op, in2, SH(1, 2, 2, 2),
		   F32(12, 16, 24, 28, 1, 2, 4, 5), 0);
	/* dilation 2: the window's taps are the corners x[0][0] - x[2][2] */
	SET_INTS(&op, "dilation", 2, 2);
	check_eval(&op, in, SH(1, 1, 1, 1), F32(-8), 0);
	/* stride 2 over a 1x5 image with a 1x1 kernel: every other pixel */
	SET_INTS(&op, "dilation", 1, 1);
	SET_INTS(&op, "stride", 1, 2);
	in[0] = buf(SH(1, 1, 1, 5), F32(1, 2, 3, 4, 5));
	in[1] = buf(SH(1, 1, 1, 1), F32(10));
	check_eval(&op, in, SH(1, 1, 1, 3), F32(10, 30, 50), 0);
	fl_attrs_free(&op.attrs);
}

static void test_conv2d_channels_and_groups(void **state)
{
	/* x [2,2,1,1]: batch of 2, channels (1,2) and (3,4) */
	const float x[] = {1, 2, 3, 4};
	fl_op op = make_op(FL_OP_CONV2D, 2);
	/* groups 1: w [1,2,1,1] = {10, 1} -> 10*c0 + c1 */
	fl_buf full[2] = {buf(SH(2, 2, 1, 1), x),
			  buf(SH(1, 2, 1, 1), F32(10, 1))};
	/* groups 2, w [4,1,1,1]: out channels 0,1 read c0, 2,3 read c1 */
	fl_buf grouped[2] = {buf(SH(2, 2, 1, 1), x),
			     buf(SH(4, 1, 1, 1), F32(1, 2, 3, 4))};

	(void)state;
	check_eval(&op, full, SH(2, 1, 1, 1), F32(12, 34), 0);
	assert_int_equal(fl_attrs_set_number(&op.attrs, "groups", 2), 0);
	check_eval(&op, grouped, SH(2, 4, 1, 1),
		   F32(1, 2, 6, 8, 3, 6, 12, 16), 0);
	fl_attrs_free(&op.attrs);
}

/* A strided, dilated conv with values whose float sums round: every
 * output equals the sum over c, r, s in that order in double, rounded
 * once, exactly (the interpreter computes a whole output row at a time). */
static void test_conv2d_rows_exact(void **state)
{
	enum { C = 3, H = 9, W = 11, K = 2, R = 2, S = 3, OH = 3, OW = 3 };
	float x[C * H * W], w[K * C * R * S], want[K * OH * OW];
	fl_op op = make_op(FL_OP_CONV2D, 2);
	fl_buf in[2] = {buf(SH(1, C, H, W), x), buf(SH(K, C, R, S), w)};

	(void)state;
	for (int i = 0; i < C * H * W; i++)
		x[i] = 1.0f / (float)(i % 17 + 3) - 0.1f;
	for (int i = 0; i < K * C * R * S; i++)
		w[i] = (float)(i % 5) / 3.0f - 0.7f;
	/* stride 2 x 3, dilation 3 x 2: output (p, q) reads rows 2p + 3r,
	   columns 3q + 2s */
	for (int o = 0; o < K * OH * OW; o++) {
		int k = o / (OH * OW), p = o / OW % OH, q = o % OW;
		double acc = 0.0;

		for (int i = 0; i < C * R * S; i++) {
			int c = i / (R * S), r = i / S % R, t = i % S;

			acc += (double)x[(c * H + 2 * p + 3 * r) * W + 3 * q +
					 2 * t] * w[k * C * R * S + i];
		}
		want[o] = (float)acc;
	}
	SET_INTS(&op, "stride", 2, 3);
	SET_INTS(&op, "dilation", 3, 2);
	check_eval(&op, in, SH(1, K, OH, OW), want, 0);
	fl_attrs_free(&op.attrs);
}

static void test_conv2d_errors(void **state)
{
	fl_op op = make_op(FL_OP_CONV2D, 2);
	fl_shape big[2] = {SH(1, 3, 4, 4), SH(8, 3, 5, 3)};
	fl_shape dil[2] = {SH(1, 3, 4, 4), SH(8, 3, 2, 2)};
	fl_shape chans[2] = {SH(1, 4, 8, 8), SH(8, 3, 3, 3)};
	fl_shape rank3[2] = {SH(4, 8, 8), SH(8, 4, 3, 3)};
	fl_shape grp[2] = {SH(1, 4, 8, 8), SH(6, 2, 3, 3)};

	(void)state;
	t_infer_fails(&op, big, "in[1]: window 5x3 is larger than the "
			  "input 4x4");
	t_infer_fails(&op, chans, "in[1]: weights have 3 input channels "
			  "per group, expected 4 (C=4, groups=1)");
	t_infer_fails(&op, rank3,
			  "in[0]: expected rank 4 (NCHW), got rank 3");
	SET_INTS(&op, "dilation", 4, 1);
	t_infer_fails(&op, dil, "in[1]: window 2x2 (dilation 4x1) is "
			  "larger than the input 4x4");
	SET_INTS(&op, "dilation", 1, 1);
	assert_int_equal(fl_attrs_set_number(&op.attrs, "groups", 3), 0);
	t_infer_fails(&op, grp, "attrs.groups: 3 does not divide the 4 "
			  "input channels");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "groups", 2), 0);
	grp[1] = SH(5, 2, 3, 3);
	t_infer_fails(&op, grp, "attrs.groups: 2 does not divide the 5 "
			  "output channels");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "groups", 0), 0);
	t_infer_fails(&op, grp, "attrs.groups: must be >= 1, got 0");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "groups", 1), 0);
	SET_INTS(&op, "stride", 0, 1);
	t_infer_fails(&op, dil, "attrs.stride[0]: must be >= 1, got 0");
	SET_INTS(&op, "stride", 1, 1, 1);
	t_infer_fails(&op, dil, "attrs.stride: expected 2 values, got 3");
	fl_attrs_free(&op.attrs);
}

/* ------------------------------------------------------------------ */

/* x [1,1,4,4] = 1..16 */
static void test_pool2d_values(void **state)
{
	const float x[] = {1, 2, 3, 4, 5, 6, 7, 8,
			   9, 10, 11, 12, 13, 14, 15, 16};
	fl_op op = make_op(FL_OP_POOL2D, 1);
	fl_buf in = buf(SH(1, 1, 4, 4), x);
	fl_buf two = buf(SH(1, 2, 2, 2), F32(1, -2, 3, 0, -5, -6, -7, -8));

	(void)state;
	SET_INTS(&op, "kernel", 2, 2);
	check_eval(&op, &in, SH(1, 1, 2, 2), F32(6, 8, 14, 16), 0);
	check_eval(&op, &two, SH(1, 2, 1, 1), F32(3, -5), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "mode", "avg"), 0);
	check_eval(&op, &in, SH(1, 1, 2, 2), F32(3.5f, 5.5f, 11.5f, 13.5f), 0);
	check_eval(&op, &two, SH(1, 2, 1, 1), F32(0.5f, -6.5f), 0);
	/* overlapping windows: 3x3 kernel, stride 1 */
	SET_INTS(&op, "kernel", 3, 3);
	SET_INTS(&op, "stride", 1, 1);
	check_eval(&op, &in, SH(1, 1, 2, 2), F32(6, 7, 10, 11), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "mode", "max"), 0);
	check_eval(&op, &in, SH(1, 1, 2, 2), F32(11, 12, 15, 16), 0);
	/* a stride that leaves a remainder drops it: 1x3 windows, stride 2 */
	SET_INTS(&op, "kernel", 1, 3);
	SET_INTS(&op, "stride", 1, 2);
	check_eval(&op, &in, SH(1, 1, 4, 1), F32(3, 7, 11, 15), 0);
	/* dilated 2x2 windows, taps 2 apart (ONNX MaxPool's dilations) */
	SET_INTS(&op, "kernel", 2, 2);
	SET_INTS(&op, "stride", 1, 1);
	SET_INTS(&op, "dilation", 2, 2);
	check_eval(&op, &in, SH(1, 1, 2, 2), F32(11, 12, 15, 16), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "mode", "avg"), 0);
	check_eval(&op, &in, SH(1, 1, 2, 2), F32(6, 7, 10, 11), 0);
	fl_attrs_free(&op.attrs);
}

static void test_pool2d_errors(void **state)
{
	fl_op op = make_op(FL_OP_POOL2D, 1);
	fl_shape x = SH(1, 3, 4, 4), x3 = SH(3, 4, 4);

	(void)state;
	t_infer_fails(&op, &x, "attrs.kernel: required");
	SET_INTS(&op, "kernel", 5, 2);
	t_infer_fails(&op, &x, "attrs.kernel: window 5x2 is larger "
			  "than the input 4x4");
	SET_INTS(&op, "kernel", 2, 2);
	t_infer_fails(&op, &x3, "in[0]: expected rank 4 (NCHW), got rank 3");
	assert_int_equal(fl_attrs_set_string(&op.attrs, "mode", "sum"), 0);
	t_infer_fails(&op, &x,
			  "attrs.mode: expected \"max\" or \"avg\", got \"sum\"");
	fl_attrs_free(&op.attrs);
}

/* ------------------------------------------------------------------ */

static void test_transpose(void **state)
{
	fl_op op = make_op(FL_OP_TRANSPOSE, 1);
	fl_buf m = buf(SH(2, 3), F32(1, 2, 3, 4, 5, 6));
	/* x [2,2,3]: x[i][j][k] = 100i + 10j + k; perm [2,0,1] gives
	 * y[k][i][j] = x[i][j][k], shape [3,2,2] */
	fl_buf t = buf(SH(2, 2, 3), F32(0, 1, 2, 10, 11, 12,
					100, 101, 102, 110, 111, 112));

	(void)state;
	SET_INTS(&op, "perm", 1, 0);
	check_eval(&op, &m, SH(3, 2), F32(1, 4, 2, 5, 3, 6), 0);
	SET_INTS(&op, "perm", 2, 0, 1);
	check_eval(&op, &t, SH(3, 2, 2),
		   F32(0, 10, 100, 110, 1, 11, 101, 111, 2, 12, 102, 112), 0);
	SET_INTS(&op, "perm", 0, 2, 1);
	check_eval(&op, &t, SH(2, 3, 2),
		   F32(0, 10, 1, 11, 2, 12, 100, 110, 101, 111, 102, 112), 0);
	fl_attrs_free(&op.attrs);
}

static void test_transpose_errors(void **state)
{
	fl_op op = make_op(FL_OP_TRANSPOSE, 1);
	fl_shape x = SH(2, 3, 4);

	(void)state;
	t_infer_fails(&op, &x, "attrs.perm: required");
	SET_INTS(&op, "perm", 0, 1, 1);
	t_infer_fails(&op, &x, "attrs.perm: not a permutation of 0..2");
	SET_INTS(&op, "perm", 0, 1, 3);
	t_infer_fails(&op, &x, "attrs.perm: not a permutation of 0..2");
	SET_INTS(&op, "perm", 1, 0);
	t_infer_fails(&op, &x, "attrs.perm: 2 values for rank 3");
	fl_attrs_free(&op.attrs);
}

static void test_reshape(void **state)
{
	fl_op op = make_op(FL_OP_RESHAPE, 1);
	fl_buf x = buf(SH(2, 3), F32(1, 2, 3, 4, 5, 6));

	(void)state;
	SET_INTS(&op, "shape", 3, -1);
	check_eval(&op, &x, SH(3, 2), F32(1, 2, 3, 4, 5, 6), 0);
	SET_INTS(&op, "shape", 6);
	check_eval(&op, &x, SH(6), F32(1, 2, 3, 4, 5, 6), 0);
	SET_INTS(&op, "shape", 1, -1, 1, 1);
	check_eval(&op, &x, SH(1, 6, 1, 1), F32(1, 2, 3, 4, 5, 6), 0);
	fl_attrs_free(&op.attrs);
}

static void test_reshape_errors(void **state)
{
	fl_op op = make_op(FL_OP_RESHAPE, 1);
	fl_shape x = SH(3, 4);

	(void)state;
	t_infer_fails(&op, &x, "attrs.shape: required");
	SET_INTS(&op, "shape", 5, 3);
	t_infer_fails(&op, &x, "attrs.shape: [5,3] does not have the 12 "
			  "elements of [3,4]");
	SET_INTS(&op, "shape", -1, 5);
	t_infer_fails(&op, &x, "attrs.shape: [-1,5] does not fit the 12 "
			  "elements of [3,4]");
	SET_INTS(&op, "shape", -1, 2, -1);
	t_infer_fails(&op, &x, "attrs.shape[2]: only one entry may be -1");
	SET_INTS(&op, "shape", 12, 0);
	t_infer_fails(&op, &x, "attrs.shape[1]: must be >= 1 or -1, got 0");
	SET_INTS(&op, "shape", 4294967296, 4294967296, -1);
	t_infer_fails(&op, &x, "attrs.shape: [4294967296,4294967296,-1] "
			  "does not fit the 12 elements of [3,4]");
	SET_INTS(&op, "shape", 1, 1, 1, 1, 1, 1, 1, 1, 12);
	t_infer_fails(&op, &x, "attrs.shape: 9 values, at most 8 allowed");
	fl_attrs_free(&op.attrs);
}

static void test_concat(void **state)
{
	fl_op op = make_op(FL_OP_CONCAT, 2);
	fl_buf in[3] = {buf(SH(2, 1), F32(1, 2)),
			buf(SH(2, 2), F32(3, 4, 5, 6)),
			buf(SH(2, 1), F32(7, 8))};
	fl_buf rows[2] = {buf(SH(1, 2), F32(1, 2)),
			  buf(SH(2, 2), F32(3, 4, 5, 6))};

	(void)state;
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", 1), 0);
	check_eval(&op, in, SH(2, 3), F32(1, 3, 4, 2, 5, 6), 0);
	op.n_in = 3;
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", -1), 0);
	check_eval(&op, in, SH(2, 4), F32(1, 3, 4, 7, 2, 5, 6, 8), 0);
	fl_attrs_free(&op.attrs);
	op.n_in = 2;	/* default axis 0 */
	check_eval(&op, rows, SH(3, 2), F32(1, 2, 3, 4, 5, 6), 0);
	op.n_in = 1;
	check_eval(&op, rows, SH(1, 2), F32(1, 2), 0);
}

static void test_concat_errors(void **state)
{
	fl_op op = make_op(FL_OP_CONCAT, 2);
	fl_shape dims[2] = {SH(2, 3), SH(3, 3)};
	fl_shape ranks[2] = {SH(2, 3), SH(2, 3, 1)};
	/* 2^62 + 2^62 rows do not fit a signed 64-bit count */
	fl_shape huge[2] = {SH(4611686018427387904, 1),
			    SH(4611686018427387904, 1)};

	(void)state;
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", 1), 0);
	t_infer_fails(&op, dims, "in[1]: dim 0 is 3, but in[0] has 2");
	t_infer_fails(&op, ranks, "in[1]: rank 3, but in[0] has rank 2");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", 2), 0);
	t_infer_fails(&op, dims, "attrs.axis: axis 2 out of range for rank 2");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", 0), 0);
	t_infer_fails(&op, huge, "out: output has too many elements");
	fl_attrs_free(&op.attrs);
}

/* x [3,4] = 0..11 */
static void test_slice(void **state)
{
	const float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
	fl_op op = make_op(FL_OP_SLICE, 1);
	fl_buf in = buf(SH(3, 4), x);

	(void)state;
	/* rows 1.., columns 1 and 3 (start -3, end clamps, step 2) */
	SET_INTS(&op, "starts", 1, -3);
	SET_INTS(&op, "ends", 100, 4);
	SET_INTS(&op, "steps", 1, 2);
	check_eval(&op, &in, SH(2, 2), F32(5, 7, 9, 11), 0);
	/* negative end: everything but the last row and column */
	fl_attrs_free(&op.attrs);
	SET_INTS(&op, "starts", 0, 0);
	SET_INTS(&op, "ends", -1, -1);
	check_eval(&op, &in, SH(2, 3), F32(0, 1, 2, 4, 5, 6), 0);
	SET_INTS(&op, "starts", 2, 3);
	SET_INTS(&op, "ends", 3, 4);
	check_eval(&op, &in, SH(1, 1), F32(11), 0);
	SET_INTS(&op, "starts", 0, 0);
	SET_INTS(&op, "ends", 3, 4);
	SET_INTS(&op, "steps", 2, 3);
	check_eval(&op, &in, SH(2, 2), F32(0, 3, 8, 11), 0);
	fl_attrs_free(&op.attrs);
}

static void test_slice_errors(void **state)
{
	fl_op op = make_op(FL_OP_SLICE, 1);
	fl_shape x = SH(3, 4);

	(void)state;
	t_infer_fails(&op, &x, "attrs.starts: required");
	SET_INTS(&op, "starts", 0, 0);
	t_infer_fails(&op, &x, "attrs.ends: required");
	SET_INTS(&op, "ends", 3);
	t_infer_fails(&op, &x, "attrs.ends: 1 values for rank 2");
	SET_INTS(&op, "ends", 3, 4);
	SET_INTS(&op, "starts", 0, 4);
	t_infer_fails(&op, &x,
			  "attrs.starts[1]: 4 out of range for extent 4");
	SET_INTS(&op, "starts", -4, 0);
	t_infer_fails(&op, &x,
			  "attrs.starts[0]: -4 out of range for extent 3");
	SET_INTS(&op, "starts", 2, 0);
	SET_INTS(&op, "ends", 1, 4);
	t_infer_fails(&op, &x,
			  "attrs.ends[0]: empty slice (start 2, end 1)");
	SET_INTS(&op, "ends", -10, 4);
	t_infer_fails(&op, &x,
			  "attrs.ends[0]: empty slice (start 2, end 0)");
	SET_INTS(&op, "ends", 3, 4);
	SET_INTS(&op, "steps", 1, 0);
	t_infer_fails(&op, &x, "attrs.steps[1]: must be >= 1, got 0");
	fl_attrs_free(&op.attrs);
}

static void test_pad(void **state)
{
	fl_op op = make_op(FL_OP_PAD, 1);
	fl_buf in = buf(SH(2, 2), F32(1, 2, 3, 4));
	fl_buf v = buf(SH(3), F32(1, 2, 3));

	(void)state;
	/* one row on top, one column on the right */
	SET_INTS(&op, "pads", 1, 0, 0, 1);
	assert_int_equal(fl_attrs_set_number(&op.attrs, "value", 9), 0);
	check_eval(&op, &in, SH(3, 3), F32(9, 9, 9, 1, 2, 9, 3, 4, 9), 0);
	fl_attrs_free(&op.attrs);
	SET_INTS(&op, "pads", 2, 1);	/* default value 0 */
	check_eval(&op, &v, SH(6), F32(0, 0, 1, 2, 3, 0), 0);
	SET_INTS(&op, "pads", 0, 0, 0, 0);
	check_eval(&op, &in, SH(2, 2), F32(1, 2, 3, 4), 0);
	fl_attrs_free(&op.attrs);
}

static void test_pad_errors(void **state)
{
	fl_op op = make_op(FL_OP_PAD, 1);
	fl_shape x = SH(2, 2), wide = SH(4294967296, 2);

	(void)state;
	t_infer_fails(&op, &x, "attrs.pads: required");
	SET_INTS(&op, "pads", 1, 1);
	t_infer_fails(&op, &x, "attrs.pads: 2 values, expected 4 "
			  "(2 x rank 2)");
	SET_INTS(&op, "pads", 0, 0, -1, 0);
	t_infer_fails(&op, &x, "attrs.pads[2]: must be >= 0, got -1");
	SET_INTS(&op, "pads", 0, 0, 0, 4294967296);
	t_infer_fails(&op, &wide, "out: output has too many elements");
	SET_INTS(&op, "pads", 0, 0, 0, 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "value", "x"), 0);
	t_infer_fails(&op, &x, "attrs.value: expected a number");
	fl_attrs_free(&op.attrs);
}

/* x [3,2] = {1,2, 3,4, 5,6} */
static void test_gather(void **state)
{
	const float x[] = {1, 2, 3, 4, 5, 6};
	fl_op op = make_op(FL_OP_GATHER, 2);
	fl_buf rows[2] = {buf(SH(3, 2), x), buf(SH(2), F32(2, 0))};
	/* indices [2,2] along axis 1; out-of-range and fractional values
	 * floor then clamp: -1 -> 0, 5 -> 1, 0.7 -> 0, 1.2 -> 1 */
	fl_buf cols[2] = {buf(SH(3, 2), x),
			  buf(SH(2, 2), F32(-1, 5, 0.7f, 1.2f))};
	fl_buf sc[2] = {buf(SH(3, 2), x), buf(fl_shape_scalar(), F32(1))};

	(void)state;
	check_eval(&op, rows, SH(2, 2), F32(5, 6, 1, 2), 0);
	check_eval(&op, sc, SH(2), F32(3, 4), 0);
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", -1), 0);
	check_eval(&op, cols, SH(3, 2, 2),
		   F32(1, 2, 1, 2, 3, 4, 3, 4, 5, 6, 5, 6), 0);
	fl_attrs_free(&op.attrs);
}

static void test_gather_errors(void **state)
{
	fl_op op = make_op(FL_OP_GATHER, 2);
	fl_shape in[2] = {SH(3, 2), SH(4)};
	fl_shape deep[2] = {SH(2, 2, 2, 2), SH(1, 1, 1, 1, 1, 1)};

	(void)state;
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", 2), 0);
	t_infer_fails(&op, in, "attrs.axis: axis 2 out of range for rank 2");
	assert_int_equal(fl_attrs_set_number(&op.attrs, "axis", 0), 0);
	t_infer_fails(&op, deep, "out: rank 9 exceeds the maximum of 8");
	fl_attrs_free(&op.attrs);
}

static void test_broadcast_to(void **state)
{
	fl_op op = make_op(FL_OP_BROADCAST_TO, 1);
	fl_buf row = buf(SH(3), F32(1, 2, 3));
	fl_buf col = buf(SH(2, 1), F32(1, 2));
	fl_buf sc = buf(fl_shape_scalar(), F32(7));
	fl_shape bad = SH(2, 2);

	(void)state;
	SET_INTS(&op, "shape", 2, 3);
	check_eval(&op, &row, SH(2, 3), F32(1, 2, 3, 1, 2, 3), 0);
	check_eval(&op, &col, SH(2, 3), F32(1, 1, 1, 2, 2, 2), 0);
	SET_INTS(&op, "shape", 2, 1, 2);
	check_eval(&op, &sc, SH(2, 1, 2), F32(7, 7, 7, 7), 0);
	SET_INTS(&op, "shape", 3);
	t_infer_fails(&op, &bad, "attrs.shape: [2,2] does not broadcast "
			  "to [3]");
	SET_INTS(&op, "shape", 2, 0);
	t_infer_fails(&op, &bad, "attrs.shape[1]: must be >= 1, got 0");
	fl_attrs_free(&op.attrs);
	t_infer_fails(&op, &bad, "attrs.shape: required");
}

static void test_custom(void **state)
{
	fl_op op = make_op(FL_OP_CUSTOM, 1);
	fl_buf x = buf(SH(2, 3), F32(1, 2, 3, -1, 0.5f, 10));
	fl_shape s = SH(2, 3);

	(void)state;
	check_eval(&op, &x, SH(2, 3), F32(1, 3, 6, -1, -0.5f, 9.5f), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "fn", "copy"), 0);
	check_eval(&op, &x, SH(2, 3), F32(1, 2, 3, -1, 0.5f, 10), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "fn", "cumsum"), 0);
	x.shape = SH(6);
	check_eval(&op, &x, SH(6), F32(1, 3, 6, 5, 5.5f, 15.5f), 0);
	assert_int_equal(fl_attrs_set_string(&op.attrs, "fn", "sort"), 0);
	t_infer_fails(&op, &s, "attrs.fn: unknown function \"sort\" "
			  "(expected \"cumsum\", \"copy\" or \"opaque\")");
	fl_attrs_free(&op.attrs);
}

/* Every primitive of the table has infer and eval and no expansion; every
 * compound has all three. */
static void test_table_is_complete(void **state)
{
	(void)state;
	for (int k = 0; k < FL_OP_COUNT; k++) {
		const fl_op_info *info = fl_op_info_of((fl_op_kind)k);

		assert_non_null(info);
		assert_int_equal(info->kind, k);
		assert_non_null(info->infer);
		assert_non_null(info->eval);
		assert_true(fl_op_lookup(info->name) == info);
		assert_true((info->expand != NULL) ==
			    fl_op_is_compound((fl_op_kind)k));
	}
}

FL_SUITE(ops,
	 cmocka_unit_test(test_table_is_complete),
	 cmocka_unit_test(test_unary_values),
	 cmocka_unit_test(test_unary_shapes_and_cast),
	 cmocka_unit_test(test_binary_values),
	 cmocka_unit_test(test_binary_broadcast_both_sides),
	 cmocka_unit_test(test_binary_errors),
	 cmocka_unit_test(test_where),
	 cmocka_unit_test(test_reduce_values),
	 cmocka_unit_test(test_reduce_inner_and_outer_axes),
	 cmocka_unit_test(test_reduce_errors),
	 cmocka_unit_test(test_matmul_values),
	 cmocka_unit_test(test_matmul_batch_broadcast),
	 cmocka_unit_test(test_matmul_wide_output),
	 cmocka_unit_test(test_matmul_transposed_wide_exact),
	 cmocka_unit_test(test_matmul_errors),
	 cmocka_unit_test(test_conv2d_values),
	 cmocka_unit_test(test_conv2d_channels_and_groups),
	 cmocka_unit_test(test_conv2d_rows_exact),
	 cmocka_unit_test(test_conv2d_errors),
	 cmocka_unit_test(test_pool2d_values),
	 cmocka_unit_test(test_pool2d_errors),
	 cmocka_unit_test(test_transpose),
	 cmocka_unit_test(test_transpose_errors),
	 cmocka_unit_test(test_reshape),
	 cmocka_unit_test(test_reshape_errors),
	 cmocka_unit_test(test_concat),
	 cmocka_unit_test(test_concat_errors),
	 cmocka_unit_test(test_slice),
	 cmocka_unit_test(test_slice_errors),
	 cmocka_unit_test(test_pad),
	 cmocka_unit_test(test_pad_errors),
	 cmocka_unit_test(test_gather),
	 cmocka_unit_test(test_gather_errors),
	 cmocka_unit_test(test_broadcast_to),
	 cmocka_unit_test(test_custom));
