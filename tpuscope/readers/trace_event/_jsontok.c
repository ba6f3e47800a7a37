/*
 * Trace-event JSON (Chrome/Kineto/TSL) straight into columns: one pass over the bytes, no Python
 * object per record.
 *
 * Why C: the typed msgspec decode builds a Python object per record and per kept arg, then each
 * column is pulled out of them again (~5 us per record, ~3.8x the file in memory). Here a record
 * costs its bytes' scan: ts/dur/phase/thread/name/category land in growing column buffers, names
 * and categories are interned into string tables, kept args become (attribute, row, kind, value)
 * rows. The Python side (parse.py) does the rest with numpy, as it did after msgspec.
 *
 * The decoder accepts exactly what the typed msgspec decode accepts, or less: any input it is not
 * sure to read the same way (a field of an unexpected type, invalid UTF-8 anywhere, nesting deeper
 * than max_depth, a lone surrogate escape, a number beyond float64, a document cut short, a
 * duplicate `traceEvents`) makes it *decline* with a reason, and the caller reads the file through
 * the msgspec path with all its repairs. So on the inputs it takes, its columns are the msgspec
 * path's columns.
 *
 * Fed in pieces (a gzip stream's decompressed chunks): a record, or a top-level member, cut by the
 * end of a piece is parsed again from its start once more bytes came (the unparsed tail is kept);
 * a tail that still does not complete waits until it doubled, so a giant value costs O(n) overall.
 * feed() parses without the GIL (a Decoder is used by one thread at a time). Metadata records
 * (`M`), top-level members other than `traceEvents` and arg values that are not
 * strings or plain numbers are few: their JSON text is kept for the caller to decode with msgspec.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ---- growable byte buffers ---- */

typedef struct {
    uint8_t *data;
    Py_ssize_t len, cap;
} Buf;

static int buf_reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *data = (uint8_t *)PyMem_RawRealloc(b->data, (size_t)cap);
    if (!data) return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

static int buf_append(Buf *b, const void *p, Py_ssize_t n) {
    if (buf_reserve(b, n) < 0) return -1;
    if (n) memcpy(b->data + b->len, p, (size_t)n);
    b->len += n;
    return 0;
}

#define BUF_PUSH(b, type, value)                                                   \
    do {                                                                           \
        type v_ = (value);                                                         \
        if (buf_append((b), &v_, (Py_ssize_t)sizeof(type)) < 0) return RES_NOMEM;   \
    } while (0)

static void buf_free(Buf *b) {
    PyMem_RawFree(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- interning: distinct byte strings -> dense ids ---- */

typedef struct {
    Buf arena;    /* the keys' bytes, one after another */
    Buf offsets;  /* int64 start of each key in arena, plus the end */
    Buf hashes;   /* uint64 per key */
    uint32_t *slots; /* open addressing: id + 1, 0 empty */
    Py_ssize_t mask;
    Py_ssize_t count;
} Table;

static uint64_t hash_bytes(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)n);
    h = (h ^ w) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
    return h;
}

static int table_init(Table *t) {
    memset(t, 0, sizeof(*t));
    t->mask = 1023;
    t->slots = (uint32_t *)PyMem_RawCalloc((size_t)(t->mask + 1), sizeof(uint32_t));
    if (!t->slots) return -1;
    int64_t zero = 0;
    return buf_append(&t->offsets, &zero, sizeof zero);
}

static void table_free(Table *t) {
    buf_free(&t->arena);
    buf_free(&t->offsets);
    buf_free(&t->hashes);
    PyMem_RawFree(t->slots);
    t->slots = NULL;
}

static int table_grow(Table *t) {
    Py_ssize_t mask = t->mask * 2 + 1;
    uint32_t *slots = (uint32_t *)PyMem_RawCalloc((size_t)(mask + 1), sizeof(uint32_t));
    if (!slots) return -1;
    const uint64_t *hashes = (const uint64_t *)t->hashes.data;
    for (Py_ssize_t id = 0; id < t->count; id++) {
        Py_ssize_t at = (Py_ssize_t)(hashes[id] & (uint64_t)mask);
        while (slots[at]) at = (at + 1) & mask;
        slots[at] = (uint32_t)(id + 1);
    }
    PyMem_RawFree(t->slots);
    t->slots = slots;
    t->mask = mask;
    return 0;
}

/* The key's id (a new one if unseen); -1 out of memory. */
static int64_t table_intern(Table *t, const uint8_t *p, Py_ssize_t n) {
    uint64_t h = hash_bytes(p, n);
    Py_ssize_t at = (Py_ssize_t)(h & (uint64_t)t->mask);
    const int64_t *offsets = (const int64_t *)t->offsets.data;
    const uint64_t *hashes = (const uint64_t *)t->hashes.data;
    for (;;) {
        uint32_t slot = t->slots[at];
        if (!slot) break;
        Py_ssize_t id = slot - 1;
        if (hashes[id] == h && offsets[id + 1] - offsets[id] == n &&
            memcmp(t->arena.data + offsets[id], p, (size_t)n) == 0)
            return id;
        at = (at + 1) & t->mask;
    }
    if (t->count >= 0x7FFFFFFF) return -1;
    Py_ssize_t id = t->count++;
    if (buf_append(&t->arena, p, n) < 0) return -1;
    int64_t end = (int64_t)t->arena.len;
    if (buf_append(&t->offsets, &end, sizeof end) < 0) return -1;
    if (buf_append(&t->hashes, &h, sizeof h) < 0) return -1;
    t->slots[at] = (uint32_t)(id + 1);
    if (t->count * 2 > t->mask && table_grow(t) < 0) return -1;
    return id;
}

/* ---- the decoder's state ---- */

enum { RES_OK = 0, RES_MORE = 1, RES_DECLINE = 2, RES_NOMEM = 3 };
enum { S_START, S_OBJ_FIRST, S_OBJ_NEXT, S_OBJ_KEY, S_REC_FIRST, S_REC_NEXT, S_DONE };
/* Phase codes, as parse.py's PHASE_* constants. */
enum { PH_OTHER = 0, PH_X = 1, PH_INSTANT = 2, PH_META = 3, PH_FLOW_S = 4, PH_FLOW_T = 5, PH_FLOW_F = 6,
       PH_COUNTER = 7 };
/* Arg value kinds, as parse.py's ARG_* constants. */
enum { K_ABSENT = 0, K_INT = 1, K_FLOAT = 2, K_STR = 3, K_JSON = 4 };
/* A pid, tid or flow id: tag, then 8 bytes (an int64, or an id into `values`). */
enum { TAG_NONE = 0, TAG_INT = 1, TAG_STR = 2 };

#define MAX_ARG_KEYS 64
#define KEY_LENGTHS 64

typedef struct {
    uint8_t kind;
    int64_t value;          /* int64, double bits or string id */
    const uint8_t *span;    /* K_JSON: the value's text */
    Py_ssize_t span_len;
} ArgSlot;

typedef struct {
    PyObject_HEAD
    int state;
    int array_form;
    int top_has_events;
    int max_depth;
    Py_ssize_t n_arg_keys;   /* the first n_event_args are kept on events */
    Py_ssize_t n_event_args;
    Buf arg_keys_arena;
    Py_ssize_t arg_key_start[MAX_ARG_KEYS + 1];
    int key_by_length[KEY_LENGTHS];  /* the first arg key of each length, -1 none */
    int key_next[MAX_ARG_KEYS];      /* the next key of the same length */
    const char *decline;     /* the reason, once declined */
    Buf carry;               /* unparsed tail of the previous piece */
    Py_ssize_t need;         /* the tail is parsed again once it holds this many bytes */
    Buf scratch;             /* decoded escaped strings */
    Table names, values, arg_strings, threads, flow_keys;
    /* events */
    Buf ev_phase, ev_name, ev_cat, ev_thread, ev_ts, ev_dur;
    /* flows */
    Buf fl_phase, fl_cat, fl_thread, fl_ts, fl_key, fl_bp;
    /* kept args of events */
    Buf ar_row[MAX_ARG_KEYS], ar_kind[MAX_ARG_KEYS], ar_value[MAX_ARG_KEYS]; /* per kept arg */
    Buf json_arena, json_offsets;   /* K_JSON values' text */
    Buf meta_arena, meta_offsets;   /* M records' text */
    Buf top_arena, top_offsets;     /* top-level members but traceEvents */
    int64_t counters, records;
    ArgSlot slots[MAX_ARG_KEYS];
    int ready;  /* __init__ ran (once): the tables exist */
    int64_t last_thread, last_pid, last_tid; /* the last record's thread, -1 none */
    uint8_t last_pid_tag, last_tid_tag;
} Decoder;

/* ---- lexing ---- */

/* 1: byte that ends a plain run inside a string (quote, backslash, control, non-ASCII). */
static uint8_t STRING_STOP[256];
static uint8_t IS_BLANK[256];

/* The first byte at or after p that ends a plain run of string bytes (8 at a time while none does). */
static inline const uint8_t *plain_run(const uint8_t *p, const uint8_t *end) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
        uint64_t stop = ((quote - ones) & ~quote) | ((slash - ones) & ~slash) | (w - ones * 0x20) | w;
        if (stop & highs) break;
        p += 8;
    }
    while (p < end && !STRING_STOP[*p]) p++;
    return p;
}

static inline const uint8_t *skip_blanks(const uint8_t *p, const uint8_t *end) {
    while (p < end && IS_BLANK[*p]) p++;
    return p;
}

/* Validates one UTF-8 sequence at p (p < end, *p >= 0x80); returns its length, 0 invalid, -1 cut. */
static int utf8_sequence(const uint8_t *p, const uint8_t *end) {
    uint8_t c = p[0];
    int n;
    uint32_t min, cp;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; min = 0x80; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; min = 0x800; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; min = 0x10000; cp = c & 0x07; }
    else return 0;
    for (int i = 1; i < n; i++) {
        if (p + i >= end) return -1;
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

static int hex4(const uint8_t *p, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static void put_utf8(Buf *b, uint32_t cp) {
    uint8_t *o = b->data + b->len;
    if (cp < 0x80) { o[0] = (uint8_t)cp; b->len += 1; }
    else if (cp < 0x800) { o[0] = (uint8_t)(0xC0 | cp >> 6); o[1] = (uint8_t)(0x80 | (cp & 0x3F)); b->len += 2; }
    else if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12); o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F)); b->len += 3;
    } else {
        o[0] = (uint8_t)(0xF0 | cp >> 18); o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (uint8_t)(0x80 | (cp & 0x3F)); b->len += 4;
    }
}

/*
 * A string at *pp (just after its opening quote). On RES_OK *pp is after the closing quote and
 * (*out, *out_len) its decoded UTF-8: in place when it has no escapes, else in d->scratch (valid
 * until the next decoded string). decode = 0: validated only.
 */
static int lex_string(Decoder *d, const uint8_t **pp, const uint8_t *end, int decode, const uint8_t **out,
                      Py_ssize_t *out_len) {
    const uint8_t *p = *pp, *start = p;
    for (;;) {
        p = plain_run(p, end);
        if (p >= end) return RES_MORE;
        uint8_t c = *p;
        if (c == '"') {
            *out = start;
            *out_len = p - start;
            *pp = p + 1;
            return RES_OK;
        }
        if (c == '\\') break;
        if (c < 0x20) { d->decline = "a string holds a control character"; return RES_DECLINE; }
        int n = utf8_sequence(p, end);
        if (n < 0) return RES_MORE;
        if (n == 0) { d->decline = "a string is not valid UTF-8"; return RES_DECLINE; }
        p += n;
    }
    /* Escapes: decoded into scratch (each escape's output is no longer than its text). */
    if (decode) {
        d->scratch.len = 0;
        if (buf_reserve(&d->scratch, (end - start) < 64 ? 64 : (p - start) + 64) < 0) return RES_NOMEM;
        if (buf_append(&d->scratch, start, p - start) < 0) return RES_NOMEM;
    }
    for (;;) {
        const uint8_t *run = p;
        p = plain_run(p, end);
        if (p >= end) return RES_MORE;
        if (decode && buf_append(&d->scratch, run, p - run) < 0) return RES_NOMEM;
        uint8_t c = *p;
        if (c == '"') {
            *pp = p + 1;
            if (decode) { *out = d->scratch.data; *out_len = d->scratch.len; }
            else { *out = start; *out_len = p - start; }
            return RES_OK;
        }
        if (c < 0x20) { d->decline = "a string holds a control character"; return RES_DECLINE; }
        if (c >= 0x80) {
            int n = utf8_sequence(p, end);
            if (n < 0) return RES_MORE;
            if (n == 0) { d->decline = "a string is not valid UTF-8"; return RES_DECLINE; }
            if (decode && buf_append(&d->scratch, p, n) < 0) return RES_NOMEM;
            p += n;
            continue;
        }
        /* backslash */
        if (p + 1 >= end) return RES_MORE;
        uint8_t e = p[1];
        uint8_t single = 0;
        switch (e) {
            case '"': single = '"'; break;
            case '\\': single = '\\'; break;
            case '/': single = '/'; break;
            case 'b': single = '\b'; break;
            case 'f': single = '\f'; break;
            case 'n': single = '\n'; break;
            case 'r': single = '\r'; break;
            case 't': single = '\t'; break;
            case 'u': break;
            default: d->decline = "a string holds an invalid escape"; return RES_DECLINE;
        }
        if (single) {
            if (decode && buf_append(&d->scratch, &single, 1) < 0) return RES_NOMEM;
            p += 2;
            continue;
        }
        if (p + 6 > end) return RES_MORE;
        uint32_t cp;
        if (hex4(p + 2, &cp) < 0) { d->decline = "a string holds an invalid escape"; return RES_DECLINE; }
        p += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) { d->decline = "a string holds a lone surrogate escape"; return RES_DECLINE; }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p + 6 > end) return RES_MORE;
            uint32_t low;
            if (p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &low) < 0 || low < 0xDC00 || low > 0xDFFF) {
                d->decline = "a string holds a lone surrogate escape";
                return RES_DECLINE;
            }
            p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        if (decode) {
            if (buf_reserve(&d->scratch, 4) < 0) return RES_NOMEM;
            put_utf8(&d->scratch, cp);
        }
    }
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/*
 * A number at *pp (RFC 8259 grammar). Sets *is_int (no fraction or exponent) and, for an integer
 * that fits int64, *as_int with *int_ok = 1; *as_double is its correctly rounded double (0 inf:
 * beyond float64). compute = 0: the grammar only.
 */
static int lex_number(Decoder *d, const uint8_t **pp, const uint8_t *end, int compute, int *is_int,
                      int *int_ok, int64_t *as_int, double *as_double) {
    const uint8_t *p = *pp, *start = p;
    int negative = 0;
    if (p < end && *p == '-') { negative = 1; p++; }
    if (p >= end) return RES_MORE;
    const uint8_t *digits = p;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (p < end && *p >= '0' && *p <= '9') p++; }
    else { d->decline = "a value is not valid JSON"; return RES_DECLINE; }
    Py_ssize_t int_digits = p - digits;
    int fraction = 0, exponent = 0;
    const uint8_t *frac_start = NULL, *frac_end = NULL;
    if (p < end && *p == '.') {
        fraction = 1;
        p++;
        frac_start = p;
        while (p < end && *p >= '0' && *p <= '9') p++;
        frac_end = p;
        if (p < end && frac_end == frac_start) { d->decline = "a number is not valid JSON"; return RES_DECLINE; }
    }
    int64_t exp_value = 0;
    int exp_overflow = 0;
    if (p < end && (*p == 'e' || *p == 'E')) {
        exponent = 1;
        p++;
        int exp_negative = 0;
        if (p < end && (*p == '+' || *p == '-')) { exp_negative = *p == '-'; p++; }
        const uint8_t *exp_start = p;
        while (p < end && *p >= '0' && *p <= '9') {
            if (exp_value < 100000) exp_value = exp_value * 10 + (*p - '0');
            else exp_overflow = 1;
            p++;
        }
        if (p < end && p == exp_start) { d->decline = "a number is not valid JSON"; return RES_DECLINE; }
        if (exp_negative) exp_value = -exp_value;
    }
    if (p >= end) return RES_MORE; /* the number may go on in the next piece */
    if (p < end && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' || *p == 'E' || *p == '+' || *p == '-')) {
        d->decline = "a number is not valid JSON";
        return RES_DECLINE;
    }
    *pp = p;
    *is_int = !fraction && !exponent;
    if (!compute) return RES_OK;
    /* The significant digits as an integer, while exact. */
    uint64_t mantissa = 0;
    int n_digits = 0, dropped = 0;
    for (const uint8_t *q = digits; q < digits + int_digits; q++) {
        if (n_digits < 19) { mantissa = mantissa * 10 + (uint64_t)(*q - '0'); if (mantissa) n_digits++; }
        else dropped++;
    }
    int64_t scale = dropped;
    if (fraction) {
        for (const uint8_t *q = frac_start; q < frac_end; q++) {
            if (n_digits < 19) {
                mantissa = mantissa * 10 + (uint64_t)(*q - '0');
                if (mantissa) n_digits++;
                scale--;
            } else if (*q != '0') dropped++;
        }
    }
    *int_ok = 0;
    if (*is_int && !dropped) {
        if (!negative && mantissa <= (uint64_t)INT64_MAX) { *as_int = (int64_t)mantissa; *int_ok = 1; }
        else if (negative && mantissa <= (uint64_t)INT64_MAX + 1) {
            *as_int = mantissa == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mantissa;
            *int_ok = 1;
        }
    }
    if (*is_int && *int_ok) {
        *as_double = (double)*as_int; /* round to nearest, as a correctly rounded decimal would; -0 is 0 */
        return RES_OK;
    }
    int64_t e10 = scale + exp_value;
    if (!dropped && !exp_overflow && mantissa <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        double v = (double)mantissa;
        v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
        *as_double = negative ? -v : v;
        return RES_OK;
    }
    /* The general case: CPython's correctly rounded, locale-independent conversion. */
    char local[64];
    Py_ssize_t n = p - start;
    char *text = local;
    if (n >= (Py_ssize_t)sizeof local) {
        text = (char *)PyMem_RawMalloc((size_t)n + 1);
        if (!text) return RES_NOMEM;
    }
    memcpy(text, start, (size_t)n);
    text[n] = 0;
    PyGILState_STATE gil = PyGILState_Ensure(); /* feed() parses without the GIL */
    double v = PyOS_string_to_double(text, NULL, NULL);
    int failed = v == -1.0 && PyErr_Occurred();
    if (failed) PyErr_Clear();
    PyGILState_Release(gil);
    if (text != local) PyMem_RawFree(text);
    if (failed) { d->decline = "a number does not convert"; return RES_DECLINE; }
    *as_double = v;
    return RES_OK;
}

static int lex_literal(Decoder *d, const uint8_t **pp, const uint8_t *end, const char *word, Py_ssize_t n) {
    const uint8_t *p = *pp;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (p + i >= end) return RES_MORE;
        if (p[i] != (uint8_t)word[i]) { d->decline = "a value is not valid JSON"; return RES_DECLINE; }
    }
    *pp = p + n;
    return RES_OK;
}

/* Any value at *pp (after blanks), checked and skipped. depth: the brackets around it. */
static int skip_value(Decoder *d, const uint8_t **pp, const uint8_t *end, int depth) {
    const uint8_t *p = skip_blanks(*pp, end);
    if (p >= end) return RES_MORE;
    int r;
    switch (*p) {
        case '"': {
            const uint8_t *s;
            Py_ssize_t n;
            p++;
            r = lex_string(d, &p, end, 0, &s, &n);
            if (r) return r;
            break;
        }
        case '{':
        case '[': {
            uint8_t close = *p == '{' ? '}' : ']';
            int object = *p == '{';
            if (depth + 1 > d->max_depth) { d->decline = "its JSON nests deeper than the decoder's bound"; return RES_DECLINE; }
            p = skip_blanks(p + 1, end);
            if (p >= end) return RES_MORE;
            if (*p == close) { p++; break; }
            for (;;) {
                if (object) {
                    p = skip_blanks(p, end);
                    if (p >= end) return RES_MORE;
                    if (*p != '"') { d->decline = "an object key is not a string"; return RES_DECLINE; }
                    const uint8_t *s;
                    Py_ssize_t n;
                    p++;
                    r = lex_string(d, &p, end, 0, &s, &n);
                    if (r) return r;
                    p = skip_blanks(p, end);
                    if (p >= end) return RES_MORE;
                    if (*p != ':') { d->decline = "an object is not valid JSON"; return RES_DECLINE; }
                    p++;
                }
                r = skip_value(d, &p, end, depth + 1);
                if (r) return r;
                p = skip_blanks(p, end);
                if (p >= end) return RES_MORE;
                if (*p == ',') { p++; continue; }
                if (*p == close) { p++; break; }
                d->decline = "a value is not valid JSON";
                return RES_DECLINE;
            }
            break;
        }
        case 't': r = lex_literal(d, &p, end, "true", 4); if (r) return r; break;
        case 'f': r = lex_literal(d, &p, end, "false", 5); if (r) return r; break;
        case 'n': r = lex_literal(d, &p, end, "null", 4); if (r) return r; break;
        default: {
            int is_int, int_ok;
            int64_t i;
            double v;
            r = lex_number(d, &p, end, 0, &is_int, &int_ok, &i, &v);
            if (r) return r;
        }
    }
    *pp = p;
    return RES_OK;
}

/* A pid, tid or flow id: an int64 or a string (TAG_NONE for null where allow_null). */
static int lex_id(Decoder *d, const uint8_t **pp, const uint8_t *end, int allow_null, uint8_t *tag,
                  int64_t *value, const char *bad) {
    const uint8_t *p = *pp;
    int r;
    if (*p == '"') {
        const uint8_t *s;
        Py_ssize_t n;
        p++;
        r = lex_string(d, &p, end, 1, &s, &n);
        if (r) return r;
        int64_t id = table_intern(&d->values, s, n);
        if (id < 0) return RES_NOMEM;
        *tag = TAG_STR;
        *value = id;
    } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
        int is_int, int_ok;
        double v;
        r = lex_number(d, &p, end, 1, &is_int, &int_ok, value, &v);
        if (r) return r;
        if (!is_int || !int_ok) { d->decline = bad; return RES_DECLINE; }
        *tag = TAG_INT;
    } else if (allow_null && *p == 'n') {
        r = lex_literal(d, &p, end, "null", 4);
        if (r) return r;
        *tag = TAG_NONE;
        *value = 0;
    } else {
        d->decline = bad;
        return RES_DECLINE;
    }
    *pp = p;
    return RES_OK;
}

static int lex_double(Decoder *d, const uint8_t **pp, const uint8_t *end, double *out, const char *bad) {
    const uint8_t *p = *pp;
    if (!(*p == '-' || (*p >= '0' && *p <= '9'))) { d->decline = bad; return RES_DECLINE; }
    int is_int, int_ok;
    int64_t i;
    int r = lex_number(d, &p, end, 1, &is_int, &int_ok, &i, out);
    if (r) return r;
    if (isinf(*out)) { d->decline = "a number is beyond float64"; return RES_DECLINE; }
    *pp = p;
    return RES_OK;
}

/* The args object of a record, its kept keys staged in d->slots. */
static int lex_args(Decoder *d, const uint8_t **pp, const uint8_t *end, int depth, uint64_t *touched) {
    const uint8_t *p = *pp;
    int r;
    if (*p == 'n') {
        r = lex_literal(d, &p, end, "null", 4);
        if (r) return r;
        *pp = p;
        return RES_OK;
    }
    if (*p != '{') { d->decline = "a record's `args` is not an object"; return RES_DECLINE; }
    if (depth + 1 > d->max_depth) { d->decline = "its JSON nests deeper than the decoder's bound"; return RES_DECLINE; }
    p = skip_blanks(p + 1, end);
    if (p >= end) return RES_MORE;
    if (*p == '}') { *pp = p + 1; return RES_OK; }
    for (;;) {
        p = skip_blanks(p, end);
        if (p >= end) return RES_MORE;
        if (*p != '"') { d->decline = "an object key is not a string"; return RES_DECLINE; }
        const uint8_t *key;
        Py_ssize_t key_len;
        p++;
        r = lex_string(d, &p, end, 1, &key, &key_len);
        if (r) return r;
        Py_ssize_t slot = -1;
        for (int k = key_len < KEY_LENGTHS ? d->key_by_length[key_len] : -1; k >= 0; k = d->key_next[k]) {
            if (memcmp(d->arg_keys_arena.data + d->arg_key_start[k], key, (size_t)key_len) == 0) {
                slot = k;
                break;
            }
        }
        p = skip_blanks(p, end);
        if (p >= end) return RES_MORE;
        if (*p != ':') { d->decline = "an object is not valid JSON"; return RES_DECLINE; }
        p = skip_blanks(p + 1, end);
        if (p >= end) return RES_MORE;
        if (slot < 0) {
            r = skip_value(d, &p, end, depth + 1);
            if (r) return r;
        } else {
            ArgSlot *a = &d->slots[slot];
            *touched |= 1ULL << slot;
            const uint8_t *value_start = p;
            if (*p == '"') {
                const uint8_t *s;
                Py_ssize_t n;
                p++;
                r = lex_string(d, &p, end, 1, &s, &n);
                if (r) return r;
                int64_t id = table_intern(&d->arg_strings, s, n);
                if (id < 0) return RES_NOMEM;
                a->kind = K_STR;
                a->value = id;
            } else if (*p == 'n') {
                r = lex_literal(d, &p, end, "null", 4);
                if (r) return r;
                a->kind = K_ABSENT;
            } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
                int is_int, int_ok;
                int64_t i;
                double v;
                r = lex_number(d, &p, end, 1, &is_int, &int_ok, &i, &v);
                if (r) return r;
                if (is_int && int_ok) { a->kind = K_INT; a->value = i; }
                else if (is_int) { a->kind = K_JSON; a->span = value_start; a->span_len = p - value_start; }
                else {
                    if (isinf(v)) { d->decline = "a number is beyond float64"; return RES_DECLINE; }
                    a->kind = K_FLOAT;
                    memcpy(&a->value, &v, sizeof v);
                }
            } else {
                r = skip_value(d, &p, end, depth + 1);
                if (r) return r;
                a->kind = K_JSON;
                a->span = value_start;
                a->span_len = p - value_start;
            }
        }
        p = skip_blanks(p, end);
        if (p >= end) return RES_MORE;
        if (*p == ',') { p++; continue; }
        if (*p == '}') { p++; break; }
        d->decline = "an object is not valid JSON";
        return RES_DECLINE;
    }
    *pp = p;
    return RES_OK;
}

static int phase_code(const uint8_t *s, Py_ssize_t n) {
    if (n != 1) return PH_OTHER;
    switch (s[0]) {
        case 'X': return PH_X;
        case 'i': case 'I': case 'n': return PH_INSTANT;
        case 'M': return PH_META;
        case 's': return PH_FLOW_S;
        case 't': return PH_FLOW_T;
        case 'f': return PH_FLOW_F;
        case 'C': return PH_COUNTER;
        default: return PH_OTHER;
    }
}

static int64_t intern_pair(Table *t, uint8_t tag_a, int64_t a, uint8_t tag_b, int64_t b) {
    uint8_t key[18];
    key[0] = tag_a;
    memcpy(key + 1, &a, 8);
    key[9] = tag_b;
    memcpy(key + 10, &b, 8);
    return table_intern(t, key, sizeof key);
}

/* A record's thread: most records are on the thread of the record before. */
static int64_t intern_thread(Decoder *d, uint8_t pid_tag, int64_t pid, uint8_t tid_tag, int64_t tid) {
    if (d->last_thread >= 0 && pid_tag == d->last_pid_tag && pid == d->last_pid && tid_tag == d->last_tid_tag &&
        tid == d->last_tid)
        return d->last_thread;
    int64_t id = intern_pair(&d->threads, pid_tag, pid, tid_tag, tid);
    d->last_thread = id;
    d->last_pid_tag = pid_tag;
    d->last_pid = pid;
    d->last_tid_tag = tid_tag;
    d->last_tid = tid;
    return id;
}

/* One record (an object) at *pp: parsed, then committed to the columns. */
static int lex_record(Decoder *d, const uint8_t **pp, const uint8_t *end, int depth) {
    const uint8_t *p = *pp, *record_start = p;
    int r;
    if (*p != '{') { d->decline = "a record is not a JSON object"; return RES_DECLINE; }
    if (depth + 1 > d->max_depth) { d->decline = "its JSON nests deeper than the decoder's bound"; return RES_DECLINE; }
    int phase = PH_OTHER;
    int64_t name = -1, cat = -1, pid = 0, tid = 0, flow_id = 0;
    uint8_t pid_tag = TAG_INT, tid_tag = TAG_INT, id_tag = TAG_NONE, bp_e = 0;
    double ts = 0.0, dur = 0.0;
    uint64_t touched = 0;
    p = skip_blanks(p + 1, end);
    if (p >= end) return RES_MORE;
    if (*p == '}') p++;
    else for (;;) {
        p = skip_blanks(p, end);
        if (p >= end) return RES_MORE;
        if (*p != '"') { d->decline = "an object key is not a string"; return RES_DECLINE; }
        const uint8_t *key;
        Py_ssize_t key_len;
        p++;
        r = lex_string(d, &p, end, 1, &key, &key_len);
        if (r) return r;
        /* Which field: the key's bytes are copied, as scratch is reused by the value. */
        char field[5] = {0};
        if (key_len >= 2 && key_len <= 4) memcpy(field, key, (size_t)key_len);
        p = skip_blanks(p, end);
        if (p >= end) return RES_MORE;
        if (*p != ':') { d->decline = "an object is not valid JSON"; return RES_DECLINE; }
        p = skip_blanks(p + 1, end);
        if (p >= end) return RES_MORE;
        const uint8_t *s;
        Py_ssize_t n;
        int string_field = 0; /* 1 ph, 2 name, 3 cat, 4 bp */
        if (key_len == 2 && !memcmp(field, "ph", 2)) string_field = 1;
        else if (key_len == 4 && !memcmp(field, "name", 4)) string_field = 2;
        else if (key_len == 3 && !memcmp(field, "cat", 3)) string_field = 3;
        else if (key_len == 2 && !memcmp(field, "bp", 2)) string_field = 4;
        if (string_field) {
            if (*p != '"') {
                static const char *bad[] = {"", "a record's `ph` is not a string", "a record's `name` is not a string",
                                            "a record's `cat` is not a string", "a record's `bp` is not a string"};
                d->decline = bad[string_field];
                return RES_DECLINE;
            }
            p++;
            r = lex_string(d, &p, end, 1, &s, &n);
            if (r) return r;
            if (string_field == 1) phase = phase_code(s, n);
            else if (string_field == 4) bp_e = n == 1 && s[0] == 'e';
            else {
                int64_t id = table_intern(&d->names, s, n); /* names and categories: one raw table */
                if (id < 0) return RES_NOMEM;
                if (string_field == 2) name = id; else cat = id;
            }
        } else if (key_len == 3 && !memcmp(field, "pid", 3)) {
            r = lex_id(d, &p, end, 0, &pid_tag, &pid, "a record's `pid` is not an int64 or a string");
            if (r) return r;
        } else if (key_len == 3 && !memcmp(field, "tid", 3)) {
            r = lex_id(d, &p, end, 0, &tid_tag, &tid, "a record's `tid` is not an int64 or a string");
            if (r) return r;
        } else if (key_len == 2 && !memcmp(field, "id", 2)) {
            r = lex_id(d, &p, end, 1, &id_tag, &flow_id, "a record's `id` is not an int64, a string or null");
            if (r) return r;
        } else if (key_len == 2 && !memcmp(field, "ts", 2)) {
            r = lex_double(d, &p, end, &ts, "a record's `ts` is not a number");
            if (r) return r;
        } else if (key_len == 3 && !memcmp(field, "dur", 3)) {
            r = lex_double(d, &p, end, &dur, "a record's `dur` is not a number");
            if (r) return r;
        } else if (key_len == 4 && !memcmp(field, "args", 4)) {
            /* A repeated `args` replaces the earlier one: as msgspec, the last wins. */
            for (int k = 0; k < d->n_arg_keys; k++) if (touched >> k & 1) d->slots[k].kind = K_ABSENT;
            touched = 0;
            r = lex_args(d, &p, end, depth + 1, &touched);
            if (r) return r;
        } else {
            r = skip_value(d, &p, end, depth + 1);
            if (r) return r;
        }
        p = skip_blanks(p, end);
        if (p >= end) return RES_MORE;
        if (*p == ',') { p++; continue; }
        if (*p == '}') { p++; break; }
        d->decline = "an object is not valid JSON";
        return RES_DECLINE;
    }
    /* Commit. Defaults as the typed decode's: "" for strings. */
    if ((phase == PH_X || phase == PH_INSTANT || (phase >= PH_FLOW_S && phase <= PH_FLOW_F)) && (cat < 0 || name < 0)) {
        if (cat < 0 && (cat = table_intern(&d->names, (const uint8_t *)"", 0)) < 0) return RES_NOMEM;
        if (name < 0 && (name = table_intern(&d->names, (const uint8_t *)"", 0)) < 0) return RES_NOMEM;
    }
    d->records++;
    if (phase == PH_X || phase == PH_INSTANT) {
        int64_t thread = intern_thread(d, pid_tag, pid, tid_tag, tid);
        if (thread < 0) return RES_NOMEM;
        int64_t row = (int64_t)(d->ev_ts.len / (Py_ssize_t)sizeof(double));
        BUF_PUSH(&d->ev_phase, uint8_t, (uint8_t)phase);
        BUF_PUSH(&d->ev_name, int32_t, (int32_t)name);
        BUF_PUSH(&d->ev_cat, int32_t, (int32_t)cat);
        BUF_PUSH(&d->ev_thread, int32_t, (int32_t)thread);
        BUF_PUSH(&d->ev_ts, double, ts);
        BUF_PUSH(&d->ev_dur, double, dur);
        for (int k = 0; k < d->n_event_args; k++) {
            if (!(touched >> k & 1)) continue;
            ArgSlot *a = &d->slots[k];
            if (a->kind == K_ABSENT) continue;
            int64_t value = a->value;
            if (a->kind == K_JSON) {
                value = (int64_t)(d->json_offsets.len / (Py_ssize_t)sizeof(int64_t)) - 1;
                if (buf_append(&d->json_arena, a->span, a->span_len) < 0) return RES_NOMEM;
                BUF_PUSH(&d->json_offsets, int64_t, (int64_t)d->json_arena.len);
            }
            BUF_PUSH(&d->ar_row[k], int64_t, row);
            BUF_PUSH(&d->ar_kind[k], uint8_t, a->kind);
            BUF_PUSH(&d->ar_value[k], int64_t, value);
        }
    } else if (phase >= PH_FLOW_S && phase <= PH_FLOW_F) {
        int64_t thread = intern_thread(d, pid_tag, pid, tid_tag, tid);
        int64_t key = intern_pair(&d->flow_keys, TAG_INT, cat, id_tag, flow_id);
        if (thread < 0 || key < 0) return RES_NOMEM;
        BUF_PUSH(&d->fl_phase, uint8_t, (uint8_t)phase);
        BUF_PUSH(&d->fl_cat, int32_t, (int32_t)cat);
        BUF_PUSH(&d->fl_thread, int32_t, (int32_t)thread);
        BUF_PUSH(&d->fl_ts, double, ts);
        BUF_PUSH(&d->fl_key, int32_t, (int32_t)key);
        BUF_PUSH(&d->fl_bp, uint8_t, bp_e);
    } else if (phase == PH_META) {
        if (buf_append(&d->meta_arena, record_start, p - record_start) < 0) return RES_NOMEM;
        BUF_PUSH(&d->meta_offsets, int64_t, (int64_t)d->meta_arena.len);
    } else if (phase == PH_COUNTER) {
        d->counters++;
    }
    for (int k = 0; k < d->n_arg_keys; k++) if (touched >> k & 1) d->slots[k].kind = K_ABSENT;
    *pp = p;
    return RES_OK;
}

/* Parses what it can of [*pp, end); *pp is left where the next attempt starts. */
static int run(Decoder *d, const uint8_t **pp, const uint8_t *end) {
    const uint8_t *p = *pp;
    int r = RES_OK;
    int records_depth = 0;
    for (;;) {
        p = skip_blanks(p, end);
        *pp = p;
        if (p >= end) return RES_MORE;
        switch (d->state) {
            case S_START:
                if (*p == '{') { d->state = S_OBJ_FIRST; p++; }
                else if (*p == '[') { d->array_form = 1; d->state = S_REC_FIRST; p++; }
                else { d->decline = "the document is not a JSON object or array"; return RES_DECLINE; }
                break;
            case S_OBJ_FIRST:
            case S_OBJ_KEY: {
                if (d->state == S_OBJ_FIRST && *p == '}') { d->state = S_DONE; p++; break; }
                if (*p != '"') { d->decline = "an object key is not a string"; return RES_DECLINE; }
                const uint8_t *member = p, *key;
                Py_ssize_t key_len;
                p++;
                r = lex_string(d, &p, end, 1, &key, &key_len);
                if (r) return r;
                int is_events = key_len == 11 && !memcmp(key, "traceEvents", 11);
                p = skip_blanks(p, end);
                if (p >= end) return RES_MORE;
                if (*p != ':') { d->decline = "an object is not valid JSON"; return RES_DECLINE; }
                p = skip_blanks(p + 1, end);
                if (p >= end) return RES_MORE;
                if (is_events) {
                    if (d->top_has_events) { d->decline = "the document has two `traceEvents`"; return RES_DECLINE; }
                    if (*p != '[') { d->decline = "its `traceEvents` is not a list"; return RES_DECLINE; }
                    d->top_has_events = 1;
                    d->state = S_REC_FIRST;
                    p++;
                } else {
                    r = skip_value(d, &p, end, 1);
                    if (r) return r;
                    if (buf_append(&d->top_arena, member, p - member) < 0) return RES_NOMEM;
                    BUF_PUSH(&d->top_offsets, int64_t, (int64_t)d->top_arena.len);
                    d->state = S_OBJ_NEXT;
                }
                break;
            }
            case S_OBJ_NEXT:
                if (*p == ',') { d->state = S_OBJ_KEY; p++; }
                else if (*p == '}') { d->state = S_DONE; p++; }
                else { d->decline = "an object is not valid JSON"; return RES_DECLINE; }
                break;
            case S_REC_FIRST:
            case S_REC_NEXT:
                records_depth = d->array_form ? 1 : 2;
                if (*p == ']') {
                    p++;
                    d->state = d->array_form ? S_DONE : S_OBJ_NEXT;
                    break;
                }
                if (d->state == S_REC_NEXT) {
                    if (*p != ',') { d->decline = "the records are not a valid JSON list"; return RES_DECLINE; }
                    p = skip_blanks(p + 1, end);
                    if (p >= end) return RES_MORE;
                }
                r = lex_record(d, &p, end, records_depth);
                if (r) return r;
                d->state = S_REC_NEXT;
                break;
            case S_DONE:
                d->decline = "the document has bytes after its end";
                return RES_DECLINE;
        }
        *pp = p;
    }
}

/* ---- the Python type ---- */

static int Decoder_init(Decoder *d, PyObject *args, PyObject *kwds) {
    static char *keywords[] = {"arg_keys", "event_args", "max_depth", NULL};
    PyObject *keys;
    Py_ssize_t event_args;
    int max_depth;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!ni", keywords, &PyTuple_Type, &keys, &event_args, &max_depth))
        return -1;
    if (d->ready) {
        PyErr_SetString(PyExc_RuntimeError, "a Decoder is initialized once");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (n > MAX_ARG_KEYS || event_args > n || event_args < 0) {
        PyErr_SetString(PyExc_ValueError, "too many arg keys");
        return -1;
    }
    d->n_arg_keys = n;
    d->last_thread = -1;
    d->n_event_args = event_args;
    d->max_depth = max_depth;
    d->arg_keys_arena.len = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *key = PyTuple_GET_ITEM(keys, k);
        if (!PyBytes_Check(key)) {
            PyErr_SetString(PyExc_TypeError, "arg keys must be bytes");
            return -1;
        }
        d->arg_key_start[k] = d->arg_keys_arena.len;
        if (buf_append(&d->arg_keys_arena, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)) < 0) {
            PyErr_NoMemory();
            return -1;
        }
    }
    d->arg_key_start[n] = d->arg_keys_arena.len;
    for (int k = 0; k < KEY_LENGTHS; k++) d->key_by_length[k] = -1;
    for (Py_ssize_t k = n - 1; k >= 0; k--) {
        Py_ssize_t len = d->arg_key_start[k + 1] - d->arg_key_start[k];
        d->key_next[k] = -1;
        if (len < KEY_LENGTHS) {
            d->key_next[k] = d->key_by_length[len];
            d->key_by_length[len] = (int)k;
        }
    }
    if (table_init(&d->names) < 0 || table_init(&d->values) < 0 || table_init(&d->arg_strings) < 0 ||
        table_init(&d->threads) < 0 || table_init(&d->flow_keys) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    int64_t zero = 0;
    if (buf_append(&d->json_offsets, &zero, 8) < 0 || buf_append(&d->meta_offsets, &zero, 8) < 0 ||
        buf_append(&d->top_offsets, &zero, 8) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    d->ready = 1;
    return 0;
}

static void Decoder_dealloc(Decoder *d) {
    Buf *bufs[] = {&d->arg_keys_arena, &d->carry, &d->scratch, &d->ev_phase, &d->ev_name, &d->ev_cat,
                   &d->ev_thread, &d->ev_ts, &d->ev_dur, &d->fl_phase, &d->fl_cat, &d->fl_thread, &d->fl_ts,
                   &d->fl_key, &d->fl_bp, &d->json_arena,
                   &d->json_offsets, &d->meta_arena, &d->meta_offsets, &d->top_arena, &d->top_offsets};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) buf_free(bufs[i]);
    for (int k = 0; k < MAX_ARG_KEYS; k++) {
        buf_free(&d->ar_row[k]);
        buf_free(&d->ar_kind[k]);
        buf_free(&d->ar_value[k]);
    }
    Table *tables[] = {&d->names, &d->values, &d->arg_strings, &d->threads, &d->flow_keys};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) table_free(tables[i]);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

/*
 * feed(piece, final) -> None while reading, or the reason (str) it declined. `final`: no bytes follow,
 * so a record still open is a cut document (declined: the msgspec path salvages it).
 */
static PyObject *Decoder_feed(Decoder *d, PyObject *args) {
    Py_buffer view;
    int final;
    if (!d->ready) {
        PyErr_SetString(PyExc_RuntimeError, "the Decoder is not initialized");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "y*p", &view, &final)) return NULL;
    if (d->decline) {
        PyBuffer_Release(&view);
        return PyUnicode_FromString(d->decline);
    }
    const uint8_t *p, *end;
    int from_carry = d->carry.len > 0;
    if (from_carry) {
        if (buf_append(&d->carry, view.buf, view.len) < 0) { PyBuffer_Release(&view); return PyErr_NoMemory(); }
        PyBuffer_Release(&view);
        if (d->carry.len < d->need && !final) Py_RETURN_NONE;
        p = d->carry.data;
        end = p + d->carry.len;
    } else {
        p = (const uint8_t *)view.buf;
        end = p + view.len;
    }
    const uint8_t *begin = p;
    int r;
    /* Without the GIL: a load on a worker thread leaves the others (the UI's) running. */
    Py_BEGIN_ALLOW_THREADS
    r = run(d, &p, end);
    Py_END_ALLOW_THREADS
    if (r == RES_NOMEM) {
        if (!from_carry) PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    if (r == RES_MORE) {
        Py_ssize_t rest = end - p;
        if (final) {
            if (d->state != S_DONE || rest) d->decline = "the document is cut short";
        } else {
            /* No progress: the open item is bigger than what is held; wait until it doubled. */
            d->need = p == begin ? 2 * (end - begin) : 0;
            if (from_carry) {
                memmove(d->carry.data, p, (size_t)rest);
                d->carry.len = rest;
            } else if (buf_append(&d->carry, p, rest) < 0) {
                PyBuffer_Release(&view);
                return PyErr_NoMemory();
            }
        }
    }
    if (!from_carry) PyBuffer_Release(&view);
    if (d->decline) return PyUnicode_FromString(d->decline);
    if (final && d->state != S_DONE) {
        d->decline = "the document is cut short";
        return PyUnicode_FromString(d->decline);
    }
    Py_RETURN_NONE;
}

/* held() -> the bytes the decoder holds now (columns, tables, the unparsed tail). */
static PyObject *Decoder_held(Decoder *d, PyObject *unused) {
    Buf *bufs[] = {&d->carry, &d->scratch, &d->ev_phase, &d->ev_name, &d->ev_cat, &d->ev_thread, &d->ev_ts,
                   &d->ev_dur, &d->fl_phase, &d->fl_cat, &d->fl_thread, &d->fl_ts, &d->fl_key, &d->fl_bp,
                   &d->json_arena, &d->json_offsets,
                   &d->meta_arena, &d->meta_offsets, &d->top_arena, &d->top_offsets};
    Py_ssize_t held = 0;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) held += bufs[i]->cap;
    for (int k = 0; k < MAX_ARG_KEYS; k++) held += d->ar_row[k].cap + d->ar_kind[k].cap + d->ar_value[k].cap;
    Table *tables[] = {&d->names, &d->values, &d->arg_strings, &d->threads, &d->flow_keys};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
        Table *t = tables[i];
        held += t->arena.cap + t->offsets.cap + t->hashes.cap + (t->mask + 1) * (Py_ssize_t)sizeof(uint32_t);
    }
    return PyLong_FromSsize_t(held);
}

/* A column as bytes; its buffer is freed at once, so a column is never held twice for long. */
static PyObject *bytes_of(Buf *b) {
    PyObject *out = PyBytes_FromStringAndSize((const char *)b->data, b->len);
    buf_free(b);
    return out;
}

/* The kept args' columns: per arg key (of the first n_event_args), (rows, kinds, values) as bytes. */
static PyObject *args_of(Decoder *d) {
    PyObject *list = PyList_New(d->n_event_args);
    if (!list) return NULL;
    for (Py_ssize_t k = 0; k < d->n_event_args; k++) {
        PyObject *triple = Py_BuildValue("(NNN)", bytes_of(&d->ar_row[k]), bytes_of(&d->ar_kind[k]),
                                         bytes_of(&d->ar_value[k]));
        if (!triple) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, k, triple);
    }
    return list;
}

/* A table's keys as a list of str (UTF-8, validated as they were read). */
static PyObject *strings_of(Table *t) {
    PyObject *list = PyList_New(t->count);
    if (!list) return NULL;
    const int64_t *offsets = (const int64_t *)t->offsets.data;
    for (Py_ssize_t i = 0; i < t->count; i++) {
        PyObject *s = PyUnicode_DecodeUTF8((const char *)t->arena.data + offsets[i], offsets[i + 1] - offsets[i], "strict");
        if (!s) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, s);
    }
    return list;
}

static PyObject *id_object(PyObject *values, uint8_t tag, int64_t value) {
    if (tag == TAG_STR) {
        PyObject *s = PyList_GET_ITEM(values, value);
        Py_INCREF(s);
        return s;
    }
    if (tag == TAG_INT) return PyLong_FromLongLong(value);
    Py_RETURN_NONE;
}

/* The thread table as (pid, tid) tuples of int or str. */
static PyObject *threads_of(Table *t, PyObject *values) {
    PyObject *list = PyList_New(t->count);
    if (!list) return NULL;
    const int64_t *offsets = (const int64_t *)t->offsets.data;
    for (Py_ssize_t i = 0; i < t->count; i++) {
        const uint8_t *key = t->arena.data + offsets[i];
        int64_t a, b;
        memcpy(&a, key + 1, 8);
        memcpy(&b, key + 10, 8);
        PyObject *pid = id_object(values, key[0], a), *tid = id_object(values, key[9], b);
        PyObject *pair = (pid && tid) ? PyTuple_Pack(2, pid, tid) : NULL;
        Py_XDECREF(pid);
        Py_XDECREF(tid);
        if (!pair) { Py_DECREF(list); return NULL; }
        PyList_SET_ITEM(list, i, pair);
    }
    return list;
}

/* finish() -> dict of the columns (bytes) and tables (lists), after a final feed that returned None. */
static PyObject *Decoder_finish(Decoder *d, PyObject *unused) {
    if (!d->ready || d->decline || d->state != S_DONE) {
        PyErr_SetString(PyExc_RuntimeError, "finish() before the document was read");
        return NULL;
    }
    PyObject *values = strings_of(&d->values);
    if (!values) return NULL;
    PyObject *out = Py_BuildValue(
        "{s:N,s:N,s:N,s:N,s:N,s:N, s:N,s:N,s:N,s:N,s:N,s:N, s:N, s:N,s:N, s:N,s:N, s:N,s:N,"
        " s:N,s:N,s:N,s:N, s:L,s:L,s:i}",
        "ev_phase", bytes_of(&d->ev_phase), "ev_name", bytes_of(&d->ev_name), "ev_cat", bytes_of(&d->ev_cat),
        "ev_thread", bytes_of(&d->ev_thread), "ev_ts", bytes_of(&d->ev_ts), "ev_dur", bytes_of(&d->ev_dur),
        "fl_phase", bytes_of(&d->fl_phase), "fl_cat", bytes_of(&d->fl_cat), "fl_thread", bytes_of(&d->fl_thread),
        "fl_ts", bytes_of(&d->fl_ts), "fl_key", bytes_of(&d->fl_key), "fl_bp", bytes_of(&d->fl_bp),
        "args", args_of(d), "json_arena", bytes_of(&d->json_arena),
        "json_offsets", bytes_of(&d->json_offsets),
        "meta_arena", bytes_of(&d->meta_arena), "meta_offsets", bytes_of(&d->meta_offsets),
        "top_arena", bytes_of(&d->top_arena), "top_offsets", bytes_of(&d->top_offsets),
        "names", strings_of(&d->names), "arg_strings", strings_of(&d->arg_strings),
        "threads", threads_of(&d->threads, values), "flow_keys", PyLong_FromSsize_t(d->flow_keys.count),
        "counters", (long long)d->counters, "records", (long long)d->records, "array_form", d->array_form);
    Py_DECREF(values);
    return out;
}

/*
 * renumber(ids, size) -> (new_ids, old_of_new): ids (int32 or int64 values in [0, size)) renumbered
 * densely in order of first appearance, as an interner filled in that order would number them;
 * both as int64 bytes. One pass, where np.unique would sort.
 */
static PyObject *renumber(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t size;
    int itemsize;
    if (!PyArg_ParseTuple(args, "y*ni", &view, &size, &itemsize)) return NULL;
    if ((itemsize != 4 && itemsize != 8) || view.len % itemsize || size < 0) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "renumber: bad arguments");
        return NULL;
    }
    Py_ssize_t n = view.len / itemsize;
    PyObject *new_ids = PyBytes_FromStringAndSize(NULL, n * 8);
    int64_t *seen = (int64_t *)PyMem_RawMalloc((size_t)(size ? size : 1) * sizeof(int64_t));
    int64_t *order = (int64_t *)PyMem_RawMalloc((size_t)(size ? size : 1) * sizeof(int64_t));
    if (!new_ids || !seen || !order) {
        Py_XDECREF(new_ids);
        PyMem_RawFree(seen);
        PyMem_RawFree(order);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < size; i++) seen[i] = -1;
    int64_t *out = (int64_t *)PyBytes_AS_STRING(new_ids);
    int64_t next = 0;
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t id = itemsize == 4 ? ((const int32_t *)view.buf)[i] : ((const int64_t *)view.buf)[i];
        if (id < 0 || id >= size) { bad = 1; break; }
        if (seen[id] < 0) { seen[id] = next; order[next++] = id; }
        out[i] = seen[id];
    }
    PyBuffer_Release(&view);
    PyMem_RawFree(seen);
    if (bad) {
        Py_DECREF(new_ids);
        PyMem_RawFree(order);
        PyErr_SetString(PyExc_ValueError, "renumber: an id is out of range");
        return NULL;
    }
    PyObject *old_of_new = PyBytes_FromStringAndSize((const char *)order, next * 8);
    PyMem_RawFree(order);
    if (!old_of_new) { Py_DECREF(new_ids); return NULL; }
    return Py_BuildValue("(NN)", new_ids, old_of_new);
}

static PyMethodDef module_methods[] = {
    {"renumber", renumber, METH_VARARGS, "renumber(ids, size, itemsize) -> (new_ids, old_of_new) as int64 bytes"},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef Decoder_methods[] = {
    {"feed", (PyCFunction)Decoder_feed, METH_VARARGS, "feed(piece, final) -> None, or why it declined"},
    {"finish", (PyCFunction)Decoder_finish, METH_NOARGS, "finish() -> the columns and tables"},
    {"held", (PyCFunction)Decoder_held, METH_NOARGS, "held() -> bytes held now"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tpuscope.readers.trace_event._jsontok.Decoder",
    .tp_basicsize = sizeof(Decoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Decoder_init,
    .tp_dealloc = (destructor)Decoder_dealloc,
    .tp_methods = Decoder_methods,
    .tp_doc = "Decoder(arg_keys, event_args, max_depth): trace-event JSON fed in pieces, to columns.",
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jsontok", "Trace-event JSON to columns.", -1, module_methods};

PyMODINIT_FUNC PyInit__jsontok(void) {
    for (int c = 0; c < 256; c++) STRING_STOP[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80;
    IS_BLANK[' '] = IS_BLANK['\t'] = IS_BLANK['\n'] = IS_BLANK['\r'] = 1;
    if (PyType_Ready(&DecoderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&DecoderType);
    if (PyModule_AddObject(m, "Decoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(&DecoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
