/* Identifier columns of a plain CSV/TSV file as integer codes, in one pass over its bytes.
 *
 * read_ids(buffer, sep, columns, n_fields) reads the rows of a text table whose header (the
 * first line) has n_fields fields, and returns, for each wanted field position in `columns`
 * (0-based, increasing), the code of each row's value (int32, in order of first appearance)
 * and the distinct values (str, in code order): (n_rows, [(codes: bytearray, values: list)]).
 *
 * It handles the plain case only, and returns None for anything else, so that the caller reads
 * the file with pandas instead (same results, its own messages):
 *   - a quote ("), a carriage return or a NUL byte anywhere in the file (quoted fields, Windows
 *     line ends, damaged files: pandas' rules for them are kept by not handling them here);
 *   - a data line with fewer fields than the last wanted position (pandas fills the missing
 *     fields with NaN), a first data line whose field count differs from the header's (pandas
 *     may then take its first column as the index), no data line;
 *   - a value that is not valid UTF-8.
 * Blank lines are skipped (pandas' skip_blank_lines); fields after the last wanted one are not
 * read (pandas' usecols: extra fields are ignored) but checked for the refused bytes; a UTF-8
 * byte-order mark is skipped. A value is hashed 8 bytes at a time and looked up in an
 * open-addressing table per column (Knuth, TAOCP vol. 3, 6.4, linear probing); the rest of a
 * line is searched for its end (and a field for its separator) and for the refused bytes
 * together, 16 bytes at a time (SSE2) where available.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct {
    uint64_t hash;
    const char *start; /* the first occurrence in the buffer (alive during the call) */
    Py_ssize_t length;
    int32_t code; /* -1: empty slot */
} Slot;

typedef struct {
    Slot *slots;
    size_t mask; /* capacity - 1 (a power of two) */
    int32_t n_values;
    int32_t *codes; /* one per row */
    const char **first; /* the values in code order (start, length) */
    Py_ssize_t *first_length;
    size_t first_capacity;
} Column;

static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    const uint64_t k = 0x9E3779B97F4A7C15ULL;
    uint64_t h = (uint64_t)n * k;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        memcpy(&w, p, (size_t)n);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

static int column_init(Column *c) {
    memset(c, 0, sizeof(*c));
    c->mask = 255;
    c->slots = malloc((c->mask + 1) * sizeof(Slot));
    c->first_capacity = 64;
    c->first = malloc(c->first_capacity * sizeof(char *));
    c->first_length = malloc(c->first_capacity * sizeof(Py_ssize_t));
    if (!c->slots || !c->first || !c->first_length) return 0;
    for (size_t i = 0; i <= c->mask; i++) c->slots[i].code = -1;
    return 1;
}

static void column_free(Column *c) {
    free(c->slots);
    free(c->codes);
    free(c->first);
    free(c->first_length);
}

static int column_grow(Column *c) {
    size_t capacity = 2 * (c->mask + 1);
    Slot *slots = malloc(capacity * sizeof(Slot));
    if (!slots) return 0;
    for (size_t i = 0; i < capacity; i++) slots[i].code = -1;
    for (size_t i = 0; i <= c->mask; i++) {
        if (c->slots[i].code < 0) continue;
        size_t j = c->slots[i].hash & (capacity - 1);
        while (slots[j].code >= 0) j = (j + 1) & (capacity - 1);
        slots[j] = c->slots[i];
    }
    free(c->slots);
    c->slots = slots;
    c->mask = capacity - 1;
    return 1;
}

/* The code of the value p[0:n] (a new code for a new value); -1 when out of memory. */
static int32_t column_code(Column *c, const char *p, Py_ssize_t n) {
    uint64_t h = hash_bytes(p, n);
    size_t j = h & c->mask;
    for (;;) {
        Slot *s = &c->slots[j];
        if (s->code < 0) break;
        if (s->hash == h && s->length == n && memcmp(s->start, p, (size_t)n) == 0) return s->code;
        j = (j + 1) & c->mask;
    }
    if (c->n_values == INT32_MAX) return -1;
    if ((size_t)c->n_values >= c->first_capacity) {
        size_t capacity = 2 * c->first_capacity;
        const char **first = realloc((void *)c->first, capacity * sizeof(char *));
        if (!first) return -1;
        c->first = first;
        Py_ssize_t *lengths = realloc(c->first_length, capacity * sizeof(Py_ssize_t));
        if (!lengths) return -1;
        c->first_length = lengths;
        c->first_capacity = capacity;
    }
    int32_t code = c->n_values++;
    c->first[code] = p;
    c->first_length[code] = n;
    Slot *s = &c->slots[j];
    s->hash = h;
    s->start = p;
    s->length = n;
    s->code = code;
    if (2 * (size_t)c->n_values > c->mask + 1 && !column_grow(c)) return -1;
    return code;
}

/* The first separator `sep` or '\n' at or after p (end if none), or NULL when a byte refused
 * here (a quote, a carriage return, a NUL) comes first; with sep = '\n', the end of the line.
 * Sixteen bytes at a time where SSE2 is available (every x86-64 processor). */
static const char *next_stop(const char *p, const char *end, char sep) {
#if defined(__SSE2__) && defined(__GNUC__)
    const __m128i newline = _mm_set1_epi8('\n'), separator = _mm_set1_epi8(sep);
    const __m128i quote = _mm_set1_epi8('"'), cr = _mm_set1_epi8('\r'), nul = _mm_setzero_si128();
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        unsigned stops = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(v, newline), _mm_cmpeq_epi8(v, separator)));
        unsigned refused = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, cr)), _mm_cmpeq_epi8(v, nul)));
        if (stops) {
            unsigned before = (stops & (0u - stops)) - 1u; /* the bytes before the first stop */
            return (refused & before) ? NULL : p + __builtin_ctz(stops);
        }
        if (refused) return NULL;
        p += 16;
    }
#endif
    for (; p < end; p++) {
        if (*p == '\n' || *p == sep) return p;
        if (*p == '"' || *p == '\r' || *p == '\0') return NULL;
    }
    return end;
}

static const char read_ids_doc[] =
    "read_ids(buffer, sep, columns, n_fields) -> (n_rows, [(codes, values), ...]) or None\n\n"
    "The identifier columns at the field positions `columns` of a plain text table (module\n"
    "comment), or None where pandas must read the file.";

static PyObject *read_ids(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer buf;
    int sep_int;
    PyObject *columns_obj;
    Py_ssize_t n_fields;
    if (!PyArg_ParseTuple(args, "y*iOn", &buf, &sep_int, &columns_obj, &n_fields)) return NULL;
    PyObject *result = NULL;
    Column *cols = NULL;
    Py_ssize_t *wanted = NULL, n_wanted = 0, n_cols_init = 0;
    const char sep = (char)sep_int;

    PyObject *seq = PySequence_Fast(columns_obj, "columns must be a sequence of field positions");
    if (!seq) goto done;
    n_wanted = PySequence_Fast_GET_SIZE(seq);
    if (n_wanted < 1) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "columns: give at least one field position");
        goto done;
    }
    wanted = malloc((size_t)n_wanted * sizeof(Py_ssize_t));
    cols = calloc((size_t)n_wanted, sizeof(Column));
    if (!wanted || !cols) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n_wanted; k++) {
        wanted[k] = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, k));
        if (wanted[k] < 0 || (k > 0 && wanted[k] <= wanted[k - 1]) || wanted[k] >= n_fields) {
            Py_DECREF(seq);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "columns: increasing positions below n_fields");
            goto done;
        }
    }
    Py_DECREF(seq);
    for (; n_cols_init < n_wanted; n_cols_init++) {
        if (!column_init(&cols[n_cols_init])) {
            PyErr_NoMemory();
            goto done;
        }
    }
    const Py_ssize_t last = wanted[n_wanted - 1];

    const char *p = buf.buf, *end = p + buf.len;
    if (end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
    const char *header_end = next_stop(p, end, '\n');
    if (!header_end || header_end == end) goto unhandled;
    p = header_end + 1;

    size_t capacity = 1 << 16;
    Py_ssize_t n_rows = 0;
    for (Py_ssize_t k = 0; k < n_wanted; k++) {
        cols[k].codes = malloc(capacity * sizeof(int32_t));
        if (!cols[k].codes) {
            PyErr_NoMemory();
            goto done;
        }
    }
    int first_line = 1;
    while (p < end) {
        if (*p == '\n') { /* a blank line */
            p++;
            continue;
        }
        if (*p == ' ' || *p == '\t') goto unhandled; /* maybe a line of spaces: pandas skips it */
        if ((size_t)n_rows == capacity) {
            capacity *= 2;
            for (Py_ssize_t k = 0; k < n_wanted; k++) {
                int32_t *codes = realloc(cols[k].codes, capacity * sizeof(int32_t));
                if (!codes) {
                    PyErr_NoMemory();
                    goto done;
                }
                cols[k].codes = codes;
            }
        }
        Py_ssize_t field = 0, k = 0;
        const char *q = p;
        for (;;) { /* the fields up to the last wanted one */
            const char *start = q;
            q = next_stop(q, end, sep);
            if (!q) goto unhandled;
            if (field == wanted[k]) {
                int32_t code = column_code(&cols[k], start, q - start);
                if (code < 0) {
                    PyErr_NoMemory();
                    goto done;
                }
                cols[k].codes[n_rows] = code;
                k++;
            }
            if (field == last) break;
            if (q == end || *q == '\n') goto unhandled; /* fewer fields than wanted */
            q++;
            field++;
        }
        const char *line_end = next_stop(q, end, '\n');
        if (!line_end) goto unhandled;
        if (first_line) { /* as many fields as the header (else pandas may see an index) */
            Py_ssize_t count = field + 1;
            for (const char *r = q; r < line_end; r++) count += (*r == sep);
            if (count != n_fields) goto unhandled;
            first_line = 0;
        }
        n_rows++;
        p = line_end + (line_end < end);
    }
    if (n_rows == 0) goto unhandled;

    PyObject *out = PyList_New(n_wanted);
    if (!out) goto done;
    for (Py_ssize_t k = 0; k < n_wanted; k++) {
        Column *c = &cols[k];
        PyObject *values = PyList_New(c->n_values);
        if (!values) {
            Py_DECREF(out);
            goto done;
        }
        for (int32_t v = 0; v < c->n_values; v++) {
            PyObject *text = PyUnicode_DecodeUTF8(c->first[v], c->first_length[v], "strict");
            if (!text) {
                Py_DECREF(values);
                Py_DECREF(out);
                if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    PyErr_Clear();
                    goto unhandled;
                }
                goto done;
            }
            PyList_SET_ITEM(values, v, text);
        }
        PyObject *codes = PyByteArray_FromStringAndSize((const char *)c->codes,
                                                        n_rows * (Py_ssize_t)sizeof(int32_t));
        if (!codes) {
            Py_DECREF(values);
            Py_DECREF(out);
            goto done;
        }
        PyList_SET_ITEM(out, k, Py_BuildValue("(NN)", codes, values));
    }
    result = Py_BuildValue("(nN)", n_rows, out);
    goto done;

unhandled:
    result = Py_NewRef(Py_None);
done:
    for (Py_ssize_t k = 0; k < n_cols_init; k++) column_free(&cols[k]);
    free(cols);
    free(wanted);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"read_ids", read_ids, METH_VARARGS, read_ids_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_csv_ids",
    .m_doc = "Identifier columns of a plain CSV/TSV file as codes, in one pass (data/io.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__csv_ids(void) { return PyModule_Create(&module); }
