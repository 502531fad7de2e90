/* The size check the compiled kernels of crowdbayes run on each buffer they are handed
 * (annotators/_confusion_kernel.c, models/plackett_luce/_pair_kernel.c,
 * models/clustering/_link_kernel.c): include after <Python.h>. */
#ifndef CROWDBAYES_BUFFER_CHECK_H
#define CROWDBAYES_BUFFER_CHECK_H

/* 1 if buf holds at least items × itemsize bytes; else 0 with a ValueError naming it. */
static inline int check_size(Py_buffer *buf, Py_ssize_t items, Py_ssize_t itemsize,
                             const char *name) {
    if (buf->len < items * itemsize) {
        PyErr_Format(PyExc_ValueError, "%s: buffer too small (%zd bytes, need %zd)", name,
                     buf->len, items * itemsize);
        return 0;
    }
    return 1;
}

#endif
