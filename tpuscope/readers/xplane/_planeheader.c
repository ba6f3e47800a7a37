/*
 * Parses what remains of an XSpace and of each XPlane once split_message() (_linedecode.c) has cut
 * out their planes and lines: the plane's id, name, event and stat metadata and plane stats, and the
 * space's errors, warnings and host names, as plain Python tuples, lists and bytes.
 *
 * Why not protobuf: importing protobuf and the generated schema was ~25 ms of every start of
 * `tpuscope` (python -X importtime), for a few hundred small messages a file. The reading follows
 * protobuf's rules for these messages (tpuscope/readers/xplane/xplane.proto): unknown fields and fields
 * with an unexpected wire type are skipped; of a oneof, the last value read wins; a message field
 * that occurs twice is merged (scalars from the last, repeated fields appended); repeated integers
 * come packed or not; map entries come in file order (the caller keeps the last of a key). Strings
 * come back as bytes: the caller decodes them, replacing invalid UTF-8 instead of failing on it.
 * Malformed input raises ValueError("malformed message").
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_wire.h"

#define MALFORMED (-1)
#define NO_MEMORY (-3)

/* (metadata_id, kind, value) of one XStat: value a float, an int or bytes by kind (KIND_* in _wire.h),
 * None when the stat has no value. */
static PyObject *stat_tuple(Cursor c, int *rc) {
    StatFields stat;
    if (read_stat(c, c.end, &stat) < 0) {
        *rc = MALFORMED;
        return NULL;
    }
    PyObject *value;
    if (stat.kind == KIND_DOUBLE) {
        double d;
        memcpy(&d, &stat.number, sizeof d);
        value = PyFloat_FromDouble(d);
    } else if (stat.kind == KIND_UINT || stat.kind == KIND_REF) {
        value = PyLong_FromUnsignedLongLong(stat.number);
    } else if (stat.kind == KIND_INT) {
        value = PyLong_FromLongLong((int64_t)stat.number);
    } else if (stat.kind == KIND_NONE) {
        value = Py_NewRef(Py_None);
    } else {
        value = PyBytes_FromStringAndSize((const char *)stat.text.p, stat.text.end - stat.text.p);
    }
    if (!value) {
        *rc = NO_MEMORY;
        return NULL;
    }
    PyObject *tuple = Py_BuildValue("LiN", (long long)stat.meta, stat.kind, value);
    if (!tuple) *rc = NO_MEMORY;
    return tuple;
}

/* Appends item (a new reference, or NULL after a failure) to list; 0, or -1 on failure, with *rc set. */
static int append_new(PyObject *list, PyObject *item, int *rc) {
    if (!item) {
        if (*rc == 0) *rc = NO_MEMORY;
        return -1;
    }
    int failed = PyList_Append(list, item) < 0;
    Py_DECREF(item);
    if (failed) *rc = NO_MEMORY;
    return failed ? -1 : 0;
}

static int append_stat(PyObject *list, Cursor *c, int *rc) {
    Cursor sub;
    if (read_len(c, &sub) < 0) {
        *rc = MALFORMED;
        return -1;
    }
    return append_new(list, stat_tuple(sub, rc), rc);
}

/* One XEventMetadata, read into an accumulator so that a value occurring twice in its map entry merges. */
typedef struct {
    int64_t id;
    Cursor name, display_name;
    PyObject *stats;    /* list of stat tuples */
    PyObject *children; /* list of ints */
} EventMetadata;

static int read_event_metadata(Cursor c, EventMetadata *m, int *rc) {
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        if (read_tag(&c, &field, &wt) < 0) goto malformed;
        if (field == 1 && wt == 0) {
            if (read_varint(&c, &v) < 0) goto malformed;
            m->id = (int64_t)v;
        } else if (field == 2 && wt == 2) {
            if (read_len(&c, &m->name) < 0) goto malformed;
        } else if (field == 4 && wt == 2) {
            if (read_len(&c, &m->display_name) < 0) goto malformed;
        } else if (field == 5 && wt == 2) {
            if (append_stat(m->stats, &c, rc) < 0) return -1;
        } else if (field == 6 && wt == 0) {
            if (read_varint(&c, &v) < 0) goto malformed;
            if (append_new(m->children, PyLong_FromLongLong((int64_t)v), rc) < 0) return -1;
        } else if (field == 6 && wt == 2) { /* packed */
            Cursor packed;
            if (read_len(&c, &packed) < 0) goto malformed;
            while (packed.p < packed.end) {
                if (read_varint(&packed, &v) < 0) goto malformed;
                if (append_new(m->children, PyLong_FromLongLong((int64_t)v), rc) < 0) return -1;
            }
        } else if (skip_field(&c, wt) < 0) {
            goto malformed;
        }
    }
    return 0;
malformed:
    *rc = MALFORMED;
    return -1;
}

/* (key, id, name, display_name, [stats], (child ids)) of one event_metadata map entry. */
static PyObject *event_metadata_entry(Cursor c, int *rc) {
    int64_t key = 0;
    EventMetadata m = {0, {c.p, c.p}, {c.p, c.p}, PyList_New(0), PyList_New(0)};
    PyObject *result = NULL;
    if (!m.stats || !m.children) {
        *rc = NO_MEMORY;
        goto done;
    }
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        Cursor sub;
        if (read_tag(&c, &field, &wt) < 0) {
            *rc = MALFORMED;
            goto done;
        }
        if (field == 1 && wt == 0) {
            if (read_varint(&c, &v) < 0) {
                *rc = MALFORMED;
                goto done;
            }
            key = (int64_t)v;
        } else if (field == 2 && wt == 2) {
            if (read_len(&c, &sub) < 0) {
                *rc = MALFORMED;
                goto done;
            }
            if (read_event_metadata(sub, &m, rc) < 0) goto done;
        } else if (skip_field(&c, wt) < 0) {
            *rc = MALFORMED;
            goto done;
        }
    }
    PyObject *children = PyList_AsTuple(m.children);
    if (!children) {
        *rc = NO_MEMORY;
        goto done;
    }
    result = Py_BuildValue("LLy#y#ON", (long long)key, (long long)m.id, (const char *)m.name.p,
                           (Py_ssize_t)(m.name.end - m.name.p), (const char *)m.display_name.p,
                           (Py_ssize_t)(m.display_name.end - m.display_name.p), m.stats, children);
    if (!result) *rc = NO_MEMORY;
done:
    Py_XDECREF(m.stats);
    Py_XDECREF(m.children);
    return result;
}

/* (key, name) of one stat_metadata map entry (the XStatMetadata's id and description are not used). */
static PyObject *stat_metadata_entry(Cursor c, int *rc) {
    int64_t key = 0;
    Cursor name = {c.p, c.p};
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        Cursor value;
        if (read_tag(&c, &field, &wt) < 0) goto malformed;
        if (field == 1 && wt == 0) {
            if (read_varint(&c, &v) < 0) goto malformed;
            key = (int64_t)v;
        } else if (field == 2 && wt == 2) {
            if (read_len(&c, &value) < 0) goto malformed;
            while (value.p < value.end) { /* XStatMetadata; merged like any message field */
                uint64_t f;
                int w;
                if (read_tag(&value, &f, &w) < 0) goto malformed;
                if (f == 2 && w == 2) {
                    if (read_len(&value, &name) < 0) goto malformed;
                } else if (skip_field(&value, w) < 0) {
                    goto malformed;
                }
            }
        } else if (skip_field(&c, wt) < 0) {
            goto malformed;
        }
    }
    PyObject *entry = Py_BuildValue("Ly#", (long long)key, (const char *)name.p, (Py_ssize_t)(name.end - name.p));
    if (!entry) *rc = NO_MEMORY;
    return entry;
malformed:
    *rc = MALFORMED;
    return NULL;
}

static PyObject *fail(int rc) {
    if (rc == MALFORMED) PyErr_SetString(PyExc_ValueError, "malformed message");
    else if (!PyErr_Occurred()) PyErr_NoMemory();
    return NULL;
}

/* plane_header(buffer) -> (id, name, [event metadata entries], [stat metadata entries], [plane stats])
 * An XPlane's fields but its lines (any lines left in the buffer are skipped). */
static PyObject *plane_header(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    Cursor c = {(const uint8_t *)buf.buf, (const uint8_t *)buf.buf + buf.len};
    int64_t plane_id = 0;
    Cursor name = {c.p, c.p};
    PyObject *events = PyList_New(0), *stats_meta = PyList_New(0), *stats = PyList_New(0), *result = NULL;
    int rc = (events && stats_meta && stats) ? 0 : NO_MEMORY;
    while (rc == 0 && c.p < c.end) {
        uint64_t field, v;
        int wt;
        Cursor sub;
        if (read_tag(&c, &field, &wt) < 0) {
            rc = MALFORMED;
        } else if (field == 1 && wt == 0) {
            if (read_varint(&c, &v) < 0) rc = MALFORMED;
            plane_id = (int64_t)v;
        } else if (field == 2 && wt == 2) {
            if (read_len(&c, &name) < 0) rc = MALFORMED;
        } else if ((field == 4 || field == 5) && wt == 2) {
            if (read_len(&c, &sub) < 0) rc = MALFORMED;
            else if (field == 4) append_new(events, event_metadata_entry(sub, &rc), &rc);
            else append_new(stats_meta, stat_metadata_entry(sub, &rc), &rc);
        } else if (field == 6 && wt == 2) {
            append_stat(stats, &c, &rc);
        } else if (skip_field(&c, wt) < 0) {
            rc = MALFORMED;
        }
    }
    if (rc == 0) {
        result = Py_BuildValue("Ly#OOO", (long long)plane_id, (const char *)name.p,
                               (Py_ssize_t)(name.end - name.p), events, stats_meta, stats);
    }
    Py_XDECREF(events);
    Py_XDECREF(stats_meta);
    Py_XDECREF(stats);
    PyBuffer_Release(&buf);
    return rc == 0 ? result : fail(rc);
}

/* space_strings(buffer) -> ([errors], [warnings], [hostnames]), each string as bytes
 * An XSpace's fields but its planes (any planes left in the buffer are skipped). */
static PyObject *space_strings(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    Cursor c = {(const uint8_t *)buf.buf, (const uint8_t *)buf.buf + buf.len};
    PyObject *lists[3] = {PyList_New(0), PyList_New(0), PyList_New(0)}, *result = NULL;
    int rc = (lists[0] && lists[1] && lists[2]) ? 0 : NO_MEMORY;
    while (rc == 0 && c.p < c.end) {
        uint64_t field;
        int wt;
        Cursor text;
        if (read_tag(&c, &field, &wt) < 0) {
            rc = MALFORMED;
        } else if (field >= 2 && field <= 4 && wt == 2) {
            if (read_len(&c, &text) < 0) rc = MALFORMED;
            else append_new(lists[field - 2],
                            PyBytes_FromStringAndSize((const char *)text.p, text.end - text.p), &rc);
        } else if (skip_field(&c, wt) < 0) {
            rc = MALFORMED;
        }
    }
    if (rc == 0) result = Py_BuildValue("OOO", lists[0], lists[1], lists[2]);
    for (int i = 0; i < 3; i++) Py_XDECREF(lists[i]);
    PyBuffer_Release(&buf);
    return rc == 0 ? result : fail(rc);
}

static PyMethodDef methods[] = {
    {"plane_header", plane_header, METH_VARARGS,
     "An XPlane's id, name, event and stat metadata and stats (its lines skipped)."},
    {"space_strings", space_strings, METH_VARARGS, "An XSpace's errors, warnings and host names."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_planeheader", NULL, -1, methods};

PyMODINIT_FUNC PyInit__planeheader(void) { return PyModule_Create(&module); }
