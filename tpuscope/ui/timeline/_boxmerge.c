/*
 * merge_small for the timeline's level of detail (tpuscope/ui/timeline/lod.py), in one pass.
 *
 * Why C: a frame merges a few thousand boxes per visible (track, depth), ~40
 * times; numpy needs ~15 whole-array passes and temporaries for each, which
 * made the merge a third of a zoomed-out frame at 100M events. Building the
 * pyramid runs the same merge over every event of a track (22M at 100M). The
 * rule is lod.merge_small's, decided with the same double arithmetic, so both
 * give the same boxes: neighbours shorter than min_ps that start in the same
 * min_ps bucket and whose gap to everything before is under min_ps fold into
 * one box, named after its first longest member.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

/* numpy's float floor division (npy_divmod in numpy/_core/src/npymath/npy_math_internal.h.src), so
 * that buckets here equal np.floor_divide's to the last bit. */
static double exact_floor_divide(double a, double b) {
    double mod = fmod(a, b);
    double div = (a - mod) / b;
    if (mod) {
        if ((b < 0) != (mod < 0)) div -= 1.0;
    }
    if (div) {
        double floordiv = floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
        return floordiv;
    }
    return copysign(0.0, a / b);
}

/* The same, fast: when the rounded quotient is not a whole number, its floor is the true quotient's
 * (rounding is monotonic and whole numbers below 2^53 are exact), which is also numpy's answer; only
 * a quotient that rounds onto a whole number needs numpy's exact steps (fmod costs ~10x a divide). */
static inline double floor_divide(double a, double b) {
    double quotient = a / b, whole = floor(quotient);
    return whole != quotient ? whole : exact_floor_divide(a, b);
}

/* merge_small(start, end, rep, count, min_ps, out_start, out_end, out_rep, out_count) -> boxes written
 * All columns contiguous int64; the out_* ones writable, at least as long as start. */
static PyObject *merge_small(PyObject *self, PyObject *args) {
    Py_buffer in[4] = {{0}}, out[4] = {{0}};
    double min_ps;
    if (!PyArg_ParseTuple(args, "y*y*y*y*dw*w*w*w*", &in[0], &in[1], &in[2], &in[3], &min_ps, &out[0], &out[1],
                          &out[2], &out[3]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = in[0].len / 8;
    /* The buffers are raw bytes here: the caller (lod.merge_small) passes contiguous int64 columns. */
    int ok = in[0].len % 8 == 0;
    for (int i = 1; i < 4 && ok; i++) ok = in[i].len == in[0].len;
    for (int i = 0; i < 4 && ok; i++) ok = out[i].len >= in[0].len;
    if (!ok) PyErr_SetString(PyExc_ValueError, "columns must be int64 and outputs as long as the inputs");
    if (ok && !(min_ps > 0)) {
        PyErr_SetString(PyExc_ValueError, "min_ps must be positive");
        ok = 0;
    }
    if (ok) {
        const int64_t *start = in[0].buf, *end = in[1].buf, *rep = in[2].buf, *count = in[3].buf;
        int64_t *o_start = out[0].buf, *o_end = out[1].buf, *o_rep = out[2].buf, *o_count = out[3].buf;
        Py_ssize_t boxes = 0;
        Py_BEGIN_ALLOW_THREADS
        if (n > 0) {
            int64_t run_start = start[0], run_end = end[0], run_count = count[0], best_rep = rep[0];
            int64_t best_length = end[0] - start[0], end_so_far = end[0];
            int previous_tiny = (double)best_length < min_ps;
            double previous_bucket = floor_divide((double)start[0], min_ps);
            for (Py_ssize_t i = 1; i < n; i++) {
                int64_t length = end[i] - start[i];
                int tiny = (double)length < min_ps;
                double bucket = floor_divide((double)start[i], min_ps);
                int joins = tiny && previous_tiny && (double)(start[i] - end_so_far) < min_ps &&
                            bucket == previous_bucket;
                if (joins) {
                    if (end[i] > run_end) run_end = end[i];
                    run_count += count[i];
                    if (length > best_length) {
                        best_length = length;
                        best_rep = rep[i];
                    }
                } else {
                    o_start[boxes] = run_start;
                    o_end[boxes] = run_end;
                    o_rep[boxes] = best_rep;
                    o_count[boxes] = run_count;
                    boxes++;
                    run_start = start[i];
                    run_end = end[i];
                    run_count = count[i];
                    best_rep = rep[i];
                    best_length = length;
                }
                if (end[i] > end_so_far) end_so_far = end[i];
                previous_tiny = tiny;
                previous_bucket = bucket;
            }
            o_start[boxes] = run_start;
            o_end[boxes] = run_end;
            o_rep[boxes] = best_rep;
            o_count[boxes] = run_count;
            boxes++;
        }
        Py_END_ALLOW_THREADS
        result = PyLong_FromSsize_t(boxes);
    }
    for (int i = 0; i < 4; i++) {
        if (in[i].obj) PyBuffer_Release(&in[i]);
        if (out[i].obj) PyBuffer_Release(&out[i]);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"merge_small", merge_small, METH_VARARGS,
     "Fold neighbouring sub-resolution boxes into one, as lod.merge_small does, in one pass."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_boxmerge", NULL, -1, methods};

PyMODINIT_FUNC PyInit__boxmerge(void) { return PyModule_Create(&module); }
