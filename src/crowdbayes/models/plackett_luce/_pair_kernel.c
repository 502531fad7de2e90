/* The two sums of Hunter's MM algorithm for pairwise comparisons (Bradley–Terry), in one pass.
 *
 * The maths (see _pair_sums.py): with the comparisons l = 0..P-1 given as item pairs
 * (pairs[2l], pairs[2l+1]) and positive scores s, one pass computes
 *
 *     T_l = s[pairs[2l]] + s[pairs[2l+1]],
 *     den_i = Σ_{l: i ∈ pair l} 1 / T_l,                         (mm_pass)
 *
 * and, for the log-likelihood, Σ_l log T_l (log_totals). Reading each comparison once (two
 * 32-bit codes) instead of the numpy path's temporary arrays makes the pass bound by its
 * arithmetic, not by memory traffic.
 *
 * Σ log T_l is kept as a product of the totals (a mantissa) and a power of two, renormalised
 * by frexp when the mantissa leaves [2^-500, 2^500], so no log is taken per comparison (as
 * the confusion kernel does for its log evidence).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../../_buffer_check.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

/* den[i] = Σ over the comparisons of item i of 1 / (s_a + s_b); with a totals buffer of the
 * same scores given (have_totals), the sums are not recomputed. */
static void pass(const double *s, const int32_t *pairs, Py_ssize_t n_pairs, double *den,
                 Py_ssize_t n_items, const double *totals) {
    memset(den, 0, (size_t)n_items * sizeof(double));
    if (totals) {
        for (Py_ssize_t l = 0; l < n_pairs; l++) {
            const double inv = 1.0 / totals[l];
            den[pairs[2 * l]] += inv;
            den[pairs[2 * l + 1]] += inv;
        }
        return;
    }
    for (Py_ssize_t l = 0; l < n_pairs; l++) {
        const int32_t a = pairs[2 * l], b = pairs[2 * l + 1];
        const double inv = 1.0 / (s[a] + s[b]);
        den[a] += inv;
        den[b] += inv;
    }
}

static const char mm_pass_doc[] =
    "mm_pass(scores, pairs, den, totals_or_None): den[i] = sum over the comparisons of item i\n"
    "of 1 / (s_a + s_b); pairs int32 (2P,), scores/den float64 (N,), totals float64 (P,) of\n"
    "the same scores or None.";

static PyObject *mm_pass(PyObject *self, PyObject *args) {
    Py_buffer s_buf, pairs_buf, den_buf, totals_buf;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*w*z*", &s_buf, &pairs_buf, &den_buf, &totals_buf))
        return NULL;
    Py_ssize_t n_items = s_buf.len / (Py_ssize_t)sizeof(double);
    Py_ssize_t n_pairs = pairs_buf.len / (Py_ssize_t)(2 * sizeof(int32_t));
    const double *totals = totals_buf.buf;
    if (!check_size(&den_buf, n_items, sizeof(double), "den")) goto done;
    if (totals && !check_size(&totals_buf, n_pairs, sizeof(double), "totals")) goto done;
    Py_BEGIN_ALLOW_THREADS;
    pass(s_buf.buf, pairs_buf.buf, n_pairs, den_buf.buf, n_items, totals);
    Py_END_ALLOW_THREADS;
    result = Py_None;
    Py_INCREF(result);
done:
    PyBuffer_Release(&s_buf);
    PyBuffer_Release(&pairs_buf);
    PyBuffer_Release(&den_buf);
    if (totals_buf.obj) PyBuffer_Release(&totals_buf);
    return result;
}

static const char log_totals_doc[] =
    "log_totals(scores, pairs, totals): writes T_l = s_a + s_b to totals (float64, (P,)) and\n"
    "returns sum_l log T_l (-inf if a total is 0).";

static PyObject *log_totals(PyObject *self, PyObject *args) {
    Py_buffer s_buf, pairs_buf, totals_buf;
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*w*", &s_buf, &pairs_buf, &totals_buf)) return NULL;
    Py_ssize_t n_pairs = pairs_buf.len / (Py_ssize_t)(2 * sizeof(int32_t));
    if (!check_size(&totals_buf, n_pairs, sizeof(double), "totals")) goto done;
    double mantissa = 1.0, exponent = 0.0;
    int zero = 0;
    const double *s = s_buf.buf;
    const int32_t *pairs = pairs_buf.buf;
    double *totals = totals_buf.buf;
    Py_BEGIN_ALLOW_THREADS;
    for (Py_ssize_t l = 0; l < n_pairs; l++) {
        const double t = s[pairs[2 * l]] + s[pairs[2 * l + 1]];
        totals[l] = t;
        if (!(t > 0.0)) {
            zero = 1;
            continue;
        }
        mantissa *= t;
        if (mantissa < 0x1p-500 || mantissa > 0x1p500) {
            int e;
            mantissa = frexp(mantissa, &e);
            exponent += e;
        }
    }
    Py_END_ALLOW_THREADS;
    result = PyFloat_FromDouble(zero ? -INFINITY : log(mantissa) + exponent * M_LN2);
done:
    PyBuffer_Release(&s_buf);
    PyBuffer_Release(&pairs_buf);
    PyBuffer_Release(&totals_buf);
    return result;
}

static PyMethodDef methods[] = {
    {"mm_pass", mm_pass, METH_VARARGS, mm_pass_doc},
    {"log_totals", log_totals, METH_VARARGS, log_totals_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_pair_kernel",
    .m_doc = "Compiled sums of the pairwise MM algorithm of PlackettLuceMM (_pair_sums.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__pair_kernel(void) { return PyModule_Create(&module); }
