/*
 * Decodes one serialized XLine straight into caller-provided column buffers.
 *
 * Why C: a real profile holds millions of events, and reading them through
 * protobuf's Python objects costs ~400 ns per event. Here each event costs a
 * few varint reads. The decoder trusts nothing: every read is bounds-checked
 * against the buffer, so a corrupted file raises ValueError, never a crash.
 *
 * Two calls per line: scan() counts events and stats and reads the line
 * header; fill() writes the columns into buffers the caller allocated with
 * those counts, checking every write against them. For the common regular
 * line (every event with the same numeric stats: XLA ops) scan_events() and
 * fill_regular() do the same with a lighter count and one value column per
 * stat. All release the GIL, so lines decode in parallel threads. split_message() cuts the XSpace and each
 * XPlane into their big repeated fields (planes, lines) and everything else,
 * so _planeheader.c only ever parses the small rest and the line bytes are
 * never copied. Field numbers follow tpuscope/readers/xplane/xplane.proto; the wire
 * readers are in _wire.h.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "_wire.h"

typedef struct {
    int64_t *meta;          /* stat metadata id */
    uint8_t *kind;
    int64_t *value;         /* integer value, the bits of a double, or a string's row below */
    int32_t *event;         /* owning event index */
    Py_ssize_t capacity;    /* stat rows the caller allocated */
    /* String-like stats only (a minority), so numeric stats cost no string columns: */
    int64_t *str_offset;    /* offset into the line */
    int64_t *str_length;
    uint64_t *str_hash;     /* FNV-1a of the string bytes, for vectorized interning */
    Py_ssize_t str_capacity;
} StatColumns;

static uint64_t fnv1a(const uint8_t *p, const uint8_t *end) {
    uint64_t h = 1469598103934665603ULL;
    while (p < end) {
        h ^= *p++;
        h *= 1099511628211ULL;
    }
    return h;
}

/* Decodes one XStat; with out == NULL it only validates and counts strings. */
static int decode_stat(Cursor c, const uint8_t *line_start, const uint8_t *line_end, StatColumns *out,
                       Py_ssize_t index, int32_t event_index, Py_ssize_t *str_count) {
    StatFields stat;
    if (read_stat(c, line_end, &stat) < 0) return -1;
    int is_string = stat.kind == KIND_STR || stat.kind == KIND_BYTES || stat.kind == KIND_COMPRESSED;
    if (out) {
        int64_t value = (int64_t)stat.number;
        if (index >= out->capacity) return -1;
        if (is_string) {
            if (*str_count >= out->str_capacity) return -1;
            out->str_offset[*str_count] = stat.text.p - line_start;
            out->str_length[*str_count] = stat.text.end - stat.text.p;
            out->str_hash[*str_count] = fnv1a(stat.text.p, stat.text.end);
            value = (int64_t)*str_count;
        }
        out->meta[index] = stat.meta;
        out->kind[index] = (uint8_t)stat.kind;
        out->value[index] = value;
        out->event[index] = event_index;
    }
    if (is_string) (*str_count)++;
    return 0;
}

typedef struct {
    int64_t *meta;
    int64_t *offset_ps;
    int64_t *duration_ps;
} EventColumns;

/* An XEvent's scalar fields. */
typedef struct {
    int64_t meta, offset, duration;
} EventScalars;

/* Reads `field` into `scalars` when it is one of an XEvent's varint fields (metadata id, offset,
 * duration, occurrences): 1 when it was one, 0 when it is not, -1 on malformed input. `line_end`: the
 * end of the line's bytes (read_value_varint). */
static inline int read_event_scalar(Cursor *c, const uint8_t *line_end, uint64_t field, int wt,
                                    EventScalars *scalars) {
    uint64_t v;
    if (!((field == 1 || field == 2 || field == 3 || field == 5) && wt == 0)) return 0;
    if (read_value_varint(c, line_end, &v) < 0) return -1;
    if (field == 1) scalars->meta = (int64_t)v;
    else if (field == 2) scalars->offset = (int64_t)v;
    else if (field == 3) scalars->duration = (int64_t)v;
    /* field 5, num_occurrences (aggregated events), is not modelled */
    return 1;
}

static inline void write_event(EventColumns *events, Py_ssize_t index, const EventScalars *scalars) {
    events->meta[index] = scalars->meta;
    events->offset_ps[index] = scalars->offset;
    events->duration_ps[index] = scalars->duration;
}

/* Decodes one XEvent; counts or writes its stats. */
static int decode_event(Cursor c, const uint8_t *line_start, const uint8_t *line_end, EventColumns *events,
                        Py_ssize_t index, StatColumns *stats, Py_ssize_t *stat_count, Py_ssize_t *str_count) {
    EventScalars scalars = {0, 0, 0};
    while (c.p < c.end) {
        uint64_t field;
        int wt, got;
        Cursor sub;
        if (read_tag(&c, &field, &wt) < 0) return -1;
        got = read_event_scalar(&c, line_end, field, wt, &scalars);
        if (got < 0) return -1;
        if (got) continue;
        if (field == 4 && wt == 2) {
            if (read_len(&c, &sub) < 0) return -1;
            if (decode_stat(sub, line_start, line_end, stats, *stat_count, (int32_t)index, str_count) < 0)
                return -1;
            (*stat_count)++;
        } else if (skip_field(&c, wt) < 0) {
            return -1;
        }
    }
    if (events) write_event(events, index, &scalars);
    return 0;
}

typedef struct {
    int64_t id, display_id, timestamp_ns, duration_ps;
    Cursor name, display_name;
    Py_ssize_t events, stats, strings;
} LineHeader;

/* An empty header whose names are empty slices at the line's start. */
static void start_header(LineHeader *header, const uint8_t *line_start) {
    memset(header, 0, sizeof(*header));
    header->name.p = header->name.end = line_start;
    header->display_name.p = header->display_name.end = line_start;
}

/* Reads `field` into the header when it is a header field (id, display id, timestamp, duration,
 * name, display name): 1 when it was one, 0 when it is not, -1 on malformed input. */
static int read_header_field(Cursor *c, uint64_t field, int wt, LineHeader *header) {
    uint64_t v;
    Cursor sub;
    if ((field == 1 || field == 10 || field == 3 || field == 9) && wt == 0) {
        if (read_varint(c, &v) < 0) return -1;
        if (field == 1) header->id = (int64_t)v;
        else if (field == 10) header->display_id = (int64_t)v;
        else if (field == 3) header->timestamp_ns = (int64_t)v;
        else header->duration_ps = (int64_t)v;
        return 1;
    }
    if ((field == 2 || field == 11) && wt == 2) {
        if (read_len(c, &sub) < 0) return -1;
        if (field == 2) header->name = sub;
        else header->display_name = sub;
        return 1;
    }
    return 0;
}

/* Steps through a line's top-level fields to its next event: 1 with `ev` its payload, 0 at the line's
 * end, -1 on malformed input. Header fields on the way go into `header`, unknown ones are skipped. */
static inline int next_event(Cursor *c, LineHeader *header, Cursor *ev) {
    while (c->p < c->end) {
        uint64_t field;
        int wt, got;
        if (read_tag(c, &field, &wt) < 0) return -1;
        got = read_header_field(c, field, wt, header);
        if (got < 0) return -1;
        if (got) continue;
        if (field == 4 && wt == 2) return read_len(c, ev) < 0 ? -1 : 1;
        if (skip_field(c, wt) < 0) return -1;
    }
    return 0;
}

/* A load's shared control words (an int64 buffer the caller owns): word 0 is set to non-zero to stop
 * every decode in flight (Cancel); word `slot` receives how many bytes of its line this call has
 * walked (progress within a long line). Checked every CONTROL_EVERY events: ~1 ms of decoding. */
#define CONTROL_EVERY 65536
typedef struct {
    volatile int64_t *words;
    Py_ssize_t slot;
} Control;

/* -5 when the caller asked to stop, else 0 (and the line's progress is published). */
static inline int check_control(const Control *control, Py_ssize_t count, const uint8_t *at,
                                const uint8_t *line_start) {
    if (!control->words || (count & (CONTROL_EVERY - 1))) return 0;
    if (control->words[0]) return -5;
    if (control->slot > 0) control->words[control->slot] = (int64_t)(at - line_start);
    return 0;
}

/* Counting pass: the line header, its events and the stats of every event (`every_event`) or of the
 * first event only, into *stat_count, without decoding the stats' contents (fill() and fill_regular()
 * validate those). Not reading inside the other events is scan_events()'s light count. */
static int count_line(Cursor c, LineHeader *header, int every_event, Py_ssize_t *stat_count,
                      const Control *control) {
    const uint8_t *line_start = c.p;
    Py_ssize_t event_count = 0;
    Cursor ev;
    int got;
    start_header(header, line_start);
    *stat_count = 0;
    while ((got = next_event(&c, header, &ev)) > 0) {
        if (event_count >= INT32_MAX) return -1;
        if (check_control(control, event_count, c.p, line_start) < 0) return -5;
        while ((every_event || event_count == 0) && ev.p < ev.end) {
            uint64_t f;
            int w;
            if (read_tag(&ev, &f, &w) < 0) return -1;
            if (w == 0) {
                if (skip_varint(&ev) < 0) return -1;
            } else {
                if (f == 4 && w == 2) (*stat_count)++;
                if (skip_field(&ev, w) < 0) return -1;
            }
        }
        event_count++;
    }
    if (got < 0) return -1;
    header->events = event_count;
    header->stats = every_event ? *stat_count : -1; /* -1: not counted */
    header->strings = 0; /* known only after fill() */
    return 0;
}

/* Walks a whole line, filling the columns. */
static int walk_line(Cursor c, LineHeader *header, EventColumns *events, StatColumns *stats,
                     Py_ssize_t event_capacity, const Control *control) {
    const uint8_t *line_start = c.p;
    Py_ssize_t event_count = 0, stat_count = 0, str_count = 0;
    Cursor ev;
    int got;
    start_header(header, line_start);
    while ((got = next_event(&c, header, &ev)) > 0) {
        if (event_count >= INT32_MAX) return -1;
        if (events && event_count >= event_capacity) return -1;
        if (check_control(control, event_count, c.p, line_start) < 0) return -5;
        if (decode_event(ev, line_start, c.end, events, event_count, stats, &stat_count, &str_count) < 0)
            return -1;
        event_count++;
    }
    if (got < 0) return -1;
    header->events = event_count;
    header->stats = stat_count;
    header->strings = str_count;
    return 0;
}

static PyObject *header_tuple(const LineHeader *h, const uint8_t *start) {
    return Py_BuildValue("LLLLy#y#nnn", (long long)h->id, (long long)h->display_id,
                         (long long)h->timestamp_ns, (long long)h->duration_ps,
                         (const char *)h->name.p, (Py_ssize_t)(h->name.end - h->name.p),
                         (const char *)h->display_name.p,
                         (Py_ssize_t)(h->display_name.end - h->display_name.p), h->events,
                         h->stats, h->strings);
}

/* scan(line) -> (id, display_id, timestamp_ns, duration_ps, name, display_name, n_events, n_stats,
 *               0); the string count is fill()'s to find: at most n_stats. */
/* Reads the optional control buffer (see Control); 0 on success. */
static int open_control(Py_buffer *buffer, Py_ssize_t slot, Control *control) {
    control->words = NULL;
    control->slot = 0;
    if (!buffer->obj) return 0;
    if (buffer->len < 8 || slot < 0 || slot >= buffer->len / 8) {
        PyErr_SetString(PyExc_ValueError, "control buffer too small");
        return -1;
    }
    control->words = (volatile int64_t *)buffer->buf;
    control->slot = slot;
    return 0;
}

static void set_decode_error(int rc) {
    if (rc == -5) PyErr_SetString(PyExc_ValueError, "stopped");
    else if (rc == -2) PyErr_SetString(PyExc_ValueError, "column sizes do not match the line");
    else PyErr_SetString(PyExc_ValueError, "malformed XLine");
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer line, control_buffer = {0};
    Py_ssize_t slot = 0;
    LineHeader header;
    Control control;
    if (!PyArg_ParseTuple(args, "y*|w*n", &line, &control_buffer, &slot)) return NULL;
    PyObject *result = NULL;
    if (open_control(&control_buffer, slot, &control) == 0) {
        control.slot = 0; /* the counting pass does not report progress */
        Cursor c = {(const uint8_t *)line.buf, (const uint8_t *)line.buf + line.len};
        Py_ssize_t stats;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = count_line(c, &header, 1, &stats, &control);
        Py_END_ALLOW_THREADS
        if (rc < 0) set_decode_error(rc);
        else result = header_tuple(&header, c.p);
    }
    PyBuffer_Release(&line);
    if (control_buffer.obj) PyBuffer_Release(&control_buffer);
    return result;
}

static int check_buffer(Py_buffer *b, Py_ssize_t count, Py_ssize_t item) {
    if (b->len < count * item) {
        PyErr_SetString(PyExc_ValueError, "column buffer too small");
        return -1;
    }
    return 0;
}

/* fill(line, n_events, n_stats, str_capacity, ev_meta, ev_offset, ev_duration,
 *      st_meta, st_kind, st_value, st_event, str_offset, str_length, str_hash) -> n_strings
 * One walk: every write is checked against the sizes the caller allocated
 * (from scan()); the event and stat counts found must equal them exactly. */
static PyObject *fill(PyObject *self, PyObject *args) {
    Py_buffer line, b[10], control_buffer = {0};
    Py_ssize_t n_events, n_stats, str_capacity, slot = 0;
    Control control;
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*nnnw*w*w*w*w*w*w*w*w*w*|w*n", &line, &n_events, &n_stats, &str_capacity,
                          &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7], &b[8], &b[9],
                          &control_buffer, &slot))
        return NULL;
    PyObject *result = NULL;
    static const Py_ssize_t ev_items[3] = {8, 8, 8};
    static const Py_ssize_t st_items[4] = {8, 1, 8, 4};
    static const Py_ssize_t str_items[3] = {8, 8, 8};
    int ok = n_events >= 0 && n_stats >= 0 && str_capacity >= 0;
    if (!ok) PyErr_SetString(PyExc_ValueError, "negative column size");
    if (ok) ok = open_control(&control_buffer, slot, &control) == 0;
    for (int i = 0; i < 3 && ok; i++) ok = check_buffer(&b[i], n_events, ev_items[i]) == 0;
    for (int i = 0; i < 4 && ok; i++) ok = check_buffer(&b[3 + i], n_stats, st_items[i]) == 0;
    for (int i = 0; i < 3 && ok; i++) ok = check_buffer(&b[7 + i], str_capacity, str_items[i]) == 0;
    if (ok) {
        EventColumns events = {b[0].buf, b[1].buf, b[2].buf};
        StatColumns stats = {b[3].buf, b[4].buf, b[5].buf, b[6].buf, n_stats,
                             b[7].buf, b[8].buf, b[9].buf, str_capacity};
        LineHeader header;
        Cursor c = {(const uint8_t *)line.buf, (const uint8_t *)line.buf + line.len};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = walk_line(c, &header, &events, &stats, n_events, &control);
        if (rc == 0 && (header.events != n_events || header.stats != n_stats)) rc = -2;
        Py_END_ALLOW_THREADS
        if (rc < 0) set_decode_error(rc);
        else result = PyLong_FromSsize_t(header.strings);
    }
    PyBuffer_Release(&line);
    if (control_buffer.obj) PyBuffer_Release(&control_buffer);
    for (int i = 0; i < 10; i++)
        if (b[i].obj) PyBuffer_Release(&b[i]);
    return result;
}

/* The most stats per event the regular path takes (a line's stats are then value columns). */
#define REGULAR_MAX_STATS 8
#define IRREGULAR -7

/* Decodes one stat of a regular line: its id and numeric value; IRREGULAR for any other value kind. */
static int regular_stat(Cursor c, const uint8_t *line_end, int64_t *meta, int64_t *value, int *kind) {
    StatFields stat;
    if (read_stat(c, line_end, &stat) < 0) return -1;
    if (stat.kind != KIND_DOUBLE && stat.kind != KIND_UINT && stat.kind != KIND_INT)
        return IRREGULAR; /* no value, strings, bytes, refs: the general path */
    *meta = stat.meta;
    *value = (int64_t)stat.number;
    *kind = stat.kind;
    return 0;
}

/* Walks a line whose every event carries the same k numeric stats in the same id order, writing
 * stat j of event i to values[j * n_events + i]; IRREGULAR at the first event that does not. */
static int walk_regular(Cursor c, EventColumns *events, Py_ssize_t n_events, Py_ssize_t k, int64_t *values,
                        int64_t *ids, uint16_t *kinds, const Control *control) {
    const uint8_t *line_start = c.p;
    LineHeader header;
    Py_ssize_t event_count = 0;
    Cursor ev;
    int more;
    start_header(&header, line_start);
    while ((more = next_event(&c, &header, &ev)) > 0) {
        if (event_count >= n_events) return -2;
        if (check_control(control, event_count, c.p, line_start) < 0) return -5;
        EventScalars scalars = {0, 0, 0};
        Py_ssize_t stat = 0;
        while (ev.p < ev.end) {
            uint64_t f;
            int w, got;
            Cursor sub;
            if (read_tag(&ev, &f, &w) < 0) return -1;
            got = read_event_scalar(&ev, c.end, f, w, &scalars);
            if (got < 0) return -1;
            if (got) continue;
            if (f == 4 && w == 2) {
                int64_t stat_meta, value = 0;
                int kind, rc;
                if (read_len(&ev, &sub) < 0) return -1;
                if (stat >= k) return IRREGULAR;
                rc = regular_stat(sub, c.end, &stat_meta, &value, &kind);
                if (rc < 0) return rc;
                if (event_count == 0) {
                    for (Py_ssize_t j = 0; j < stat; j++)
                        if (ids[j] == stat_meta) return IRREGULAR; /* one id twice in an event */
                    ids[stat] = stat_meta;
                } else if (ids[stat] != stat_meta) {
                    return IRREGULAR;
                }
                values[stat * n_events + event_count] = value;
                kinds[stat] |= (uint16_t)(1u << kind);
                stat++;
            } else if (skip_field(&ev, w) < 0) {
                return -1;
            }
        }
        if (stat != k) return IRREGULAR;
        write_event(events, event_count, &scalars);
        event_count++;
    }
    if (more < 0) return -1;
    return event_count == n_events ? 0 : -2;
}

/* scan_events(line, control=None) -> (header, first_event_stats)
 * scan() without reading inside the events (only their lengths, and the first event's stats): the
 * header's n_stats is -1. Why: for the common regular line (see fill_regular) the stats are then
 * first_event_stats per event, which fill_regular checks on every event, so the full counting pass
 * (~35 ns an event, a quarter of a big file's decode) is only needed for lines that are not. */
static PyObject *scan_events(PyObject *self, PyObject *args) {
    Py_buffer line, control_buffer = {0};
    LineHeader header;
    Control control;
    Py_ssize_t first_event_stats = 0;
    if (!PyArg_ParseTuple(args, "y*|w*", &line, &control_buffer)) return NULL;
    PyObject *result = NULL;
    if (open_control(&control_buffer, 0, &control) == 0) {
        Cursor c = {(const uint8_t *)line.buf, (const uint8_t *)line.buf + line.len};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = count_line(c, &header, 0, &first_event_stats, &control);
        Py_END_ALLOW_THREADS
        if (rc < 0) set_decode_error(rc);
        else result = Py_BuildValue("Nn", header_tuple(&header, c.p), first_event_stats);
    }
    PyBuffer_Release(&line);
    if (control_buffer.obj) PyBuffer_Release(&control_buffer);
    return result;
}

/* fill_regular(line, n_events, k, ev_meta, ev_offset, ev_duration, values, control=None, slot=0)
 *     -> ([stat ids], [kinds present, as bits]) or None
 * fill() for the common line whose every event carries the same k numeric stats in the same order
 * (device_offset_ps and device_duration_ps on every XLA op): each stat is written straight into its
 * own value column (values: k * n_events int64, column after column) instead of as flat records
 * (id, kind, value, event) that numpy then splits: 8 bytes a stat instead of 21, and no grouping
 * pass. None when the line is not that regular: the caller then decodes it with fill(). */
static PyObject *fill_regular(PyObject *self, PyObject *args) {
    Py_buffer line, b[4], control_buffer = {0};
    Py_ssize_t n_events, k, slot = 0;
    Control control;
    memset(b, 0, sizeof(b));
    if (!PyArg_ParseTuple(args, "y*nnw*w*w*w*|w*n", &line, &n_events, &k, &b[0], &b[1], &b[2], &b[3],
                          &control_buffer, &slot))
        return NULL;
    PyObject *result = NULL;
    int ok = n_events > 0 && k > 0 && k <= REGULAR_MAX_STATS;
    if (!ok) PyErr_SetString(PyExc_ValueError, "a regular line has events and 1 to 8 stats on each");
    if (ok) ok = open_control(&control_buffer, slot, &control) == 0;
    for (int i = 0; i < 3 && ok; i++) ok = check_buffer(&b[i], n_events, 8) == 0;
    if (ok) ok = check_buffer(&b[3], n_events * k, 8) == 0;
    if (ok) {
        EventColumns events = {b[0].buf, b[1].buf, b[2].buf};
        int64_t ids[REGULAR_MAX_STATS] = {0};
        uint16_t kinds[REGULAR_MAX_STATS] = {0};
        Cursor c = {(const uint8_t *)line.buf, (const uint8_t *)line.buf + line.len};
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = walk_regular(c, &events, n_events, k, (int64_t *)b[3].buf, ids, kinds, &control);
        Py_END_ALLOW_THREADS
        if (rc == IRREGULAR) {
            result = Py_None;
            Py_INCREF(result);
        } else if (rc < 0) {
            set_decode_error(rc);
        } else {
            PyObject *id_list = PyList_New(k), *kind_list = PyList_New(k);
            for (Py_ssize_t j = 0; id_list && kind_list && j < k; j++) {
                PyList_SET_ITEM(id_list, j, PyLong_FromLongLong(ids[j]));
                PyList_SET_ITEM(kind_list, j, PyLong_FromLong(kinds[j]));
            }
            if (id_list && kind_list) result = Py_BuildValue("NN", id_list, kind_list);
            else {
                Py_XDECREF(id_list);
                Py_XDECREF(kind_list);
            }
        }
    }
    PyBuffer_Release(&line);
    if (control_buffer.obj) PyBuffer_Release(&control_buffer);
    for (int i = 0; i < 4; i++)
        if (b[i].obj) PyBuffer_Release(&b[i]);
    return result;
}

/* split_message(buffer, field_number) -> (rest: bytes, spans: list[(offset, length)])
 * Walks one serialized message's top-level fields. Every length-delimited
 * occurrence of `field_number` becomes a span (payload offset and length,
 * relative to the buffer); all other fields are copied, in order, into
 * `rest`, which protobuf can then parse as the same message without them. */
static PyObject *split_message(PyObject *self, PyObject *args) {
    Py_buffer buf;
    unsigned long long wanted;
    if (!PyArg_ParseTuple(args, "y*K", &buf, &wanted)) return NULL;
    const uint8_t *start = (const uint8_t *)buf.buf;
    Cursor c = {start, start + buf.len};
    PyObject *spans = PyList_New(0);
    /* `rest` grows as needed: it is small (metadata, names), while the buffer may be a whole
     * multi-gigabyte file whose size must not be allocated just to hold it. */
    Py_ssize_t rest_capacity = 4096, rest_len = 0;
    uint8_t *rest = PyMem_Malloc((size_t)rest_capacity);
    int rc = (spans && rest) ? 0 : -3;
    while (rc == 0 && c.p < c.end) {
        const uint8_t *field_start = c.p;
        uint64_t field;
        int wt;
        Cursor sub;
        if (read_tag(&c, &field, &wt) < 0) { rc = -1; break; }
        if (field == wanted && wt == 2) {
            if (read_len(&c, &sub) < 0) { rc = -1; break; }
            PyObject *span = Py_BuildValue("nn", (Py_ssize_t)(sub.p - start), (Py_ssize_t)(sub.end - sub.p));
            if (!span || PyList_Append(spans, span) < 0) { Py_XDECREF(span); rc = -3; break; }
            Py_DECREF(span);
        } else {
            if (skip_field(&c, wt) < 0) { rc = -1; break; }
            Py_ssize_t size = c.p - field_start;
            if (rest_len + size > rest_capacity) {
                Py_ssize_t wanted = rest_capacity;
                while (wanted < rest_len + size) wanted *= 2;
                uint8_t *grown = PyMem_Realloc(rest, (size_t)wanted);
                if (!grown) { rc = -3; break; }
                rest = grown;
                rest_capacity = wanted;
            }
            memcpy(rest + rest_len, field_start, (size_t)size);
            rest_len += size;
        }
    }
    PyObject *result = NULL;
    if (rc == 0) {
        PyObject *rest_bytes = PyBytes_FromStringAndSize((const char *)rest, rest_len);
        if (rest_bytes) result = Py_BuildValue("NO", rest_bytes, spans);
    } else if (rc == -1) {
        PyErr_SetString(PyExc_ValueError, "malformed message");
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    Py_XDECREF(spans);
    PyMem_Free(rest);
    PyBuffer_Release(&buf);
    return result;
}

/* message_fields(buffer, start, stop, wanted) -> list[int]
 * Walks the top-level fields of the message in buffer[start:stop] and reports those whose number
 * has a nonzero byte in `wanted` (indexed by field number; numbers past its end are not wanted), as
 * a flat list of triples (tag, a, b): a varint (wire type 0) as (tag, value, 0), a length-delimited
 * field (wire type 2) as (tag, payload start, payload stop), offsets in the whole buffer. Other
 * fields, and wanted ones of the fixed-size wire types, are stepped over. Why: the HLO protos'
 * reader (wire.py) reads a few fields of messages that hold many (an instruction has dozens);
 * walking them here costs a few nanoseconds a field instead of a Python loop's hundreds. */
static PyObject *message_fields(PyObject *self, PyObject *args) {
    Py_buffer buf, want;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*nny*", &buf, &start, &stop, &want)) return NULL;
    PyObject *out = NULL;
    if (start < 0 || stop < start || stop > buf.len) {
        PyErr_SetString(PyExc_ValueError, "the span is not inside the buffer");
        goto done;
    }
    const uint8_t *base = (const uint8_t *)buf.buf;
    const uint8_t *wanted = (const uint8_t *)want.buf;
    Cursor c = {base + start, base + stop};
    out = PyList_New(0);
    while (out && c.p < c.end) {
        uint64_t field, value;
        int wt;
        Cursor sub;
        PyObject *a = NULL, *b = NULL, *tag = NULL;
        if (read_tag(&c, &field, &wt) < 0) goto malformed;
        if (field >= (uint64_t)want.len || !wanted[field] || (wt != 0 && wt != 2)) {
            if (skip_field(&c, wt) < 0) goto malformed;
            continue;
        }
        if (wt == 0) {
            if (read_varint(&c, &value) < 0) goto malformed;
            a = PyLong_FromUnsignedLongLong(value);
            b = PyLong_FromLong(0);
        } else {
            if (read_len(&c, &sub) < 0) goto malformed;
            a = PyLong_FromSsize_t(sub.p - base);
            b = PyLong_FromSsize_t(sub.end - base);
        }
        tag = PyLong_FromUnsignedLongLong(field << 3 | (uint64_t)wt);
        if (!a || !b || !tag || PyList_Append(out, tag) < 0 || PyList_Append(out, a) < 0 ||
            PyList_Append(out, b) < 0) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_XDECREF(tag);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(a);
        Py_DECREF(b);
        Py_DECREF(tag);
    }
    goto done;
malformed:
    Py_CLEAR(out);
    PyErr_SetString(PyExc_ValueError, "malformed message");
done:
    PyBuffer_Release(&buf);
    PyBuffer_Release(&want);
    return out;
}

/* Reads a varint for intact_prefix(): 0 when read, 1 when the buffer ends inside it, -1 when it
 * overflows 64 bits (corruption, not a cut). */
static int read_varint_or_end(Cursor *c, uint64_t *out) {
    const uint8_t *p = c->p;
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p >= c->end) return 1;
        uint8_t byte = *p++;
        if (shift == 63 && (byte & 0x7e)) return -1;
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            c->p = p;
            return 0;
        }
    }
    return -1;
}

/* intact_prefix(buffer) -> (length, last_field, cut_field, cut_offset, cut_declared)
 * Why: a file cut short (a killed writer, a full disk, a partial copy) ends
 * in the middle of some field; everything before that field is a valid
 * message of the same type. Walks the buffer's top-level fields without
 * reading their contents: `length` is where the last complete field ends
 * (the whole buffer when nothing is cut) and `last_field` its number (0 when
 * none). When a field runs past the end, `cut_field` is its number (-1 when
 * the cut falls inside its tag), and for a length-delimited one whose length
 * could be read, `cut_offset` is where its payload starts and `cut_declared`
 * the length it claims (else -1 both). Damage that no cut explains (a bad
 * wire type, field 0, an overlong varint) raises ValueError. */
static PyObject *intact_prefix(PyObject *self, PyObject *args) {
    Py_buffer buf;
    if (!PyArg_ParseTuple(args, "y*", &buf)) return NULL;
    const uint8_t *start = (const uint8_t *)buf.buf;
    Cursor c = {start, start + buf.len};
    long long last_field = 0, cut_field = -1, cut_offset = -1, cut_declared = -1;
    Py_ssize_t length = buf.len;
    int malformed = 0;
    Py_BEGIN_ALLOW_THREADS
    while (c.p < c.end) {
        const uint8_t *field_start = c.p;
        uint64_t tag, value;
        int rc = read_varint_or_end(&c, &tag);
        if (rc < 0 || (rc == 0 && ((tag >> 3) == 0 || (tag & 7) == 3 || (tag & 7) == 4 || (tag & 7) > 5))) {
            malformed = 1;
            break;
        }
        if (rc > 0) {
            length = field_start - start;
            break;
        }
        int wire_type = (int)(tag & 7);
        long long field = (long long)(tag >> 3);
        int cut = 0;
        if (wire_type == 0) {
            rc = read_varint_or_end(&c, &value);
            if (rc < 0) { malformed = 1; break; }
            cut = rc > 0;
        } else if (wire_type == 1 || wire_type == 5) {
            Py_ssize_t size = wire_type == 1 ? 8 : 4;
            if (c.end - c.p < size) cut = 1;
            else c.p += size;
        } else { /* wire type 2 */
            rc = read_varint_or_end(&c, &value);
            if (rc < 0) { malformed = 1; break; }
            if (rc > 0) {
                cut = 1;
            } else if (value > (uint64_t)(c.end - c.p)) {
                cut = 1;
                cut_offset = c.p - start;
                cut_declared = value > (uint64_t)LLONG_MAX ? LLONG_MAX : (long long)value;
            } else {
                c.p += value;
            }
        }
        if (cut) {
            length = field_start - start;
            cut_field = field;
            break;
        }
        last_field = field;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&buf);
    if (malformed) {
        PyErr_SetString(PyExc_ValueError, "malformed message");
        return NULL;
    }
    return Py_BuildValue("nLLLL", length, last_field, cut_field, cut_offset, cut_declared);
}

/* every_event_has_each(st_meta, st_event, k) -> bool: whether a line's flat stat records are k per
 * event, in the same id order on every event (record i belongs to event i / k and has the id of
 * record i % k). Why: that is how real writers emit per-op stats (device_offset_ps and
 * device_duration_ps on every XLA op), and then each stat is a strided view of the records: no
 * index arrays, row lists or masks, whose fresh pages cost more than the decode on big lines. */
static PyObject *every_event_has_each(PyObject *self, PyObject *args) {
    Py_buffer m, e;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*y*n", &m, &e, &k)) return NULL;
    Py_ssize_t n = m.len / 8;
    int regular = k > 0 && e.len / 4 == n && n % k == 0;
    if (regular) {
        const int64_t *meta = m.buf;
        const int32_t *event = e.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0, owner = 0, j = 0; i < n; i++) {
            if (event[i] != owner || meta[i] != meta[j]) {
                regular = 0;
                break;
            }
            if (++j == k) {
                j = 0;
                owner++;
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&m);
    PyBuffer_Release(&e);
    return PyBool_FromLong(regular);
}

/* Stat ids at or above this bound are grouped by numpy instead (a counts table of this many
 * entries per line; real writers number stat metadata from 1 upwards, a few dozen at most). */
#define GROUP_ID_BOUND 65536

/* group_by_id(st_meta, st_kind, st_value, st_event, out_kind, out_value, out_event)
 *     -> [(meta_id, start, stop, kinds_present), ...] or None
 * Why: a line's stat records come event by event, each event's stats interleaved; the model wants
 * one column per stat. A stable counting sort in one pass (ids are small) puts each id's records
 * together, in event order, into the out_* columns, and notes which value kinds each group holds
 * (bit k set when kind k occurs), so the caller picks a column type without scanning the records
 * again. numpy needs a sort and three gathers for the same: ~4x the time on a real JAX CPU
 * profile's 2.3M records. None when an id lies outside [0, GROUP_ID_BOUND). */
static PyObject *group_by_id(PyObject *self, PyObject *args) {
    Py_buffer m, k, v, e, ok, ov, oe;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*w*w*", &m, &k, &v, &e, &ok, &ov, &oe)) return NULL;
    Py_ssize_t n = m.len / 8;
    PyObject *result = NULL;
    if (k.len != n || v.len / 8 != n || e.len / 4 != n || ok.len < n || ov.len / 8 < n || oe.len / 4 < n) {
        PyErr_SetString(PyExc_ValueError, "column lengths differ");
        goto done;
    }
    const int64_t *meta = m.buf, *value = v.buf;
    const uint8_t *kind = k.buf;
    const int32_t *event = e.buf;
    uint8_t *out_kind = ok.buf;
    int64_t *out_value = ov.buf;
    int32_t *out_event = oe.buf;
    int in_bounds = 1, failed = 0;
    int64_t high = -1;
    Py_ssize_t *start = NULL;
    uint16_t *kinds = NULL;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if ((uint64_t)meta[i] >= GROUP_ID_BOUND) {
            in_bounds = 0;
            break;
        }
        if (meta[i] > high) high = meta[i];
    }
    if (in_bounds) { /* tables sized to the highest id: small lines cost small tables */
        start = PyMem_RawCalloc((size_t)high + 2, sizeof(Py_ssize_t));
        kinds = PyMem_RawCalloc((size_t)high + 2, sizeof(uint16_t));
        failed = !start || !kinds;
    }
    if (in_bounds && !failed) {
        for (Py_ssize_t i = 0; i < n; i++) {
            start[meta[i] + 1]++;
            kinds[meta[i]] |= (uint16_t)(1u << (kind[i] & 15));
        }
        for (int64_t id = 0; id <= high; id++) start[id + 1] += start[id];
        /* start[id] is now where id's records begin; advance it as they are placed. */
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t at = start[meta[i]]++;
            out_kind[at] = kind[i];
            out_value[at] = value[i];
            out_event[at] = event[i];
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
    } else if (!in_bounds) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        /* After placing, start[id] is where id's records end, and the previous id's end is its start. */
        result = PyList_New(0);
        Py_ssize_t begin = 0;
        for (int64_t id = 0; result && id <= high; id++) {
            Py_ssize_t end = start[id];
            if (end == begin) continue;
            PyObject *group = Py_BuildValue("Lnni", (long long)id, begin, end, (int)kinds[id]);
            if (!group || PyList_Append(result, group) < 0) Py_CLEAR(result);
            Py_XDECREF(group);
            begin = end;
        }
    }
    PyMem_RawFree(start);
    PyMem_RawFree(kinds);
done:
    PyBuffer_Release(&m);
    PyBuffer_Release(&k);
    PyBuffer_Release(&v);
    PyBuffer_Release(&e);
    PyBuffer_Release(&ok);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&oe);
    return result;
}

/* intern_keys(keys, out_inverse) -> [first record of each distinct key, in order of first appearance]
 * Why: a string stat's records are keyed by a 64-bit hash of their text; only the distinct ones
 * become Python strings. An open-addressing table that grows with the distinct keys does in one
 * pass what np.unique does with a sort (a real JAX CPU line's 570k source-location records: ~35 ms
 * -> a few). out_inverse (int32, one per key) receives each record's distinct-key number. */
static inline size_t key_slot(uint64_t key, size_t mask) {
    return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & mask; /* Fibonacci hashing */
}

static PyObject *intern_keys(PyObject *self, PyObject *args) {
    Py_buffer kb, ib;
    if (!PyArg_ParseTuple(args, "y*w*", &kb, &ib)) return NULL;
    Py_ssize_t n = kb.len / 8;
    PyObject *result = NULL;
    if (ib.len / 4 < n || n >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "column lengths differ");
        goto done;
    }
    const uint64_t *keys = kb.buf;
    int32_t *inverse = ib.buf;
    /* Slots hold a distinct key's number + 1 (0: empty); the table stays at most half full. */
    size_t capacity = 1024, distinct = 0, firsts_capacity = 256;
    int32_t *slots = PyMem_RawCalloc(capacity, sizeof(int32_t));
    Py_ssize_t *firsts = PyMem_RawMalloc(firsts_capacity * sizeof(Py_ssize_t)); /* per distinct key */
    int failed = !slots || !firsts;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !failed; i++) {
        uint64_t key = keys[i];
        size_t at = key_slot(key, capacity - 1);
        while (slots[at] && keys[firsts[slots[at] - 1]] != key) at = (at + 1) & (capacity - 1);
        if (slots[at]) {
            inverse[i] = slots[at] - 1;
            continue;
        }
        if (distinct == firsts_capacity) {
            Py_ssize_t *grown = PyMem_RawRealloc(firsts, 2 * firsts_capacity * sizeof(Py_ssize_t));
            if (!grown) { failed = 1; break; }
            firsts = grown;
            firsts_capacity *= 2;
        }
        firsts[distinct] = i;
        inverse[i] = (int32_t)distinct;
        slots[at] = (int32_t)++distinct;
        if (2 * distinct > capacity) { /* double the table and place every distinct key again */
            size_t grown_capacity = 2 * capacity;
            int32_t *grown = PyMem_RawCalloc(grown_capacity, sizeof(int32_t));
            if (!grown) { failed = 1; break; }
            for (size_t d = 0; d < distinct; d++) {
                size_t to = key_slot(keys[firsts[d]], grown_capacity - 1);
                while (grown[to]) to = (to + 1) & (grown_capacity - 1);
                grown[to] = (int32_t)(d + 1);
            }
            PyMem_RawFree(slots);
            slots = grown;
            capacity = grown_capacity;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_NoMemory();
    } else {
        result = PyList_New((Py_ssize_t)distinct);
        for (size_t d = 0; result && d < distinct; d++) {
            PyObject *first = PyLong_FromSsize_t(firsts[d]);
            if (!first) Py_CLEAR(result);
            else PyList_SET_ITEM(result, (Py_ssize_t)d, first);
        }
    }
    PyMem_RawFree(slots);
    PyMem_RawFree(firsts);
done:
    PyBuffer_Release(&kb);
    PyBuffer_Release(&ib);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Read a serialized XLine's header and count its events and stats."},
    {"fill", fill, METH_VARARGS, "Decode a serialized XLine into preallocated column buffers."},
    {"scan_events", scan_events, METH_VARARGS,
     "scan() without reading inside the events: their number and the first event's stats."},
    {"fill_regular", fill_regular, METH_VARARGS,
     "fill() for a line whose events all carry the same numeric stats: one value column per stat."},
    {"split_message", split_message, METH_VARARGS,
     "Split a message into the spans of one length-delimited field and the bytes of all others."},
    {"message_fields", message_fields, METH_VARARGS,
     "The wanted top-level fields of a message: (tag, value, 0) per varint, (tag, start, stop) per length."},
    {"intact_prefix", intact_prefix, METH_VARARGS,
     "Where the last complete top-level field of a message ends, and which field the buffer cuts."},
    {"every_event_has_each", every_event_has_each, METH_VARARGS,
     "Whether a line's stat records are k per event in one id order."},
    {"group_by_id", group_by_id, METH_VARARGS,
     "Group a line's stat records by stat id (stable counting sort), noting each group's kinds."},
    {"intern_keys", intern_keys, METH_VARARGS,
     "Number the distinct 64-bit keys in order of first appearance; the first record of each."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_linedecode", NULL, -1, methods};

PyMODINIT_FUNC PyInit__linedecode(void) { return PyModule_Create(&module); }
