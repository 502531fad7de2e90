/* The mean-field VB of the links-only crowd clustering model, every sweep in one call.
 *
 * The maths is that of link_vb.py (Luo et al. 2018, Eqs. 14, 19-20, 23, 25-29): one sweep
 * updates the globals from the statistics of the previous q(z),
 *
 *     q(pi) = Dir(g0 + sum_i r_i),
 *     q(alpha_m) = Beta(a0 + (S_m1, S_m0)),  q(beta_m) = Beta(b0 + (N_m0 - S_m0, N_m1 - S_m1)),
 *
 * with S_mL = sum of the agreements s_l = r_i . r_j over worker m's links of label L and N_mL
 * their number; then q(z) colour class by colour class,
 *
 *     log r_ik = E log pi_k + sum_{l at i} E[w_l] r_partner(l),k + const,
 *
 * and the ELBO at the new q(z). The weight E[w_l] and constant E[c_l] of a link depend only
 * on its worker and label, so they are kept per (worker, label) "code" (2 m + L), and so are
 * the sums over links: sum_l s_l E[w_l] + E[c_l] = sum_code w S + c N.
 *
 * The loop stops as crowdbayes.inference.driver.run_iterations does with monitor="objective":
 * after at least min_iter sweeps, when the ELBO changed by less than tol * max(1, |ELBO|)
 * (tol < 0: never). Digamma is the asymptotic series after shifting the argument above 6
 * (Abramowitz & Stegun 6.3.5, 6.3.18), log-gamma the C library's: the numbers are those of
 * the numpy path to rounding.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "../../_buffer_check.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* psi(x) for x > 0: psi(x) = psi(x + n) - sum_{j<n} 1/(x + j), then the asymptotic series
 * log x - 1/(2x) - sum_k B_2k / (2k x^2k) at x >= 6. */
static double digamma(double x) {
    double shift = 0.0;
    while (x < 6.0) {
        shift -= 1.0 / x;
        x += 1.0;
    }
    const double f = 1.0 / (x * x);
    const double series =
        f * (-1.0 / 12 +
             f * (1.0 / 120 +
                  f * (-1.0 / 252 +
                       f * (1.0 / 240 + f * (-1.0 / 132 + f * (691.0 / 32760 + f * (-1.0 / 12)))))));
    return shift + log(x) - 0.5 / x + series;
}

/* KL(Dir(post) || Dir(prior)) over n components. */
static double dirichlet_kl(const double *post, const double *prior, Py_ssize_t n) {
    double post_total = 0.0, prior_total = 0.0, value = 0.0;
    for (Py_ssize_t k = 0; k < n; k++) {
        post_total += post[k];
        prior_total += prior[k];
    }
    const double psi_total = digamma(post_total);
    for (Py_ssize_t k = 0; k < n; k++)
        value += lgamma(prior[k]) - lgamma(post[k]) +
                 (post[k] - prior[k]) * (digamma(post[k]) - psi_total);
    return value - lgamma(prior_total) + lgamma(post_total);
}

typedef struct {
    Py_ssize_t n_items, k, n_codes, n_colours;
    const int64_t *indptr;   /* (n_items + 1,) CSR rows of both directions of every link */
    const int32_t *indices;  /* (entries,) partner of every entry */
    const int32_t *entry_code; /* (entries,) 2 * worker + label of every entry's link */
    const int32_t *left, *right, *link_code; /* (n_links,) */
    Py_ssize_t n_links;
    const int64_t *bounds;   /* (n_colours + 1,) colour classes */
    const double *prior_pi, *prior_a, *prior_b;
    double *resp, *log_resp; /* (n_items, k) */
    double *prevalence, *alpha, *beta; /* (k,), (n_workers, 2), (n_workers, 2) */
} Problem;

/* S[code] = sum of r_i . r_j over the links of each code. */
static void agreement_sums(const Problem *p, double *sums) {
    const Py_ssize_t k = p->k;
    memset(sums, 0, (size_t)p->n_codes * sizeof(double));
    for (Py_ssize_t l = 0; l < p->n_links; l++) {
        const double *a = p->resp + (Py_ssize_t)p->left[l] * k;
        const double *b = p->resp + (Py_ssize_t)p->right[l] * k;
        double s = 0.0;
        for (Py_ssize_t c = 0; c < k; c++) s += a[c] * b[c];
        sums[p->link_code[l]] += s;
    }
}

static void column_sums(const Problem *p, double *out) {
    const Py_ssize_t k = p->k;
    memset(out, 0, (size_t)k * sizeof(double));
    for (Py_ssize_t i = 0; i < p->n_items; i++)
        for (Py_ssize_t c = 0; c < k; c++) out[c] += p->resp[i * k + c];
}

/* The VB loop; returns the number of sweeps run and sets *converged. Scratch: see caller. */
static Py_ssize_t run(const Problem *p, Py_ssize_t max_iter, Py_ssize_t min_iter, double tol,
                      double *history, int *converged, double *scratch) {
    const Py_ssize_t k = p->k, n_codes = p->n_codes, n_workers = n_codes / 2;
    double *sums = scratch, *counts = sums + n_codes, *w = counts + n_codes,
           *c_off = w + n_codes, *log_pi = c_off + n_codes, *colsum = log_pi + k,
           *logits = colsum + k;
    memset(counts, 0, (size_t)n_codes * sizeof(double));
    for (Py_ssize_t l = 0; l < p->n_links; l++) counts[p->link_code[l]] += 1.0;
    agreement_sums(p, sums);
    column_sums(p, colsum);
    double previous = 0.0;
    int have_previous = 0;
    Py_ssize_t n_iter = 0;
    *converged = 0;
    for (Py_ssize_t it = 0; it < max_iter; it++) {
        /* globals from the statistics of the previous q(z) */
        double prev_total = 0.0;
        for (Py_ssize_t c = 0; c < k; c++) {
            p->prevalence[c] = p->prior_pi[c] + colsum[c];
            prev_total += p->prevalence[c];
        }
        const double psi_prev = digamma(prev_total);
        for (Py_ssize_t c = 0; c < k; c++) log_pi[c] = digamma(p->prevalence[c]) - psi_prev;
        for (Py_ssize_t m = 0; m < n_workers; m++) {
            double *a = p->alpha + 2 * m, *b = p->beta + 2 * m;
            a[0] = p->prior_a[0] + sums[2 * m + 1];
            a[1] = p->prior_a[1] + sums[2 * m];
            b[0] = p->prior_b[0] + (counts[2 * m] - sums[2 * m]);
            b[1] = p->prior_b[1] + (counts[2 * m + 1] - sums[2 * m + 1]);
            const double psi_a = digamma(a[0] + a[1]), psi_b = digamma(b[0] + b[1]);
            const double la = digamma(a[0]) - psi_a, l1a = digamma(a[1]) - psi_a;
            const double lb = digamma(b[0]) - psi_b, l1b = digamma(b[1]) - psi_b;
            w[2 * m] = l1a - lb;
            w[2 * m + 1] = l1a - lb + (la - l1a + lb - l1b);
            c_off[2 * m] = lb;
            c_off[2 * m + 1] = l1b;
        }
        /* q(z), one colour class after the other */
        double entropy = 0.0;
        for (Py_ssize_t colour = 0; colour < p->n_colours; colour++) {
            for (Py_ssize_t i = p->bounds[colour]; i < p->bounds[colour + 1]; i++) {
                for (Py_ssize_t c = 0; c < k; c++) logits[c] = 0.0;
                for (int64_t e = p->indptr[i]; e < p->indptr[i + 1]; e++) {
                    const double weight = w[p->entry_code[e]];
                    const double *partner = p->resp + (Py_ssize_t)p->indices[e] * k;
                    for (Py_ssize_t c = 0; c < k; c++) logits[c] += weight * partner[c];
                }
                double top = -INFINITY;
                for (Py_ssize_t c = 0; c < k; c++) {
                    logits[c] += log_pi[c];
                    if (logits[c] > top) top = logits[c];
                }
                double *r = p->resp + i * k, *lr = p->log_resp + i * k, total = 0.0;
                for (Py_ssize_t c = 0; c < k; c++) {
                    lr[c] = logits[c] - top;
                    r[c] = exp(lr[c]);
                    total += r[c];
                }
                const double log_total = log(total);
                for (Py_ssize_t c = 0; c < k; c++) {
                    r[c] /= total;
                    lr[c] -= log_total;
                    if (r[c] > 0.0) entropy -= r[c] * lr[c];
                }
            }
        }
        /* statistics at the new q(z) and the ELBO */
        agreement_sums(p, sums);
        column_sums(p, colsum);
        double value = entropy - dirichlet_kl(p->prevalence, p->prior_pi, k);
        for (Py_ssize_t c = 0; c < k; c++) value += colsum[c] * log_pi[c];
        for (Py_ssize_t code = 0; code < n_codes; code++)
            value += w[code] * sums[code] + c_off[code] * counts[code];
        for (Py_ssize_t m = 0; m < n_workers; m++)
            value -= dirichlet_kl(p->alpha + 2 * m, p->prior_a, 2) +
                     dirichlet_kl(p->beta + 2 * m, p->prior_b, 2);
        history[it] = value;
        n_iter = it + 1;
        if (isfinite(value)) {
            if (tol >= 0.0 && n_iter >= min_iter && have_previous &&
                fabs(value - previous) < tol * fmax(1.0, fabs(value))) {
                *converged = 1;
                break;
            }
        }
        previous = value;
        have_previous = 1;
    }
    return n_iter;
}

/* Every index within its array: partners and link ends below n_items, codes below n_codes,
 * rows and colour classes in order and inside the items. */
static int valid_codes(const Problem *p, Py_ssize_t entries) {
    if (p->indptr[0] != 0 || p->bounds[0] != 0 || p->bounds[p->n_colours] != p->n_items)
        return 0;
    for (Py_ssize_t i = 0; i < p->n_items; i++)
        if (p->indptr[i + 1] < p->indptr[i]) return 0;
    for (Py_ssize_t c = 0; c < p->n_colours; c++)
        if (p->bounds[c + 1] < p->bounds[c]) return 0;
    for (Py_ssize_t e = 0; e < entries; e++)
        if (p->indices[e] < 0 || p->indices[e] >= p->n_items || p->entry_code[e] < 0 ||
            p->entry_code[e] >= p->n_codes)
            return 0;
    for (Py_ssize_t l = 0; l < p->n_links; l++)
        if (p->left[l] < 0 || p->left[l] >= p->n_items || p->right[l] < 0 ||
            p->right[l] >= p->n_items || p->link_code[l] < 0 || p->link_code[l] >= p->n_codes)
            return 0;
    return 1;
}

static const char vb_run_doc[] =
    "vb_run(indptr, indices, entry_code, left, right, link_code, bounds, prior_pi, prior_a,\n"
    "prior_b, resp, log_resp, prevalence, alpha, beta, history, max_iter, min_iter, tol)\n"
    "-> (n_iter, converged)\n\n"
    "Coordinate-ascent VB of the links-only model (link_vb.py) from q(z) = resp (float64\n"
    "(n_items, K), updated in place with its log in log_resp). indptr, bounds int64; indices,\n"
    "entry_code (2 * worker + label per CSR entry), left, right, link_code int32; priors\n"
    "float64 (K,), (2,), (2,). Writes the globals of the last sweep to prevalence (K,),\n"
    "alpha and beta (n_workers, 2) and the ELBO of every sweep to history (max_iter,).\n"
    "tol < 0: run max_iter sweeps.";

static PyObject *vb_run(PyObject *self, PyObject *args) {
    Py_buffer b[16];
    Py_ssize_t max_iter, min_iter;
    double tol;
    PyObject *result = NULL;
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*w*w*w*w*w*w*nnd", &b[0], &b[1], &b[2],
                          &b[3], &b[4], &b[5], &b[6], &b[7], &b[8], &b[9], &b[10], &b[11],
                          &b[12], &b[13], &b[14], &b[15], &max_iter, &min_iter, &tol))
        return NULL;
    Problem p;
    p.k = b[7].len / (Py_ssize_t)sizeof(double);
    p.n_items = b[0].len / (Py_ssize_t)sizeof(int64_t) - 1;
    p.n_links = b[3].len / (Py_ssize_t)sizeof(int32_t);
    p.n_colours = b[6].len / (Py_ssize_t)sizeof(int64_t) - 1;
    p.n_codes = 2 * (b[13].len / (Py_ssize_t)(2 * sizeof(double)));
    p.indptr = b[0].buf;
    p.indices = b[1].buf;
    p.entry_code = b[2].buf;
    p.left = b[3].buf;
    p.right = b[4].buf;
    p.link_code = b[5].buf;
    p.bounds = b[6].buf;
    p.prior_pi = b[7].buf;
    p.prior_a = b[8].buf;
    p.prior_b = b[9].buf;
    p.resp = b[10].buf;
    p.log_resp = b[11].buf;
    p.prevalence = b[12].buf;
    p.alpha = b[13].buf;
    p.beta = b[14].buf;
    if (p.k < 1 || p.n_items < 0 || p.n_colours < 0 || max_iter < 1) {
        PyErr_SetString(PyExc_ValueError, "vb_run: empty priors, indptr, bounds or max_iter < 1");
        goto done;
    }
    const Py_ssize_t entries = ((const int64_t *)b[0].buf)[p.n_items];
    if (!check_size(&b[1], entries, sizeof(int32_t), "indices") ||
        !check_size(&b[2], entries, sizeof(int32_t), "entry_code") ||
        !check_size(&b[4], p.n_links, sizeof(int32_t), "right") ||
        !check_size(&b[5], p.n_links, sizeof(int32_t), "link_code") ||
        !check_size(&b[8], 2, sizeof(double), "prior_a") ||
        !check_size(&b[9], 2, sizeof(double), "prior_b") ||
        !check_size(&b[10], p.n_items * p.k, sizeof(double), "resp") ||
        !check_size(&b[11], p.n_items * p.k, sizeof(double), "log_resp") ||
        !check_size(&b[12], p.k, sizeof(double), "prevalence") ||
        !check_size(&b[14], p.n_codes, sizeof(double), "beta") ||
        !check_size(&b[15], max_iter, sizeof(double), "history"))
        goto done;
    if (!valid_codes(&p, entries)) {
        PyErr_SetString(PyExc_ValueError,
                        "vb_run: an item, worker code or colour bound is out of range");
        goto done;
    }
    double *scratch = malloc((size_t)(4 * p.n_codes + 3 * p.k) * sizeof(double));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    int converged = 0;
    Py_ssize_t n_iter;
    Py_BEGIN_ALLOW_THREADS;
    n_iter = run(&p, max_iter, min_iter, tol, b[15].buf, &converged, scratch);
    Py_END_ALLOW_THREADS;
    free(scratch);
    result = Py_BuildValue("nO", n_iter, converged ? Py_True : Py_False);
done:
    for (int j = 0; j < 16; j++)
        if (b[j].obj) PyBuffer_Release(&b[j]);
    return result;
}

static PyMethodDef methods[] = {
    {"vb_run", vb_run, METH_VARARGS, vb_run_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_link_kernel",
    .m_doc = "Compiled VB sweeps of LinkClustering (link_vb.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__link_kernel(void) { return PyModule_Create(&module); }
