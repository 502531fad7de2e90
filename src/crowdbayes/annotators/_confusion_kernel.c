/* One fused E-step + M-step pass of the confusion-matrix label models, over a range of tasks.
 *
 * The maths (see confusion_pass.py): with the count matrix A in CSR form (rows: tasks, columns:
 * c = j*K + x for worker j saying x), the table theta[c*S + k] = θ[j, k, x] (rows padded to a
 * stride S >= K with zeros) and the prior π_k, every task i gets
 *
 *     p_k = π_k · Π_{c in row i} theta[c*S + k]^{A[i, c]},   total_i = Σ_k p_k,
 *     r_{ik} = p_k / total_i                   (gold tasks: p_k = 0 for k ≠ gold),
 *
 * and the pass adds, with a per-task weight w_i (1 unless tasks are left out),
 *
 *     counts[c*S + k] += w_i · A[i, c] · r_{ik},   classes[k] += w_i · r_{ik},
 *     log evidence   += log total_i.
 *
 * Products replace the sums of logs of the numpy path, so the pass needs no exp or log per
 * task. Underflow: a task whose product may leave the normal range (its number of labels times
 * log2 of the smallest non-zero table entry, plus that of the prior, below -900) is rescaled by
 * an exact power of two whenever its largest p_k drops below 2^-300; a task whose total still
 * ends below 2^-1000 (or is 0) is redone in log space, so subnormal products can move no
 * responsibility by more than 2^-74. The log evidence is kept as a product of the totals
 * (mantissa) and a power of two, renormalised when the mantissa leaves [2^-500, 2^500].
 *
 * Speed: with every count 1 (no repeated labels) and K <= 8, the pass runs on whole padded rows
 * as vectors (SSE2, or AVX2 where the CPU has it), specialised for S = 2, 4, 8; otherwise plain
 * loops. The tasks come in chunks that run on threads (pthreads, the GIL released), each chunk
 * with its own counts, classes and evidence; the calling thread adds the chunks' counts in
 * chunk order, the caller the rest. On one thread the chunks run in order on two count buffers
 * (the same sums, in the same order). The pass writes its table from the confusion matrices
 * and the expected counts [j, k, x] from its rows of counts itself, and the responsibilities
 * only where asked: a pass whose posteriors nobody keeps (every EM pass but the last) saves
 * their K scattered stores per task (1.46 -> 1.27 ms a pass, K = 5, 1M labels, one thread,
 * medians on a busy machine).
 *
 * Also here: the pass's layout of labels grouped by task straight from their codes
 * (label_layout: row pointers, int32 columns, labels per column), the statistics of EM's usual
 * start, each task's vote shares (vote_share_counts), the expected counts [j, k, x] from the
 * kernel's rows of counts (expected_counts), the M-step's confusion rows (confusion_map, the
 * operations of confusion.py's full_confusion_map) and the pass's padded table from them
 * (padded_table), so that a fit's only numpy work on the labels is the encoding.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../_buffer_check.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_CLASSES 64
#define INLINE static inline __attribute__((always_inline))

typedef struct {
    double mantissa; /* product of the totals, in [2^-500, 2^500] */
    double exponent; /* power of two of the product */
    int zero;        /* a total was 0: the log evidence is -inf */
} evidence_t;

typedef struct {
    const int64_t *indptr; /* (n_tasks + 1,) CSR row pointers */
    const int32_t *indices; /* (nnz,) columns c = j*K + x */
    const double *data;     /* (nnz,) counts; NULL: all 1 */
    const double *theta;    /* (n_columns * S,) theta[c*S + k] */
    const double *prior;    /* (K,) */
    const int64_t *gold;    /* (n_tasks,) gold class or -1; NULL: none */
    const double *weight;   /* (n_tasks,) weights of the statistics; NULL: all 1 */
    double min_log2, prior_log2; /* log2 of the smallest non-zero theta / prior entry */
    int unit_counts; /* every count is 1 */
    int cstride;     /* row stride of counts: S, or 4 with K = 5 (the last class left out) */
    Py_ssize_t n_tasks, start, stop;
    double *resp;    /* (K, n_tasks) class-major, written for tasks [start, stop); NULL: not */
    double *counts;  /* (n_columns * S,) set to this range's counts */
    double *classes; /* (K,) set to this range's class totals */
} pass_t;

/* the count of entry e (data NULL: every count is 1) */
#define COUNT(a, e) ((a)->data ? (a)->data[e] : 1.0)

INLINE void evidence_mul(evidence_t *ev, double total, double scale_bits) {
    ev->exponent += scale_bits;
    if (!(total > 0.0)) {
        ev->zero = 1;
        return;
    }
    ev->mantissa *= total;
    if (ev->mantissa < 0x1p-500 || ev->mantissa > 0x1p500) {
        int e;
        ev->mantissa = frexp(ev->mantissa, &e);
        ev->exponent += e;
    }
}

INLINE double max_of(const double *p, int K) {
    double m = p[0];
    for (int k = 1; k < K; k++) m = p[k] > m ? p[k] : m;
    return m;
}

/* p_k *= row[k]^count; when asked, rescale p by a power of two so that its largest entry stays
 * in [2^-300, 1] (returns the bits to add to the exponent; exact) */
INLINE double multiply_row(double *p, const double *row, double count, int K, int check) {
    if (count == 1.0) {
        for (int k = 0; k < K; k++) p[k] *= row[k];
    } else {
        for (int k = 0; k < K; k++) p[k] *= pow(row[k], count);
    }
    if (check) {
        double m = max_of(p, K);
        if (m < 0x1p-300 && m > 0.0) {
            int e;
            frexp(m, &e);
            for (int k = 0; k < K; k++) p[k] = ldexp(p[k], -e);
            return (double)e;
        }
    }
    return 0.0;
}

/* Task i in log space (the rare tasks whose total fell below 2^-1000, where the products may
 * have lost the smaller classes): p_k = exp(l_k - max l); returns max l / log 2. */
static double log_task(const pass_t *a, double *p, Py_ssize_t i, int64_t g, int K, int S) {
    for (int k = 0; k < K; k++) p[k] = log(a->prior[k]);
    for (int64_t e = a->indptr[i]; e < a->indptr[i + 1]; e++) {
        const double *row = a->theta + (int64_t)a->indices[e] * S;
        for (int k = 0; k < K; k++) p[k] += COUNT(a, e) * log(row[k]);
    }
    for (int k = 0; k < K; k++)
        if (g >= 0 && k != g) p[k] = -INFINITY;
    double m = max_of(p, K);
    if (!isfinite(m)) m = 0.0;
    for (int k = 0; k < K; k++) p[k] = exp(p[k] - m);
    return m / M_LN2;
}

/* Task i from its likelihood product p (K entries, scaled by 2^scale): prior, gold clamp, log
 * space redo if needed, evidence, responsibilities written to resp and left in p (times the
 * task's weight, padded with zeros up to S), class totals. Returns 0 when the weight is 0 (no
 * counts to add). */
INLINE int finish_task(const pass_t *a, evidence_t *ev, double *classes, double *p, double scale,
                       Py_ssize_t i, int K, int S) {
    const int64_t g = a->gold ? a->gold[i] : -1;
    double total = 0.0;
    for (int k = 0; k < K; k++) {
        p[k] = (g >= 0 && k != g) ? 0.0 : p[k] * a->prior[k];
        total += p[k];
    }
    if (!(total >= 0x1p-1000)) {
        scale = log_task(a, p, i, g, K, S);
        total = 0.0;
        for (int k = 0; k < K; k++) total += p[k];
    }
    evidence_mul(ev, total, scale);
    /* a division, not a product with 1/total (x / x == 1), over the whole padded row: with S a
     * constant the divisions are whole vectors (the zeros of the padding stay zeros) */
    for (int k = K; k < S; k++) p[k] = 0.0;
    for (int k = 0; k < S; k++) p[k] /= total;
    if (a->resp)
        for (int k = 0; k < K; k++) a->resp[(int64_t)k * a->n_tasks + i] = p[k];
    if (!(total > 0.0))
        for (int k = K; k < S; k++) p[k] = 0.0;
    const double w = a->weight ? a->weight[i] : 1.0;
    if (w == 0.0) return 0;
    for (int k = 0; k < K; k++) {
        p[k] *= w;
        classes[k] += p[k];
    }
    return 1;
}

/* the product over task i's labels in the careful way (rescaled; see the header) */
INLINE double checked_product(const pass_t *a, double *p, Py_ssize_t i, int K, int S) {
    double scale = 0.0;
    for (int k = 0; k < K; k++) p[k] = 1.0;
    for (int64_t e = a->indptr[i]; e < a->indptr[i + 1]; e++)
        scale += multiply_row(p, a->theta + (int64_t)a->indices[e] * S, COUNT(a, e), K, 1);
    return scale;
}

/* The generic pass over tasks [start, stop) (any K, row stride S): plain loops. */
static evidence_t run_pass_generic(const pass_t *a, const int K, const int S) {
    evidence_t ev = {1.0, 0.0, 0};
    double classes[MAX_CLASSES] = {0.0}, p[MAX_CLASSES];
    for (Py_ssize_t i = a->start; i < a->stop; i++) {
        const int64_t lo = a->indptr[i], hi = a->indptr[i + 1];
        const int check = (double)(hi - lo) * a->min_log2 + a->prior_log2 < -900.0;
        double scale = 0.0;
        for (int k = 0; k < K; k++) p[k] = 1.0;
        for (int64_t e = lo; e < hi; e++)
            scale += multiply_row(p, a->theta + (int64_t)a->indices[e] * S, COUNT(a, e), K, check);
        if (!finish_task(a, &ev, classes, p, scale, i, K, S)) continue;
        for (int64_t e = lo; e < hi; e++) {
            double *out = a->counts + (int64_t)a->indices[e] * S;
            for (int k = 0; k < K; k++) out[k] += COUNT(a, e) * p[k];
        }
    }
    for (int k = 0; k < K; k++) a->classes[k] += classes[k];
    return ev;
}

/* The row pieces of the vector passes: a padded row of W doubles is W/L pieces of L doubles (a
 * GCC vector type: 2 for SSE2, 4 for AVX2), named u0, u1, ... so that they stay in registers
 * (EACH_n(X) expands X(0) ... X(n-1)). */
typedef double v2d __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
#define EACH_1(X) X(0)
#define EACH_2(X) X(0) X(1)
#define EACH_4(X) X(0) X(1) X(2) X(3)
#define V_LOAD(x) ({ VT r_; memcpy(&r_, (x), sizeof r_); r_; })
#define V_STORE(x, v) ({ VT r_ = (v); memcpy((x), &r_, sizeof r_); })
#define V_DECLARE(j) VT t##j, s##j;
#define V_PRIOR_ROW(j) const VT prior##j = V_LOAD(prior_row + L * j); VT classes##j = zero;
#define V_SET_U(j) VT u##j = V_LOAD(r0 + L * j);
#define V_SET_V(j) VT v##j = V_LOAD(r1 + L * j);
#define V_MUL_U(j) u##j *= V_LOAD(r0 + L * j);
#define V_MUL_V(j) v##j *= V_LOAD(r1 + L * j);
#define V_PRODUCT(j) t##j = u##j * v##j;
#define V_ROW(j) t##j = V_LOAD(r0 + L * j);
#define V_ONE(j) t##j = one;
#define V_FROM_P(j) t##j = V_LOAD(p + L * j);
#define V_TO_P(j) V_STORE(p + L * j, t##j);
#define V_JOINT(j) V_STORE(joint + L * j, t##j * prior##j);
#define V_NORMALISE(j) s##j = t##j * prior##j / total_v;
#define V_S_TO_P(j) V_STORE(p + L * j, s##j);
#define V_WEIGHT(j) s##j *= w_v;
#define V_RESPONSIBILITY(j) s##j = V_LOAD(p + L * j);
#define V_CLASSES(j) classes##j += s##j;
#define V_CLASSES_OUT(j) V_STORE(p + L * j, classes##j);
#define V_ADD(j) V_STORE(row + L * j, V_LOAD(row + L * j) + s##j);
#define V_ADD_NEXT(j) V_STORE(next + L * j, V_LOAD(next + L * j) + s##j);

/* The number of labels from which a task's product is checked for underflow (rescaled: see the
 * header), for the smallest table and prior entries 2^min_log2 and 2^prior_log2: the least n
 * with n · min_log2 + prior_log2 < -900 in doubles (INT64_MAX: none). That expression does not
 * increase with n (min_log2 <= 0, and rounding is monotone), so "n at least this" is the
 * same test, as one integer comparison per task. */
static int64_t first_checked(double min_log2, double prior_log2) {
#define CHECKED(n) ((double)(n) * min_log2 + prior_log2 < -900.0)
    if (CHECKED(0)) return 0;
    int64_t hi = 1;
    while (hi < ((int64_t)1 << 62) && !CHECKED(hi)) hi *= 2;
    if (!CHECKED(hi)) return INT64_MAX;
    int64_t lo = hi / 2; /* not checked at lo, checked at hi */
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (CHECKED(mid)) hi = mid;
        else lo = mid;
    }
    return hi;
#undef CHECKED
}

/* The pass for K <= W classes with rows padded to W when every count is 1 (no repeated labels),
 * with pieces of type VT (L doubles; EACH: W/L of them) and function attributes ATTR; the count
 * rows have WC <= W entries (EACH_C: WC/L pieces), WC = 4 < K = 5 leaving the last class out
 * (the caller gets it from the label totals, as the responsibilities sum to one): the
 * product over a task's labels runs as two interleaved products u, v (shorter dependency
 * chains: u takes the task's labels 0, 2, 4, ..., v labels 1, 3, 5, ..., one after the other,
 * four labels per loop turn; u and v start from the first two rows, which is 1 · row exactly),
 * and each count row gets W/L vector adds, two labels per loop turn. (Software prefetching of
 * the rows ahead was tried: no gain, the tables fit in L2.) PLAIN: no gold and no weights (a
 * constant, so that the usual call has no test for them per task).
 *
 * The usual task (no gold, its total at least 2^-1000) is finished in the vector registers:
 * the same operations as finish_task, lane by lane (prior, the total summed class by class,
 * the division, the weight, the class totals), so the same numbers, without the stores of
 * single classes that a whole-row load then waits for (a store-forwarding stall per task:
 * 1.6 → 1.3 ms per pass, K = 5, 1M labels). The other tasks go through finish_task. The
 * fields of the pass are read into locals first (stores to the counts could alias them, and the
 * compiler would read them again for every task). */
#define DEFINE_VECTOR_PASS(NAME, W, EACH, L, ATTR, WC, EACH_C)                                \
    ATTR INLINE evidence_t NAME(const pass_t *a, const int K, const int PLAIN) {              \
        evidence_t ev = {1.0, 0.0, 0};                                                        \
        const int32_t *idx = a->indices;                                                      \
        const int64_t *indptr = a->indptr, *gold = PLAIN ? NULL : a->gold;                    \
        const double *theta = a->theta, *weight = PLAIN ? NULL : a->weight;                   \
        double *counts = a->counts, *resp = a->resp;                                          \
        const Py_ssize_t n_tasks = a->n_tasks, stop = a->stop;                                \
        /* the test of the header per task where the smallest entry exceeds 1 (not monotone) */ \
        const int exact_check = !(a->min_log2 <= 0.0);                                        \
        const int64_t n_check = exact_check ? 0 : first_checked(a->min_log2, a->prior_log2);  \
        double p[W] __attribute__((aligned(64))), joint[W] __attribute__((aligned(64)));      \
        double prior_row[W] __attribute__((aligned(64)));                                     \
        for (int k = 0; k < W; k++) prior_row[k] = k < K ? a->prior[k] : 0.0;                 \
        const VT one = (VT){0} + 1.0, zero = (VT){0};                                         \
        EACH(V_PRIOR_ROW)                                                                     \
        for (Py_ssize_t i = a->start; i < stop; i++) {                                        \
            const int64_t lo = indptr[i], hi = indptr[i + 1];                                 \
            double scale = 0.0;                                                               \
            EACH(V_DECLARE)                                                                   \
            if (exact_check ? (double)(hi - lo) * a->min_log2 + a->prior_log2 < -900.0        \
                            : hi - lo >= n_check) {                                           \
                scale = checked_product(a, p, i, K, W);                                       \
                for (int k = K; k < W; k++) p[k] = 0.0;                                       \
                EACH(V_FROM_P)                                                                \
            } else if (hi - lo >= 2) {                                                        \
                const double *r0 = theta + (int64_t)idx[lo] * W;                              \
                const double *r1 = theta + (int64_t)idx[lo + 1] * W;                          \
                EACH(V_SET_U)                                                                 \
                EACH(V_SET_V)                                                                 \
                int64_t e = lo + 2;                                                           \
                for (; e + 3 < hi; e += 4) {                                                  \
                    r0 = theta + (int64_t)idx[e] * W;                                         \
                    r1 = theta + (int64_t)idx[e + 1] * W;                                     \
                    EACH(V_MUL_U)                                                             \
                    EACH(V_MUL_V)                                                             \
                    r0 = theta + (int64_t)idx[e + 2] * W;                                     \
                    r1 = theta + (int64_t)idx[e + 3] * W;                                     \
                    EACH(V_MUL_U)                                                             \
                    EACH(V_MUL_V)                                                             \
                }                                                                             \
                if (e + 1 < hi) {                                                             \
                    r0 = theta + (int64_t)idx[e] * W;                                         \
                    r1 = theta + (int64_t)idx[e + 1] * W;                                     \
                    EACH(V_MUL_U)                                                             \
                    EACH(V_MUL_V)                                                             \
                    e += 2;                                                                   \
                }                                                                             \
                if (e < hi) {                                                                 \
                    r0 = theta + (int64_t)idx[e] * W;                                         \
                    EACH(V_MUL_U)                                                             \
                }                                                                             \
                EACH(V_PRODUCT)                                                               \
            } else if (hi - lo == 1) {                                                        \
                const double *r0 = theta + (int64_t)idx[lo] * W;                              \
                EACH(V_ROW)                                                                   \
            } else {                                                                          \
                EACH(V_ONE)                                                                   \
            }                                                                                 \
            EACH(V_JOINT)                                                                     \
            double total = joint[0];                                                          \
            for (int k = 1; k < K; k++) total += joint[k];                                    \
            if ((gold && gold[i] >= 0) || !(total >= 0x1p-1000)) {                            \
                double unused[W] = {0.0}; /* its class totals: added below, in order */      \
                EACH(V_TO_P)                                                                  \
                if (!finish_task(a, &ev, unused, p, scale, i, K, W)) continue;                \
                EACH(V_RESPONSIBILITY)                                                        \
            } else {                                                                          \
                /* evidence_mul, for a total known to be positive */                          \
                ev.exponent += scale;                                                         \
                ev.mantissa *= total;                                                         \
                if (ev.mantissa < 0x1p-500 || ev.mantissa > 0x1p500) {                        \
                    int e_;                                                                   \
                    ev.mantissa = frexp(ev.mantissa, &e_);                                    \
                    ev.exponent += e_;                                                        \
                }                                                                             \
                const VT total_v = zero + total;                                              \
                EACH(V_NORMALISE)                                                             \
                if (resp) {                                                                   \
                    EACH(V_S_TO_P)                                                            \
                    for (int k = 0; k < K; k++) resp[(int64_t)k * n_tasks + i] = p[k];        \
                }                                                                             \
                if (weight) {                                                                 \
                    const double w = weight[i];                                               \
                    if (w == 0.0) continue;                                                   \
                    const VT w_v = zero + w;                                                  \
                    EACH(V_WEIGHT)                                                            \
                }                                                                             \
            }                                                                                 \
            EACH(V_CLASSES)                                                                   \
            int64_t e = lo;                                                                   \
            for (; e + 1 < hi; e += 2) {                                                      \
                double *row = counts + (int64_t)idx[e] * WC;                                  \
                double *next = counts + (int64_t)idx[e + 1] * WC;                             \
                EACH_C(V_ADD)                                                                 \
                EACH_C(V_ADD_NEXT)                                                            \
            }                                                                                 \
            if (e < hi) {                                                                     \
                double *row = counts + (int64_t)idx[e] * WC;                                  \
                EACH_C(V_ADD)                                                                 \
            }                                                                                 \
        }                                                                                     \
        EACH(V_CLASSES_OUT)                                                                   \
        for (int k = 0; k < K; k++) a->classes[k] += p[k];                                    \
        return ev;                                                                            \
    }

/* the pass for one K (a constant: the per-task loops over the classes unroll): vector_k<K> */
#define DEFINE_K(VECTOR_PASS, KC, ATTR)                                                       \
    ATTR static evidence_t VECTOR_PASS##_k##KC(const pass_t *a) {                             \
        return a->gold || a->weight ? VECTOR_PASS(a, KC, 0) : VECTOR_PASS(a, KC, 1);         \
    }
/* vector_k<K> for every K of the strides 2, 4, 8, and a dispatch on K to them */
#define DEFINE_VECTOR_PASSES(PREFIX, ATTR)                                                    \
    DEFINE_K(PREFIX##_2, 2, ATTR)                                                             \
    DEFINE_K(PREFIX##_4, 3, ATTR)                                                             \
    DEFINE_K(PREFIX##_4, 4, ATTR)                                                             \
    DEFINE_K(PREFIX##_8, 5, ATTR)                                                             \
    DEFINE_K(PREFIX##_8c4, 5, ATTR)                                                           \
    DEFINE_K(PREFIX##_8, 6, ATTR)                                                             \
    DEFINE_K(PREFIX##_8, 7, ATTR)                                                             \
    DEFINE_K(PREFIX##_8, 8, ATTR)                                                             \
    static evidence_t PREFIX(const pass_t *a, int K) {                                        \
        switch (K) {                                                                          \
        case 2: return PREFIX##_2_k2(a);                                                      \
        case 3: return PREFIX##_4_k3(a);                                                      \
        case 4: return PREFIX##_4_k4(a);                                                      \
        case 5: return a->cstride == 4 ? PREFIX##_8c4_k5(a) : PREFIX##_8_k5(a);               \
        case 6: return PREFIX##_8_k6(a);                                                      \
        case 7: return PREFIX##_8_k7(a);                                                      \
        default: return PREFIX##_8_k8(a);                                                     \
        }                                                                                     \
    }

#define VT v2d
#define L 2
DEFINE_VECTOR_PASS(sse2_pass_2, 2, EACH_1, 2, , 2, EACH_1)
DEFINE_VECTOR_PASS(sse2_pass_4, 4, EACH_2, 2, , 4, EACH_2)
DEFINE_VECTOR_PASS(sse2_pass_8, 8, EACH_4, 2, , 8, EACH_4)
DEFINE_VECTOR_PASS(sse2_pass_8c4, 8, EACH_4, 2, , 4, EACH_2)
DEFINE_VECTOR_PASSES(sse2_pass, )
#undef VT
#undef L
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_AVX2_PASS 1
#define AVX2 __attribute__((target("avx2")))
#define VT v2d
#define L 2
DEFINE_VECTOR_PASS(avx2_pass_2, 2, EACH_1, 2, AVX2, 2, EACH_1)
#undef VT
#undef L
#define VT v4d
#define L 4
DEFINE_VECTOR_PASS(avx2_pass_4, 4, EACH_1, 4, AVX2, 4, EACH_1)
DEFINE_VECTOR_PASS(avx2_pass_8, 8, EACH_2, 4, AVX2, 8, EACH_2)
DEFINE_VECTOR_PASS(avx2_pass_8c4, 8, EACH_2, 4, AVX2, 4, EACH_1)
DEFINE_VECTOR_PASSES(avx2_pass, AVX2)
#undef VT
#undef L
#endif

/* the row stride the specialised passes expect for K classes (confusion_pass.py: row_stride) */
static int row_stride(int K) { return K == 2 ? 2 : K <= 4 ? 4 : K <= 8 ? 8 : K; }

static evidence_t run_pass_any(const pass_t *a, int K, int S) {
    if (a->unit_counts && K >= 2 && K <= 8 && S == row_stride(K)) {
#ifdef HAVE_AVX2_PASS
        if (__builtin_cpu_supports("avx2")) return avx2_pass(a, K);
#endif
        return sse2_pass(a, K);
    }
    return run_pass_generic(a, K, S);
}

/* log2 of the smallest non-zero entry of x[0, n) (0 when every entry is 0) */
static double smallest_log2(const double *x, Py_ssize_t n) {
    /* running minima of the entries with 0 (and NaN) read as infinity, without a branch (the
     * minimum is the same in any order): whole vectors where the compiler has SSE2 */
    double smallest = INFINITY;
    Py_ssize_t i = 0;
#ifdef __SSE2__
    const __m128d zero = _mm_setzero_pd(), inf = _mm_set1_pd(INFINITY);
    __m128d m0 = inf, m1 = inf;
    for (; i + 4 <= n; i += 4) {
        const __m128d a = _mm_loadu_pd(x + i), b = _mm_loadu_pd(x + i + 2);
        const __m128d pa = _mm_cmpgt_pd(a, zero), pb = _mm_cmpgt_pd(b, zero);
        m0 = _mm_min_pd(m0, _mm_or_pd(_mm_and_pd(pa, a), _mm_andnot_pd(pa, inf)));
        m1 = _mm_min_pd(m1, _mm_or_pd(_mm_and_pd(pb, b), _mm_andnot_pd(pb, inf)));
    }
    double m[4];
    _mm_storeu_pd(m, m0);
    _mm_storeu_pd(m + 2, m1);
    for (int h = 0; h < 4; h++) smallest = m[h] < smallest ? m[h] : smallest;
#endif
    for (; i < n; i++)
        if (x[i] > 0.0 && x[i] < smallest) smallest = x[i];
    return smallest == INFINITY ? 0.0 : log2(smallest);
}

/* The expected counts out[j, k, x] (W x K x K) from counts[(j*K + x)*C + k] for the classes
 * k < n; with n = K - 1 the last class is the label totals less the others,
 * max(totals[j*K + x] - (((c_0 + c_1) + c_2) + ...), 0) (numpy's sum over the classes, term by
 * term; every task's responsibilities sum to one). */
static void fill_expected(const double *counts, const double *totals, Py_ssize_t W, int K, int C,
                          int n, double *out) {
    for (Py_ssize_t j = 0; j < W; j++) {
        double *block = out + j * K * K;
        for (int x = 0; x < K; x++) {
            const double *row = counts + (j * K + x) * C;
            for (int k = 0; k < n; k++) block[k * K + x] = row[k];
            if (n < K) {
                double sum = row[0];
                for (int k = 1; k < n; k++) sum += row[k];
                const double rest = totals[j * K + x] - sum;
                block[(K - 1) * K + x] = rest < 0.0 ? 0.0 : rest; /* NaN stays */
            }
        }
    }
}

/* The pass's table from theta (W x K x K): out[(j*K + x)*S + k] = theta[j, k, x], zeros for
 * k >= K. */
static void fill_table(const double *theta, Py_ssize_t W, int K, int S, double *out) {
    for (Py_ssize_t j = 0; j < W; j++) {
        const double *block = theta + j * K * K;
        for (int x = 0; x < K; x++) {
            double *row = out + (j * K + x) * S;
            for (int k = 0; k < K; k++) row[k] = block[k * K + x];
            for (int k = K; k < S; k++) row[k] = 0.0;
        }
    }
}

/* The chunks of one pass and the threads that run them: each thread claims the next chunk
 * (an atomic counter) until none is left; each chunk writes only its own counts, classes and
 * evidence, so the results do not depend on which thread ran it. The caller works too and
 * waits only for the chunks to be finished, not for the helper threads (detached): a helper
 * that gets its core late finds nothing left to claim and exits, touching only this struct,
 * which the last of its users frees. */
typedef struct {
    pass_t base;            /* everything but start, stop, counts, classes */
    int K, S;
    const int64_t *bounds;  /* (n_chunks + 1,) task boundaries */
    Py_ssize_t n_chunks, counts_size;
    double *counts, *classes, *parts; /* per chunk: counts_size, K, 3 (log2 mantissa, exp, 0) */
    Py_ssize_t next;        /* the next chunk to claim */
    Py_ssize_t finished;    /* chunks done (under the mutex) */
    int users;              /* threads still holding the struct (atomic) */
    pthread_mutex_t mutex;
    pthread_cond_t all_done;
} chunks_t;

/* chunk `chunk` of the pass, its counts written to `counts` (zeroed first) */
static void run_chunk(chunks_t *c, Py_ssize_t chunk, double *counts) {
    pass_t a = c->base;
    a.start = c->bounds[chunk];
    a.stop = c->bounds[chunk + 1];
    a.counts = counts;
    a.classes = c->classes + chunk * c->K;
    memset(a.counts, 0, (size_t)c->counts_size * sizeof(double));
    memset(a.classes, 0, (size_t)c->K * sizeof(double));
    const evidence_t ev = run_pass_any(&a, c->K, c->S);
    c->parts[3 * chunk] = log2(ev.mantissa);
    c->parts[3 * chunk + 1] = ev.exponent;
    c->parts[3 * chunk + 2] = ev.zero;
}

static void claim_chunks(chunks_t *c) {
    Py_ssize_t chunk;
    while ((chunk = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED)) < c->n_chunks) {
        run_chunk(c, chunk, c->counts + chunk * c->counts_size);
        pthread_mutex_lock(&c->mutex);
        if (++c->finished == c->n_chunks) pthread_cond_signal(&c->all_done);
        pthread_mutex_unlock(&c->mutex);
    }
}

/* The chunks one after the other on the calling thread: chunk 0 into counts[0], every later
 * chunk into one scratch buffer (counts[1]) that is added into counts[0] as soon as it is
 * done, in chunk order: the numbers of the threaded pass (whose buffers are added in the same
 * order at the end), with two count buffers instead of one per chunk. */
static void run_serial(chunks_t *c) {
    double *total = c->counts, *scratch = c->counts + c->counts_size;
    run_chunk(c, 0, total);
    for (Py_ssize_t chunk = 1; chunk < c->n_chunks; chunk++) {
        run_chunk(c, chunk, scratch);
        for (Py_ssize_t t = 0; t < c->counts_size; t++) total[t] += scratch[t];
    }
}

static void release_chunks(chunks_t *c) {
    if (__atomic_sub_fetch(&c->users, 1, __ATOMIC_ACQ_REL) == 0) {
        pthread_mutex_destroy(&c->mutex);
        pthread_cond_destroy(&c->all_done);
        free(c);
    }
}

static void *helper_thread(void *arg) {
    claim_chunks((chunks_t *)arg);
    release_chunks((chunks_t *)arg);
    return NULL;
}

#define MAX_THREADS 256

PyDoc_STRVAR(pass_doc,
             "confusion_pass(indptr, indices, data, confusion, table, prior, gold, weight, "
             "n_classes, row_stride, counts_stride, n_tasks, bounds, unit_counts, n_threads, "
             "resp, counts, classes, parts, totals, expected) -> None\n\n"
             "The fused E+M pass (see the source's header) for the confusion matrices "
             "(n_workers, K, K), whose padded table it writes to table (n_workers * K * "
             "row_stride, its rows best on 64-byte boundaries), over the chunks of tasks "
             "[bounds[c], bounds[c+1]) on n_threads threads, writing resp (K, n_tasks; None: not "
             "written, the statistics only), and per chunk c its classes[c] (K) and parts[c] = "
             "(log2 mantissa, exponent, zero) of its evidence (data None: every count 1); the "
             "chunks' counts (n_workers * K * counts_stride per buffer) are added in chunk "
             "order and turned into the expected counts [j, k, x] (expected, n_workers * K * "
             "K; with counts_stride K - 1 the last class from totals, the labels per column). "
             "With n_threads 1 (or one chunk) the chunks run in order on two count buffers "
             "(the second a scratch), else counts holds one buffer per chunk. indptr and "
             "bounds int64, indices int32 (each below n_workers * K: not checked), gold int64 "
             "or None, weight and totals float64 or None, the rest float64, all C-contiguous.");

static PyObject *confusion_pass(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer indptr_buf, indices_buf, data_buf, conf_buf, theta_buf, prior_buf, gold_buf;
    Py_buffer weight_buf, bounds_buf, resp_buf = {0}, counts_buf, classes_buf, parts_buf;
    Py_buffer totals_buf, expected_buf;
    PyObject *resp_obj;
    int K, S, cstride, n_threads, have_resp = 0;
    pass_t a = {0};
    if (!PyArg_ParseTuple(args, "y*y*z*y*w*y*z*z*iiiny*piOw*w*w*z*w*", &indptr_buf,
                          &indices_buf, &data_buf, &conf_buf, &theta_buf, &prior_buf, &gold_buf,
                          &weight_buf, &K, &S, &cstride, &a.n_tasks, &bounds_buf,
                          &a.unit_counts, &n_threads, &resp_obj, &counts_buf, &classes_buf,
                          &parts_buf, &totals_buf, &expected_buf))
        return NULL;
    PyObject *result = NULL;
    if (resp_obj != Py_None) {
        if (PyObject_GetBuffer(resp_obj, &resp_buf, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        have_resp = 1;
    }
    const Py_ssize_t n_chunks = bounds_buf.len / 8 - 1;
    const Py_ssize_t n_workers = K > 0 ? conf_buf.len / 8 / K / K : 0;
    const Py_ssize_t counts_size = n_workers * K * cstride;
    const int n_counted = cstride < K ? cstride : K; /* K - 1: the last from the totals */
    const int64_t *bounds = (const int64_t *)bounds_buf.buf;
    if (K < 1 || K > MAX_CLASSES || S < K || n_chunks < 1 || n_threads < 1 ||
        n_counted < K - 1 || (n_counted < K && !totals_buf.buf)) {
        PyErr_SetString(PyExc_ValueError, "confusion_pass: bad sizes");
        goto done;
    }
    if (!data_buf.buf && !a.unit_counts) {
        PyErr_SetString(PyExc_ValueError, "confusion_pass: counts data None needs unit counts");
        goto done;
    }
    if (cstride != S &&
        !(cstride == 4 && K == 5 && S == 8 && a.unit_counts && !weight_buf.buf)) {
        PyErr_SetString(PyExc_ValueError, "confusion_pass: counts stride below S needs K = 5, "
                                          "stride 8, unit counts and no weights");
        goto done;
    }
    for (Py_ssize_t c = 0; c < n_chunks; c++) {
        if (bounds[c] < 0 || bounds[c] > bounds[c + 1] || bounds[c + 1] > a.n_tasks) {
            PyErr_SetString(PyExc_ValueError, "confusion_pass: bad chunk bounds");
            goto done;
        }
    }
    int helpers = (n_threads < n_chunks ? n_threads : (int)n_chunks) - 1;
    if (helpers > MAX_THREADS) helpers = MAX_THREADS;
    const Py_ssize_t n_buffers = helpers == 0 ? (n_chunks < 2 ? 1 : 2) : n_chunks;
    a.indptr = (const int64_t *)indptr_buf.buf;
    if (!check_size(&indptr_buf, a.n_tasks + 1, 8, "indptr") ||
        !check_size(&prior_buf, K, 8, "prior") ||
        (have_resp && !check_size(&resp_buf, (Py_ssize_t)K * a.n_tasks, 8, "resp")) ||
        !check_size(&classes_buf, n_chunks * K, 8, "classes") ||
        !check_size(&counts_buf, n_buffers * counts_size, 8, "counts") ||
        !check_size(&parts_buf, n_chunks * 3, 8, "parts") ||
        (gold_buf.buf && !check_size(&gold_buf, a.n_tasks, 8, "gold")) ||
        (weight_buf.buf && !check_size(&weight_buf, a.n_tasks, 8, "weight")) ||
        !check_size(&indices_buf, a.indptr[a.n_tasks], 4, "indices") ||
        (data_buf.buf && !check_size(&data_buf, a.indptr[a.n_tasks], 8, "data")) ||
        !check_size(&theta_buf, n_workers * K * S, 8, "table") ||
        !check_size(&expected_buf, n_workers * K * K, 8, "expected") ||
        (totals_buf.buf && !check_size(&totals_buf, n_workers * K, 8, "totals")))
        goto done;
    a.indices = (const int32_t *)indices_buf.buf;
    a.data = (const double *)data_buf.buf;
    /* the table from the matrices (and its smallest entry: the matrices' own) */
    fill_table((const double *)conf_buf.buf, n_workers, K, S, (double *)theta_buf.buf);
    a.theta = (const double *)theta_buf.buf;
    a.prior = (const double *)prior_buf.buf;
    a.min_log2 = smallest_log2((const double *)conf_buf.buf, n_workers * K * K);
    a.prior_log2 = smallest_log2(a.prior, K);
    a.gold = (const int64_t *)gold_buf.buf;
    a.weight = (const double *)weight_buf.buf;
    a.resp = have_resp ? (double *)resp_buf.buf : NULL;
    a.cstride = cstride;
    chunks_t *chunks = calloc(1, sizeof(chunks_t));
    if (!chunks) {
        PyErr_NoMemory();
        goto done;
    }
    *chunks = (chunks_t){.base = a,
                         .K = K,
                         .S = S,
                         .bounds = bounds,
                         .n_chunks = n_chunks,
                         .counts_size = counts_size,
                         .counts = (double *)counts_buf.buf,
                         .classes = (double *)classes_buf.buf,
                         .parts = (double *)parts_buf.buf,
                         .users = 1};
    pthread_mutex_init(&chunks->mutex, NULL);
    pthread_cond_init(&chunks->all_done, NULL);
    Py_BEGIN_ALLOW_THREADS;
    if (helpers == 0) {
        run_serial(chunks);
    } else {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        for (int t = 0; t < helpers; t++) {
            pthread_t thread;
            __atomic_add_fetch(&chunks->users, 1, __ATOMIC_ACQ_REL);
            if (pthread_create(&thread, &attr, helper_thread, chunks) != 0) {
                __atomic_sub_fetch(&chunks->users, 1, __ATOMIC_ACQ_REL); /* run without it */
                break;
            }
        }
        pthread_attr_destroy(&attr);
        claim_chunks(chunks);
        pthread_mutex_lock(&chunks->mutex);
        while (chunks->finished < chunks->n_chunks)
            pthread_cond_wait(&chunks->all_done, &chunks->mutex);
        pthread_mutex_unlock(&chunks->mutex);
        /* the chunks' counts added into the first chunk's, in chunk order (numpy's sum over
         * the first axis: the same numbers for any number of threads) */
        double *total_counts = (double *)counts_buf.buf;
        for (Py_ssize_t c = 1; c < n_chunks; c++) {
            const double *part = total_counts + c * counts_size;
            for (Py_ssize_t t = 0; t < counts_size; t++) total_counts[t] += part[t];
        }
    }
    release_chunks(chunks);
    fill_expected((const double *)counts_buf.buf, (const double *)totals_buf.buf, n_workers, K,
                  cstride, n_counted, (double *)expected_buf.buf);
    Py_END_ALLOW_THREADS;
    result = Py_NewRef(Py_None);

done:
    PyBuffer_Release(&indptr_buf);
    PyBuffer_Release(&indices_buf);
    if (data_buf.buf) PyBuffer_Release(&data_buf);
    PyBuffer_Release(&conf_buf);
    PyBuffer_Release(&theta_buf);
    PyBuffer_Release(&prior_buf);
    if (gold_buf.buf) PyBuffer_Release(&gold_buf);
    if (weight_buf.buf) PyBuffer_Release(&weight_buf);
    PyBuffer_Release(&bounds_buf);
    if (have_resp) PyBuffer_Release(&resp_buf);
    PyBuffer_Release(&counts_buf);
    PyBuffer_Release(&classes_buf);
    PyBuffer_Release(&parts_buf);
    if (totals_buf.buf) PyBuffer_Release(&totals_buf);
    PyBuffer_Release(&expected_buf);
    return result;
}

/* The statistics of the usual EM start, each task's vote shares (gold tasks one-hot), for unit
 * counts: r_{ik} = v_{ik} / n_i with v_{ik} the labels x = k on task i (x = c mod K) and n_i
 * its labels, then counts[c*C + k] += r_{ik} for k < min(K, C) and classes[k] += r_{ik}, tasks
 * in order (the sums of the labels in the table's order: those of one weighted count per class
 * over the labels). One thread: a single pass, a fraction of an EM iteration.
 *
 * x = c mod K without a division: where K is a compile-time constant the compiler's multiply,
 * else (c + 1/2) / K = j + (x + 1/2) / K lies at least 1/(2K) from an integer, far beyond the
 * rounding of c < 2^31 in a double, so its truncation is j. With K <= 8 and at most 255 labels
 * on the task, the votes are bytes of one 64-bit counter (one add per label, no chain through
 * memory; each label's 1 << 8x read from a table of the columns: 1.24 -> 1.02 ms for 1M labels). Rows of four counts are added as one vector (AVX2 where the CPU has it). */
INLINE int64_t column_class(int64_t c, int K, double inverse) {
    if (__builtin_constant_p(K)) return (int64_t)((uint32_t)c % (uint32_t)K); /* a multiply */
    return c - (int64_t)(((double)c + 0.5) * inverse) * K;
}

INLINE void vote_shares(const int32_t *idx, int64_t lo, int64_t hi, int K, double inverse,
                        double *v) {
    if (K <= 8 && hi - lo <= 255) {
        uint64_t packed = 0;
        for (int64_t e = lo; e < hi; e++)
            packed += (uint64_t)1 << (8 * column_class(idx[e], K, inverse));
        for (int k = 0; k < K; k++) v[k] = (double)((packed >> (8 * k)) & 255);
    } else {
        for (int k = 0; k < K; k++) v[k] = 0.0;
        for (int64_t e = lo; e < hi; e++) v[column_class(idx[e], K, inverse)] += 1.0;
    }
}

/* a label's vote in the byte counter: 1 << 8 (c mod K), from the table onehot[c] where the
 * caller made one (K <= 8; one load instead of a modulo and a shift per label) */
INLINE uint64_t vote_bit(const uint64_t *onehot, int64_t c, int K, double inverse) {
    return onehot ? onehot[c] : (uint64_t)1 << (8 * column_class(c, K, inverse));
}

/* the vote-share pass with count rows of CC entries (KC of them counted) */
INLINE void vote_share_run(const int64_t *indptr, const int32_t *idx, const int64_t *gold, int K,
                           int CC, int KC, Py_ssize_t n_tasks, const uint64_t *onehot,
                           double *counts, double *classes) {
    const double inverse = 1.0 / K;
    double v[MAX_CLASSES], sums[MAX_CLASSES] = {0.0};
    /* the shares v / n of tasks with n <= SHARES_N labels, each divided once when first met
     * (the same numbers as the divisions, without a division per class and task) */
    enum { SHARES_N = 64 };
    double shares[(SHARES_N + 1) * (SHARES_N + 1)];
    char have[SHARES_N + 1] = {0};
    for (Py_ssize_t i = 0; i < n_tasks; i++) {
        const int64_t lo = indptr[i], hi = indptr[i + 1];
        const int64_t g = gold ? gold[i] : -1;
        const int64_t n = hi - lo; /* the sum of the votes: every count is 1 */
        if (K <= 8 && n <= SHARES_N && g < 0) {
            /* the votes as bytes of one counter, each share read from the row of the task's
             * size (m / n for m votes: the division of the general path, done once) */
            uint64_t packed = 0;
            for (int64_t e = lo; e < hi; e++) packed += vote_bit(onehot, idx[e], K, inverse);
            double *row = shares + n * (SHARES_N + 1);
            if (!have[n]) {
                for (int64_t m = 0; m <= n; m++) row[m] = (double)m / (double)n;
                have[n] = 1;
            }
            for (int k = 0; k < K; k++) v[k] = row[(packed >> (8 * k)) & 255];
        } else {
            vote_shares(idx, lo, hi, K, inverse, v);
            double total = 0.0;
            for (int k = 0; k < K; k++) total += v[k];
            for (int k = 0; k < K; k++) v[k] = g >= 0 ? (double)(k == g) : v[k] / total;
        }
        for (int k = 0; k < K; k++) sums[k] += v[k];
        if (KC == 4 && CC == 4) { /* whole rows of four (one AVX2 vector, or two SSE2) */
            const v4d r = {v[0], v[1], v[2], v[3]};
            for (int64_t e = lo; e < hi; e++) {
                double *row = counts + (int64_t)idx[e] * 4;
                v4d x;
                memcpy(&x, row, sizeof x);
                x += r;
                memcpy(row, &x, sizeof x);
            }
        } else if (KC % 2 == 0 && KC == CC) { /* whole rows as pieces of two (SSE2) */
            v2d r[MAX_CLASSES / 2];
            for (int h = 0; h < KC / 2; h++) memcpy(&r[h], v + 2 * h, sizeof r[h]);
            for (int64_t e = lo; e < hi; e++) {
                double *row = counts + (int64_t)idx[e] * CC;
                for (int h = 0; h < KC / 2; h++) {
                    v2d x;
                    memcpy(&x, row + 2 * h, sizeof x);
                    x += r[h];
                    memcpy(row + 2 * h, &x, sizeof x);
                }
            }
        } else {
            for (int64_t e = lo; e < hi; e++) {
                double *row = counts + (int64_t)idx[e] * CC;
                for (int k = 0; k < KC; k++) row[k] += v[k];
            }
        }
    }
    for (int k = 0; k < K; k++) classes[k] = sums[k];
}

/* K = 5 with count rows of four (the usual case), AVX2 where the CPU has it */
#ifdef HAVE_AVX2_PASS
AVX2 static void vote_share_avx2_54(const int64_t *indptr, const int32_t *idx,
                                    const int64_t *gold, Py_ssize_t n_tasks,
                                    const uint64_t *onehot, double *counts, double *classes) {
    vote_share_run(indptr, idx, gold, 5, 4, 4, n_tasks, onehot, counts, classes);
}
#endif

static void vote_share_run_54(const int64_t *indptr, const int32_t *idx, const int64_t *gold,
                              Py_ssize_t n_tasks, const uint64_t *onehot, double *counts,
                              double *classes) {
#ifdef HAVE_AVX2_PASS
    if (__builtin_cpu_supports("avx2")) {
        vote_share_avx2_54(indptr, idx, gold, n_tasks, onehot, counts, classes);
        return;
    }
#endif
    vote_share_run(indptr, idx, gold, 5, 4, 4, n_tasks, onehot, counts, classes);
}

/* the table of vote_bit for the columns c < n_columns (malloc'ed; NULL: none, for K > 8 or
 * more than 2^16 columns, where it would not stay in the first-level cache, or no memory) */
static uint64_t *vote_bits(Py_ssize_t n_columns, int K) {
    if (K > 8 || n_columns > ((Py_ssize_t)1 << 16) || n_columns < 1) return NULL;
    uint64_t *onehot = malloc((size_t)n_columns * sizeof(uint64_t));
    if (!onehot) return NULL;
    for (Py_ssize_t c = 0; c < n_columns; c++) onehot[c] = (uint64_t)1 << (8 * (c % K));
    return onehot;
}

PyDoc_STRVAR(vote_share_doc,
             "vote_share_counts(indptr, indices, gold, n_classes, counts_stride, n_tasks, counts, "
             "classes) -> None\n\n"
             "The vote-share statistics (see the source) of unit-count labels: counts "
             "(n_columns * counts_stride) and classes (K) set. indptr int64, indices int32 (each "
             "below len(counts) / counts_stride: not checked), gold int64 or None, counts and "
             "classes float64, all C-contiguous.");

static PyObject *vote_share_counts(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer indptr_buf, indices_buf, gold_buf, counts_buf, classes_buf;
    int K, C;
    Py_ssize_t n_tasks;
    if (!PyArg_ParseTuple(args, "y*y*z*iinw*w*", &indptr_buf, &indices_buf, &gold_buf, &K, &C,
                          &n_tasks, &counts_buf, &classes_buf))
        return NULL;
    PyObject *result = NULL;
    const int64_t *indptr = (const int64_t *)indptr_buf.buf;
    if (K < 1 || K > MAX_CLASSES || C < 1 || n_tasks < 0) {
        PyErr_SetString(PyExc_ValueError, "vote_share_counts: bad sizes");
        goto done;
    }
    if (!check_size(&indptr_buf, n_tasks + 1, 8, "indptr") ||
        !check_size(&classes_buf, K, 8, "classes") ||
        (gold_buf.buf && !check_size(&gold_buf, n_tasks, 8, "gold")) ||
        !check_size(&indices_buf, indptr[n_tasks], 4, "indices"))
        goto done;
    const int32_t *idx = (const int32_t *)indices_buf.buf;
    const int64_t *gold = (const int64_t *)gold_buf.buf;
    double *counts = (double *)counts_buf.buf, *classes = (double *)classes_buf.buf;
    const Py_ssize_t n_counts = counts_buf.len / 8;
    const int KC = K < C ? K : C;
    memset(counts, 0, (size_t)n_counts * sizeof(double));
    for (int k = 0; k < K; k++) classes[k] = 0.0;
    Py_BEGIN_ALLOW_THREADS;
    uint64_t *onehot = vote_bits(n_counts / C, K);
    /* the usual sizes with constants (whole-vector loops), any other in general */
    if (K == 5 && C == 4) /* the last class from the totals */
        vote_share_run_54(indptr, idx, gold, n_tasks, onehot, counts, classes);
    else if (K == 4 && C == 4)
        vote_share_run(indptr, idx, gold, 4, 4, 4, n_tasks, onehot, counts, classes);
    else if (K == 3 && C == 4)
        vote_share_run(indptr, idx, gold, 3, 4, 3, n_tasks, onehot, counts, classes);
    else if (K == 2 && C == 2)
        vote_share_run(indptr, idx, gold, 2, 2, 2, n_tasks, onehot, counts, classes);
    else
        vote_share_run(indptr, idx, gold, K, C, KC, n_tasks, onehot, counts, classes);
    free(onehot);
    Py_END_ALLOW_THREADS;
    result = Py_NewRef(Py_None);

done:
    PyBuffer_Release(&indptr_buf);
    PyBuffer_Release(&indices_buf);
    if (gold_buf.buf) PyBuffer_Release(&gold_buf);
    PyBuffer_Release(&counts_buf);
    PyBuffer_Release(&classes_buf);
    return result;
}

/* fill_expected for Python (vote_share_statistics: the last class from the totals). */
PyDoc_STRVAR(expected_doc,
             "expected_counts(counts, totals, n_workers, n_classes, counts_stride, n_counted, "
             "out) -> None\n\n"
             "out[j, k, x] = counts[(j*K + x)*C + k] for k < n_counted, the last class from the "
             "totals (float64, n_workers * K; None when n_counted = K). All float64, "
             "C-contiguous.");

static PyObject *expected_counts(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer counts_buf, totals_buf, out_buf;
    Py_ssize_t W;
    int K, C, n;
    if (!PyArg_ParseTuple(args, "y*z*niiiw*", &counts_buf, &totals_buf, &W, &K, &C, &n,
                          &out_buf))
        return NULL;
    PyObject *result = NULL;
    if (K < 1 || C < 1 || n < 1 || n > K || n > C || n < K - 1 || W < 0 ||
        (n < K && !totals_buf.buf)) {
        PyErr_SetString(PyExc_ValueError, "expected_counts: bad sizes");
        goto done;
    }
    if (!check_size(&counts_buf, W * K * C, 8, "counts") ||
        !check_size(&out_buf, W * K * K, 8, "out") ||
        (totals_buf.buf && !check_size(&totals_buf, W * K, 8, "totals")))
        goto done;
    fill_expected((const double *)counts_buf.buf, (const double *)totals_buf.buf, W, K, C, n,
                  (double *)out_buf.buf);
    result = Py_NewRef(Py_None);

done:
    PyBuffer_Release(&counts_buf);
    if (totals_buf.buf) PyBuffer_Release(&totals_buf);
    PyBuffer_Release(&out_buf);
    return result;
}

/* The kernel's layout of labels grouped by task, straight from their codes (one pass): the
 * row pointers (the cumulated labels per task), each label's column c = j*K + x as int32 and
 * the labels per column (the count matrix's column totals). Returns False, leaving the outputs
 * unspecified, when the task codes are not in order or a code is out of range (the caller then
 * builds the count matrix, as for any other labels). */
PyDoc_STRVAR(layout_doc,
             "label_layout(task_codes, worker_codes, label_codes, n_tasks, n_classes, indptr, "
             "columns, totals) -> bool\n\n"
             "Codes int64 (one per label); indptr int64 (n_tasks + 1), columns int32 (one per "
             "label) and totals float64 (n_workers * n_classes) set. False (the outputs unspecified) "
             "when the task codes decrease somewhere or a code is out of range.");

static PyObject *label_layout(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer tasks_buf, workers_buf, codes_buf, indptr_buf, columns_buf, totals_buf;
    Py_ssize_t n_tasks;
    int K;
    if (!PyArg_ParseTuple(args, "y*y*y*niw*w*w*", &tasks_buf, &workers_buf, &codes_buf,
                          &n_tasks, &K, &indptr_buf, &columns_buf, &totals_buf))
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t n = tasks_buf.len / 8, n_columns = totals_buf.len / 8;
    if (K < 1 || n_tasks < 0 || n_columns >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "label_layout: bad sizes");
        goto done;
    }
    if (!check_size(&workers_buf, n, 8, "worker_codes") ||
        !check_size(&codes_buf, n, 8, "label_codes") ||
        !check_size(&indptr_buf, n_tasks + 1, 8, "indptr") ||
        !check_size(&columns_buf, n, 4, "columns"))
        goto done;
    const int64_t *tasks = (const int64_t *)tasks_buf.buf;
    const int64_t *workers = (const int64_t *)workers_buf.buf;
    const int64_t *codes = (const int64_t *)codes_buf.buf;
    int64_t *indptr = (int64_t *)indptr_buf.buf;
    int32_t *columns = (int32_t *)columns_buf.buf;
    double *totals = (double *)totals_buf.buf;
    int ordered = 1;
    Py_BEGIN_ALLOW_THREADS;
    memset(indptr, 0, (size_t)(n_tasks + 1) * sizeof(int64_t));
    memset(totals, 0, (size_t)n_columns * sizeof(double));
    /* each task's labels counted in a register (run) and stored when its run of labels ends:
     * an increment of indptr[t + 1] per label would wait for the previous one's store (1.62 ->
     * 1.53 ms for 1M labels; the rest is reading the codes) */
    int64_t previous = 0, run = 0;
    for (Py_ssize_t e = 0; e < n; e++) {
        const int64_t t = tasks[e], c = workers[e] * K + codes[e];
        if (t < previous || t >= n_tasks || codes[e] < 0 || codes[e] >= K || c < 0 ||
            c >= n_columns) {
            ordered = 0;
            break;
        }
        if (t != previous) {
            indptr[previous + 1] = run;
            previous = t;
            run = 0;
        }
        run++;
        columns[e] = (int32_t)c;
        totals[c] += 1.0;
    }
    if (ordered && n > 0) indptr[previous + 1] = run;
    for (Py_ssize_t i = 0; i < n_tasks; i++) indptr[i + 1] += indptr[i];
    Py_END_ALLOW_THREADS;
    result = PyBool_FromLong(ordered);

done:
    PyBuffer_Release(&tasks_buf);
    PyBuffer_Release(&workers_buf);
    PyBuffer_Release(&codes_buf);
    PyBuffer_Release(&indptr_buf);
    PyBuffer_Release(&columns_buf);
    PyBuffer_Release(&totals_buf);
    return result;
}

/* The maximum a posteriori confusion rows of full_confusion_map (confusion.py), the same
 * operations in the same order: s = (n + d [x = k]) + a, each row's total summed class by class,
 * theta = s / total, and 1/K for a row whose total is not positive. */
PyDoc_STRVAR(map_doc,
             "confusion_map(counts, pseudo_counts, diagonal, n_classes, out) -> None\n\n"
             "out[j, k, x] = (counts[j, k, x] + diagonal [x = k] + pseudo_counts) / row total "
             "(1/K where the total is not positive); float64 (n_workers, K, K), C-contiguous.");

static PyObject *confusion_map(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer counts_buf, out_buf;
    double a, d;
    int K;
    if (!PyArg_ParseTuple(args, "y*ddiw*", &counts_buf, &a, &d, &K, &out_buf)) return NULL;
    PyObject *result = NULL;
    if (K < 1 || K > MAX_CLASSES || counts_buf.len % (8 * K * K) != 0) {
        PyErr_SetString(PyExc_ValueError, "confusion_map: bad sizes");
        goto done;
    }
    const Py_ssize_t n_rows = counts_buf.len / 8 / K;
    if (!check_size(&out_buf, n_rows * K, 8, "out")) goto done;
    const double *counts = (const double *)counts_buf.buf;
    double *out = (double *)out_buf.buf;
    for (Py_ssize_t r = 0; r < n_rows; r++) {
        const double *n = counts + r * K;
        double *theta = out + r * K, s[MAX_CLASSES];
        const int k = (int)(r % K); /* the row's true class: its diagonal cell is x = k */
        for (int x = 0; x < K; x++) s[x] = (d != 0.0 ? n[x] + (x == k ? d : 0.0) : n[x]) + a;
        double total = s[0];
        for (int x = 1; x < K; x++) total += s[x];
        for (int x = 0; x < K; x++) theta[x] = total > 0.0 ? s[x] / total : 1.0 / K;
    }
    result = Py_NewRef(Py_None);

done:
    PyBuffer_Release(&counts_buf);
    PyBuffer_Release(&out_buf);
    return result;
}

/* The pass's table from theta: table[(j*K + x)*S + k] = theta[j, k, x], zeros for k >= K. */
PyDoc_STRVAR(table_doc,
             "padded_table(theta, n_classes, row_stride, out) -> None\n\n"
             "out[(j*K + x)*S + k] = theta[j, k, x] for k < K, 0 above; float64, C-contiguous.");

static PyObject *padded_table(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer theta_buf, out_buf;
    int K, S;
    if (!PyArg_ParseTuple(args, "y*iiw*", &theta_buf, &K, &S, &out_buf)) return NULL;
    PyObject *result = NULL;
    if (K < 1 || S < K || theta_buf.len % (8 * K * K) != 0) {
        PyErr_SetString(PyExc_ValueError, "padded_table: bad sizes");
        goto done;
    }
    const Py_ssize_t W = theta_buf.len / 8 / K / K;
    if (!check_size(&out_buf, W * K * S, 8, "out")) goto done;
    fill_table((const double *)theta_buf.buf, W, K, S, (double *)out_buf.buf);
    result = Py_NewRef(Py_None);

done:
    PyBuffer_Release(&theta_buf);
    PyBuffer_Release(&out_buf);
    return result;
}

/* Each task's most probable class from class-major (K, n_tasks) probabilities: numpy's
 * argmax over the classes (the first largest, a NaN counting as the largest), without its
 * copy to task-major order and its call per task. */
PyDoc_STRVAR(argmax_doc,
             "class_argmax(probas, n_classes, out) -> None\n\n"
             "out[i] = argmax_k probas[k, i] as numpy gives it; probas float64 (K, n) and out "
             "int64 (n,), C-contiguous.");

static PyObject *class_argmax(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer probas_buf, out_buf;
    int K;
    if (!PyArg_ParseTuple(args, "y*iw*", &probas_buf, &K, &out_buf)) return NULL;
    PyObject *result = NULL;
    const Py_ssize_t n = out_buf.len / 8;
    if (K < 1 || !check_size(&probas_buf, (Py_ssize_t)K * n, 8, "probas")) {
        if (K < 1) PyErr_SetString(PyExc_ValueError, "class_argmax: bad sizes");
        goto done;
    }
    const double *p = (const double *)probas_buf.buf;
    int64_t *out = (int64_t *)out_buf.buf;
    Py_BEGIN_ALLOW_THREADS;
    Py_ssize_t i = 0;
#ifdef __SSE2__
    /* two tasks at a time, without branches (the winner is a different class from task to
     * task: a branch per class would be mispredicted half the time) */
    for (; i + 2 <= n; i += 2) {
        __m128d best = _mm_loadu_pd(p + i);
        __m128i winner = _mm_setzero_si128();
        for (int k = 1; k < K; k++) {
            const __m128d v = _mm_loadu_pd(p + (int64_t)k * n + i);
            const __m128d take = _mm_and_pd(_mm_cmpord_pd(best, best),
                                            _mm_or_pd(_mm_cmpgt_pd(v, best), _mm_cmpunord_pd(v, v)));
            best = _mm_or_pd(_mm_and_pd(take, v), _mm_andnot_pd(take, best));
            const __m128i t = _mm_castpd_si128(take);
            winner = _mm_or_si128(_mm_and_si128(t, _mm_set1_epi64x(k)), _mm_andnot_si128(t, winner));
        }
        _mm_storeu_si128((__m128i *)(out + i), winner);
    }
#endif
    for (; i < n; i++) {
        /* a NaN already held stays, a first NaN or a larger value takes over */
        double best = p[i];
        int64_t winner = 0;
        for (int k = 1; k < K; k++) {
            const double v = p[(int64_t)k * n + i];
            if (best == best && (v > best || v != v)) {
                best = v;
                winner = k;
            }
        }
        out[i] = winner;
    }
    Py_END_ALLOW_THREADS;
    result = Py_NewRef(Py_None);

done:
    PyBuffer_Release(&probas_buf);
    PyBuffer_Release(&out_buf);
    return result;
}

static PyMethodDef methods[] = {
    {"confusion_pass", confusion_pass, METH_VARARGS, pass_doc},
    {"vote_share_counts", vote_share_counts, METH_VARARGS, vote_share_doc},
    {"expected_counts", expected_counts, METH_VARARGS, expected_doc},
    {"label_layout", label_layout, METH_VARARGS, layout_doc},
    {"confusion_map", confusion_map, METH_VARARGS, map_doc},
    {"padded_table", padded_table, METH_VARARGS, table_doc},
    {"class_argmax", class_argmax, METH_VARARGS, argmax_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_confusion_kernel",
    .m_doc = "Compiled fused E+M pass of the confusion-matrix label models (confusion_pass.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__confusion_kernel(void) { return PyModule_Create(&module); }
