/*
 * Format-neutral column kernels of the trace model: nesting depths of a track's events, a gather of
 * int32 rows by indices of any width, and giving memory back to the OS. Every reader's assembly and
 * the model's builder use them; the XPlane line decoder (tpuscope/readers/xplane/_linedecode.c) is
 * the format's own C code. All release the GIL, so the decoder threads run them beside each other.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

/* sorted_depth(start, duration, out_depth) -> bool: one pass over a track's
 * int64 columns. If the events are in the model's order (start ascending,
 * longer first on ties) it writes each event's int16 nesting depth (its
 * number of enclosing ancestors, via a stack of open ends; partial overlaps
 * simply stack deeper) and returns True; at the first event out of order it
 * stops and returns False, and the caller sorts and calls again. Ends are
 * start + duration, saturated so corrupt values cannot overflow. */
static PyObject *sorted_depth(PyObject *self, PyObject *args) {
    Py_buffer s, d, out;
    if (!PyArg_ParseTuple(args, "y*y*w*", &s, &d, &out)) return NULL;
    Py_ssize_t n = s.len / 8;
    PyObject *result = NULL;
    if (d.len / 8 != n || out.len / 2 != n) {
        PyErr_SetString(PyExc_ValueError, "column lengths differ");
    } else {
        int64_t *stack = PyMem_Malloc(sizeof(int64_t) * (n > 0 ? n : 1));
        if (!stack) {
            PyErr_NoMemory();
        } else {
            const int64_t *start = s.buf, *duration = d.buf;
            int16_t *depth = out.buf;
            Py_ssize_t top = 0;
            int in_order = 1;
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t i = 0; i < n; i++) {
                if (i > 0 && (start[i] < start[i - 1] ||
                              (start[i] == start[i - 1] && duration[i] > duration[i - 1]))) {
                    in_order = 0;
                    break;
                }
                int64_t end;
                if (__builtin_add_overflow(start[i], duration[i], &end))
                    end = duration[i] > 0 ? INT64_MAX : INT64_MIN;
                while (top > 0 && stack[top - 1] <= start[i]) top--;
                depth[i] = top > INT16_MAX ? INT16_MAX : (int16_t)top;
                stack[top++] = end;
            }
            Py_END_ALLOW_THREADS
            PyMem_Free(stack);
            result = PyBool_FromLong(in_order);
        }
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&d);
    PyBuffer_Release(&out);
    return result;
}

/* gather_rows(table, indices, index_itemsize, out) -> int
 * out[i] = table[indices[i]] for an int32 `table` and `out` and signed integer `indices` of 1, 2, 4 or 8
 * bytes each; an index outside the table gets -1. Returns how many did. Why not numpy's take: it first
 * casts narrow indices to intp, a fresh 8-byte-per-event temporary; for a 13M-event line that is 104 MB
 * of pages the kernel zeroes, twice a line (metadata rows, then name ids): the part of a 60M-event load
 * that grew faster than the events (benchmarks/README.md). Releases the GIL. */
static PyObject *gather_rows(PyObject *self, PyObject *args) {
    Py_buffer table, indices, out;
    Py_ssize_t itemsize;
    if (!PyArg_ParseTuple(args, "y*y*nw*", &table, &indices, &itemsize, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = itemsize > 0 ? indices.len / itemsize : 0;
    if (!(itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8) || indices.len % itemsize) {
        PyErr_SetString(PyExc_ValueError, "indices must be signed integers of 1, 2, 4 or 8 bytes");
    } else if (out.len / 4 != n || table.len % 4) {
        PyErr_SetString(PyExc_ValueError, "column lengths differ");
    } else {
        const int32_t *rows = table.buf;
        int32_t *dest = out.buf;
        int64_t size = table.len / 4;
        Py_ssize_t outside = 0;
        Py_BEGIN_ALLOW_THREADS
#define GATHER(type)                                                       \
        {                                                                  \
            const type *at = indices.buf;                                  \
            for (Py_ssize_t i = 0; i < n; i++) {                           \
                int64_t k = (int64_t)at[i];                                \
                int inside = k >= 0 && k < size;                           \
                dest[i] = inside ? rows[k] : -1;                           \
                outside += !inside;                                        \
            }                                                              \
        }
        if (itemsize == 1) GATHER(int8_t)
        else if (itemsize == 2) GATHER(int16_t)
        else if (itemsize == 4) GATHER(int32_t)
        else GATHER(int64_t)
#undef GATHER
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(outside);
    }
    PyBuffer_Release(&table);
    PyBuffer_Release(&indices);
    PyBuffer_Release(&out);
    return result;
}

/* return_freed_memory_to_os(): why: a load allocates and frees many large
 * numpy temporaries; glibc then raises its mmap threshold (up to 32 MiB), so
 * they live in the heap, whose freed holes it keeps: the process would stay
 * at ~2x the model's size. malloc_trim gives the free pages of every arena
 * back (madvise), without the page-fault cost that a fixed low mmap threshold
 * costs during the load (~40 ms per 1M events, measured). Returns True where
 * the C library has it (glibc), else False. */
static PyObject *return_freed_memory_to_os(PyObject *self, PyObject *args) {
#ifdef __GLIBC__
    int released;
    Py_BEGIN_ALLOW_THREADS
    released = malloc_trim(0);
    Py_END_ALLOW_THREADS
    (void)released;
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

/* release_pages(buffer, offset, length): the caller is done with these bytes of
 * its own writable buffer (a file's bytes, read into numpy): the whole pages
 * inside the range go back to the OS now (they would read as zeros), so a
 * big file's memory shrinks plane by plane while it decodes instead of
 * staying resident until the end. Pages only partly inside stay. */
static PyObject *release_pages(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t offset, length;
    if (!PyArg_ParseTuple(args, "w*nn", &buf, &offset, &length)) return NULL;
    int released = 0;
    if (offset >= 0 && length > 0 && offset <= buf.len && length <= buf.len - offset) {
#if defined(__linux__) && defined(MADV_DONTNEED)
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
        uintptr_t start = ((uintptr_t)buf.buf + (uintptr_t)offset + page - 1) & ~(page - 1);
        uintptr_t end = ((uintptr_t)buf.buf + (uintptr_t)offset + (uintptr_t)length) & ~(page - 1);
        if (end > start) released = madvise((void *)start, end - start, MADV_DONTNEED) == 0;
#endif
    }
    PyBuffer_Release(&buf);
    return PyBool_FromLong(released);
}

static PyMethodDef methods[] = {
    {"gather_rows", gather_rows, METH_VARARGS,
     "out[i] = table[indices[i]] (int32), for signed indices of any width, without a cast of them."},
    {"sorted_depth", sorted_depth, METH_VARARGS,
     "Nesting depths of a track's events if they are in order (else False)."},
    {"release_pages", release_pages, METH_VARARGS,
     "Give the whole pages of a byte range of a writable buffer back to the OS."},
    {"return_freed_memory_to_os", return_freed_memory_to_os, METH_NOARGS,
     "Give the heap's free pages back to the OS (glibc only)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
