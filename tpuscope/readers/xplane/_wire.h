/*
 * Protobuf wire-format readers shared by tpuscope's C decoders (_linedecode.c, _planeheader.c).
 *
 * Every read is bounds-checked against its cursor's end and returns -1 on malformed input, so a
 * corrupted file becomes a ValueError in the caller, never a crash. The wire format:
 * https://protobuf.dev/programming-guides/encoding/
 */
#ifndef TPUSCOPE_XPLANE_WIRE_H
#define TPUSCOPE_XPLANE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

static inline int read_varint_slow(Cursor *c, uint64_t *out) {
    uint64_t value = 0;
    int shift = 0;
    while (c->p < c->end) {
        uint8_t byte = *c->p++;
        if (shift == 63 && (byte & 0x7e)) return -1; /* overflows 64 bits */
        value |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = value;
            return 0;
        }
        shift += 7;
        if (shift > 63) return -1;
    }
    return -1;
}

/* Most varints (tags, small ids) are one byte: that case costs one compare.
 * With 10 bytes left (the longest varint) the rest unrolls without per-byte
 * bounds checks; near the end of the buffer the checked loop takes over. */
static inline int read_varint(Cursor *c, uint64_t *out) {
    const uint8_t *p = c->p;
    if (p < c->end && !(*p & 0x80)) {
        *out = *p;
        c->p = p + 1;
        return 0;
    }
    if (c->end - p < 10) return read_varint_slow(c, out);
    uint64_t b, v = (uint64_t)(*p++ & 0x7f);
#define VARINT_BYTE(shift)                 \
    b = *p++;                              \
    v |= (b & 0x7f) << (shift);            \
    if (b < 0x80) goto done;
    VARINT_BYTE(7)
    VARINT_BYTE(14)
    VARINT_BYTE(21)
    VARINT_BYTE(28)
    VARINT_BYTE(35)
    VARINT_BYTE(42)
    VARINT_BYTE(49)
    VARINT_BYTE(56)
#undef VARINT_BYTE
    b = *p++;
    if (b > 1) return -1; /* a 10th byte may only hold bit 63 */
    v |= b << 63;
done:
    c->p = p;
    *out = v;
    return 0;
}

/* read_varint() for values (ids, times, stat values), whose byte counts vary from one event to the next:
 * a varint of up to 8 bytes is read with one 8-byte load and no branch per byte, when 8 bytes are
 * readable from c->p (up to `readable_end`, the end of the whole buffer, which may lie past c->end;
 * bytes past c->end are loaded, never used). Why: the per-byte branches of read_varint mispredict on
 * values of varying length; fill_regular on a 224k-event op line ran 3-12% faster with this (measured
 * alternately against the per-byte reader, on this project's 2-core machine).
 * Longer varints, the buffer's last bytes and compilers without the builtin take read_varint(). */
static inline int read_value_varint(Cursor *c, const uint8_t *readable_end, uint64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    const uint8_t *p = c->p;
    if (readable_end - p >= 8) {
        uint64_t x, stops;
        memcpy(&x, p, 8); /* little-endian, as are our targets */
        stops = ~x & 0x8080808080808080ULL; /* bit 7 clear: the varint's last byte */
        if (stops) {
            ptrdiff_t length = (__builtin_ctzll(stops) >> 3) + 1;
            if (length > c->end - p) return -1; /* runs past its field */
            x &= (stops ^ (stops - 1)) & 0x7f7f7f7f7f7f7f7fULL; /* its bytes' 7-bit groups only */
            x = ((x & 0x7f007f007f007f00ULL) >> 1) | (x & 0x007f007f007f007fULL);
            x = ((x & 0x3fff00003fff0000ULL) >> 2) | (x & 0x00003fff00003fffULL);
            x = ((x & 0x0fffffff00000000ULL) >> 4) | (x & 0x000000000fffffffULL);
            *out = x;
            c->p = p + length;
            return 0;
        }
    }
#else
    (void)readable_end;
#endif
    return read_varint(c, out);
}

/* Steps over a varint without assembling its value (counting pass). */
static inline int skip_varint(Cursor *c) {
    const uint8_t *limit = c->end - c->p > 10 ? c->p + 10 : c->end;
    while (c->p < limit) {
        if (!(*c->p++ & 0x80)) return 0;
    }
    return -1;
}

static inline int read_fixed64(Cursor *c, uint64_t *out) {
    if (c->end - c->p < 8) return -1;
    memcpy(out, c->p, 8); /* protobuf is little-endian, as are our targets */
    c->p += 8;
    return 0;
}

/* Reads a length prefix and returns the sub-range it covers. */
static inline int read_len(Cursor *c, Cursor *sub) {
    uint64_t n;
    if (read_varint(c, &n) < 0) return -1;
    if (n > (uint64_t)(c->end - c->p)) return -1;
    sub->p = c->p;
    sub->end = c->p + n;
    c->p += n;
    return 0;
}

/* Skips a field of an unknown number so newer writers never break us. */
static inline int skip_field(Cursor *c, int wire_type) {
    uint64_t ignored;
    Cursor sub;
    switch (wire_type) {
    case 0: return read_varint(c, &ignored);
    case 1: return read_fixed64(c, &ignored);
    case 2: return read_len(c, &sub);
    case 5:
        if (c->end - c->p < 4) return -1;
        c->p += 4;
        return 0;
    default: return -1; /* groups and reserved wire types are not in XPlane */
    }
}

static inline int read_tag(Cursor *c, uint64_t *field, int *wire_type) {
    uint64_t tag;
    if (read_varint(c, &tag) < 0) return -1;
    *field = tag >> 3;
    *wire_type = (int)(tag & 7);
    if (*field == 0) return -1;
    return 0;
}

/* Stat value kinds; must match tpuscope/readers/xplane/decode.py. */
enum { KIND_NONE = 0, KIND_DOUBLE = 1, KIND_UINT = 2, KIND_INT = 3, KIND_STR = 4,
       KIND_BYTES = 5, KIND_REF = 6, KIND_COMPRESSED = 7 };

/* One XStat's fields: its metadata id and its value, the last value field read winning, as protobuf's
 * oneof does. */
typedef struct {
    int64_t meta;
    int kind;        /* KIND_*: KIND_NONE when the stat has no value */
    uint64_t number; /* a double's bits, an integer or a ref's stat-metadata id */
    Cursor text;     /* a string's, bytes' or compressed string's bytes */
} StatFields;

/* Reads the XStat whose bytes `c` covers into `stat`: 0, or -1 on malformed input. Unknown fields and
 * fields with an unexpected wire type are skipped. `readable_end`: see read_value_varint. The one
 * reader of XStat fields, for event stats (_linedecode.c) and metadata and plane stats
 * (_planeheader.c). */
static inline int read_stat(Cursor c, const uint8_t *readable_end, StatFields *stat) {
    stat->meta = 0;
    stat->kind = KIND_NONE;
    stat->number = 0;
    stat->text.p = stat->text.end = c.p;
    while (c.p < c.end) {
        uint64_t field, v;
        int wt;
        if (read_tag(&c, &field, &wt) < 0) return -1;
        if (field == 1 && wt == 0) {
            if (read_value_varint(&c, readable_end, &v) < 0) return -1;
            stat->meta = (int64_t)v;
        } else if (field == 2 && wt == 1) {
            if (read_fixed64(&c, &stat->number) < 0) return -1;
            stat->kind = KIND_DOUBLE;
        } else if ((field == 3 || field == 4 || field == 7) && wt == 0) {
            if (read_value_varint(&c, readable_end, &stat->number) < 0) return -1;
            stat->kind = field == 3 ? KIND_UINT : (field == 4 ? KIND_INT : KIND_REF);
        } else if ((field == 5 || field == 6 || field == 8) && wt == 2) {
            if (read_len(&c, &stat->text) < 0) return -1;
            stat->kind = field == 5 ? KIND_STR : (field == 6 ? KIND_BYTES : KIND_COMPRESSED);
        } else if (skip_field(&c, wt) < 0) {
            return -1;
        }
    }
    return 0;
}

#endif
