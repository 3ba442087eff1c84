/* The native FMU's state (instance.h): one self-describing byte buffer (layout below), so getting
 * and serializing a state share one format; the digest of the model's constants that binds a
 * state to its model; getting, setting and deserializing states.  A state that is not one of this
 * FMU's is refused naming why, the instance left as it was.  Besides instantiation, only these
 * functions allocate. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "instance.h"

/* Layout, little-endian: "SOAFMUST" | u32 version | u32 instance kind | 64 bytes table digest |
 * u64 model digest | u32 nreal, nboolean, nvars, nc | the STATE_SCALARS (i32 / f64) |
 * f64 real[nreal] | u8 boolean[nboolean] | u8 pending[nvars] | u8 problem[MSG] |
 * f64 anchors[16 nc] | u8 was_active[nc] | u64 FNV-1a checksum of everything before it.
 * The table digest (SHA-256 of the variable table, from build_fmu.py) and the model digest
 * (model_digest: every constant of the model) bind a state to the FMU's model: a state of
 * another model is refused, whatever its sizes. */
#define STATE_MAGIC "SOAFMUST"
#define STATE_VERSION 3u
#define STATE_HEADER (8 + 4 + 4 + 64 + 8 + 16)

static size_t scalar_bytes(void)
{
    size_t n = 0;
#define SIZE_SCALAR(type, name, k) n += (k) * (sizeof(type) == 8 ? 8 : 4);
    STATE_SCALARS(SIZE_SCALAR)
    return n;
}

size_t fmu_state_bytes(void)
{
    return STATE_HEADER + scalar_bytes() + 8 * (size_t)D.nreal + (size_t)D.nboolean
           + (size_t)D.nvars + MSG + 8 * 16 * (size_t)D.nc + (size_t)D.nc + 8;
}

static void put_u64(unsigned char **p, uint64_t x)
{
    for (int i = 0; i < 8; i++) *(*p)++ = (unsigned char)(x >> (8 * i));
}
static void put_u32(unsigned char **p, uint32_t x)
{
    for (int i = 0; i < 4; i++) *(*p)++ = (unsigned char)(x >> (8 * i));
}
static uint64_t get_u64(const unsigned char **p)
{
    uint64_t x = 0;
    for (int i = 0; i < 8; i++) x |= (uint64_t)(*(*p)++) << (8 * i);
    return x;
}
static uint32_t get_u32(const unsigned char **p)
{
    uint32_t x = 0;
    for (int i = 0; i < 4; i++) x |= (uint32_t)(*(*p)++) << (8 * i);
    return x;
}
static void put_f64(unsigned char **p, double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    put_u64(p, u);
}
static double get_f64(const unsigned char **p)
{
    uint64_t u = get_u64(p);
    double x;
    memcpy(&x, &u, 8);
    return x;
}
static void put_int(unsigned char **p, int x) { put_u32(p, (uint32_t)x); }
static int get_int(const unsigned char **p) { return (int)get_u32(p); }
static void put_double(unsigned char **p, double x) { put_f64(p, x); }
static double get_double(const unsigned char **p) { return get_f64(p); }

static uint64_t fnv1a(const unsigned char *b, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static uint64_t fnv1a_more(uint64_t h, const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* FNV-1a over every constant of the description's model, little-endian whatever the host: each
 * table of soa.h (SOA_MODEL_INTS, SOA_MODEL_REALS: topology, joint types and placements, masses
 * and inertias, dissipation, constraints, flexible data, and any table added later) with its
 * sizes, and the variable table's digest.  The start values of the parameters a user may change
 * are in the state itself. */
uint64_t fmu_model_digest(void)
{
    uint64_t h = fnv1a(NULL, 0);
    const int sizes[9] = {D.nb, D.nq, D.nv, D.nc, D.nm, D.nsph, D.npln, D.nssp, D.nhv};
    unsigned char b[8], *p;
    for (int k = 0; k < 9; k++) {
        p = b;
        put_u32(&p, (uint32_t)sizes[k]);
        h = fnv1a_more(h, b, 4);
    }
    const soa_sizes sz = {D.nb, D.nq, D.nv, D.nc, D.nm, D.nsph, D.npln, D.nssp, D.nhv};
    SOA_SIZES(&sz);
    int i = 0;
#define HASH_INT(name, ndim, d0, d1, d2)                                                         \
    for (size_t k = 0, n_ = soa_buffer_dims(ndim, d0, d1, d2); k < n_; k++) {                   \
        p = b;                                                                                  \
        put_u32(&p, (uint32_t)D.ints[i][k]);                                                    \
        h = fnv1a_more(h, b, 4);                                                                \
    }                                                                                           \
    i++;
    SOA_MODEL_INTS(HASH_INT)
#undef HASH_INT
    i = 0;
#define HASH_REAL(name, ndim, d0, d1, d2)                                                        \
    for (size_t k = 0, n_ = soa_buffer_dims(ndim, d0, d1, d2); k < n_; k++) {                   \
        p = b;                                                                                  \
        put_f64(&p, D.reals[i][k]);                                                             \
        h = fnv1a_more(h, b, 8);                                                                \
    }                                                                                           \
    i++;
    SOA_MODEL_REALS(HASH_REAL)
#undef HASH_REAL
    return fnv1a_more(h, (const unsigned char *)D.digest, strlen(D.digest));
}

static void save_state(const Instance *c, unsigned char *buf)
{
    unsigned char *p = buf;
    memcpy(p, STATE_MAGIC, 8);
    p += 8;
    put_u32(&p, STATE_VERSION);
    put_u32(&p, (uint32_t)c->kind);
    memset(p, 0, 64);
    memcpy(p, D.digest, strlen(D.digest) < 64 ? strlen(D.digest) : 64);
    p += 64;
    put_u64(&p, c->model_digest);
    put_u32(&p, (uint32_t)D.nreal);
    put_u32(&p, (uint32_t)D.nboolean);
    put_u32(&p, (uint32_t)D.nvars);
    put_u32(&p, (uint32_t)D.nc);
#define PUT_SCALAR(type, name, k) put_##type(&p, c->name);
    STATE_SCALARS(PUT_SCALAR)
    for (int i = 0; i < D.nreal; i++) put_f64(&p, c->real[i]);
    for (int i = 0; i < D.nboolean; i++) *p++ = c->boolean[i] ? 1 : 0;
    memcpy(p, c->pending, (size_t)D.nvars);
    p += D.nvars;
    memcpy(p, c->problem, MSG);
    p += MSG;
    for (int i = 0; i < 16 * D.nc; i++) put_f64(&p, c->anchors[i]);
    for (int j = 0; j < D.nc; j++) *p++ = c->was_active[j] ? 1 : 0;
    put_u64(&p, fnv1a(buf, (size_t)(p - buf)));
}

/* "" when buf (n bytes) is a state of this FMU and of this kind of instance, else why not. */
static const char *state_problem(const Instance *c, const unsigned char *buf, size_t n)
{
    if (n < STATE_HEADER || memcmp(buf, STATE_MAGIC, 8) != 0) return "not a soa_fmu FMU state";
    const unsigned char *p = buf + 8;
    if (get_u32(&p) != STATE_VERSION) return "another state format version";
    const uint32_t kind = get_u32(&p);
    char digest[65] = {0};
    memcpy(digest, p, 64);
    if (strncmp(digest, D.digest, 64) != 0)
        return "it belongs to a different FMU (other variable table)";
    p += 64;
    if (get_u64(&p) != c->model_digest)
        return "it belongs to a different model (the model digest differs: other topology, "
               "joints, placements, inertias or constraints)";
    if (get_u32(&p) != (uint32_t)D.nreal || get_u32(&p) != (uint32_t)D.nboolean
        || get_u32(&p) != (uint32_t)D.nvars || get_u32(&p) != (uint32_t)D.nc)
        return "its variable vectors have the wrong sizes";
    if (n != fmu_state_bytes()) return "it is truncated or padded";
    const unsigned char *end = buf + n - 8;
    if (get_u64(&end) != fnv1a(buf, n - 8)) return "it is corrupted (checksum mismatch)";
    if (kind != (uint32_t)c->kind)
        return kind == FMU_ME ? "it is the state of a Model Exchange instance"
                              : "it is the state of a Co-Simulation instance";
    p += scalar_bytes();
    for (int i = 0; i < D.nvars; i++) {   /* pending codes are in range */
        const unsigned char r = p[8 * (size_t)D.nreal + (size_t)D.nboolean + (size_t)i];
        if (r > REJ_LAST) return "it is corrupted (pending code)";
    }
    return "";
}

static void load_state(Instance *c, const unsigned char *buf)
{
    const unsigned char *p = buf + STATE_HEADER;
#define GET_SCALAR(type, name, k) c->name = get_##type(&p);
    STATE_SCALARS(GET_SCALAR)
    for (int i = 0; i < D.nreal; i++) c->real[i] = get_f64(&p);
    for (int i = 0; i < D.nboolean; i++) c->boolean[i] = *p++ ? 1 : 0;
    memcpy(c->pending, p, (size_t)D.nvars);
    p += D.nvars;
    memcpy(c->problem, p, MSG);
    c->problem[MSG - 1] = '\0';
    p += MSG;
    for (int i = 0; i < 16 * D.nc; i++) c->anchors[i] = get_f64(&p);
    for (int j = 0; j < D.nc; j++) c->was_active[j] = *p++ ? 1 : 0;
    const int me = c->kind == FMU_ME;
    if (c->mode < INSTANTIATED || c->mode > CONTINUOUS || c->mode == (me ? STEPPING : CONTINUOUS))
        c->mode = TERMINATED;
    if (c->method < 0 || c->method >= SOA_NMETHODS) c->method = D.method;
    if (c->method_used < 0 || c->method_used >= SOA_AUTO) c->method_used = SOA_RK4;
    if (!(c->auto_step > 0.0)) c->auto_step = HUGE_VAL;       /* NaN, <= 0: no bound */
    c->failed_h = 0.0;
    if (!fmu_apply_parameters(c, NULL, 0)) c->built = 0;      /* the state's physical parameters */
    fmu_apply_gravity(c);
    c->energy_valid = c->poses_valid = c->gaps_valid = 0;
    c->jac_valid = 0;
    if (me) c->stale = 1;
}

static fmu_state *new_state(size_t n)
{
    fmu_state *b = malloc(sizeof(fmu_state) + n);
    if (b) b->size = n;
    return b;
}

/* *state: a new state, or one of this FMU's to overwrite. */
int fmu_get_state(Instance *c, fmu_state **state, const char *fn)
{
    fmu_state *b = *state;
    if (b && b->size != c->state_size) {
        fmu_log(c, FMU_ERROR, "%s: the state given to overwrite is not one of this FMU", fn);
        return FMU_ERROR;
    }
    if (!b && !(b = new_state(c->state_size))) {
        fmu_log(c, FMU_ERROR, "%s: out of memory", fn);
        return FMU_ERROR;
    }
    save_state(c, b->bytes);
    *state = b;
    return FMU_OK;
}

/* A state that is not one of this FMU's is refused (Error, naming why) and the instance is
 * left exactly as it was, usable. */
int fmu_set_state(Instance *c, const fmu_state *b, const char *fn)
{
    const char *problem = b ? state_problem(c, b->bytes, b->size) : "a NULL state";
    if (problem[0]) {
        fmu_log(c, FMU_ERROR, "%s was given an unusable state (%s); the instance is unchanged",
                fn, problem);
        return FMU_ERROR;
    }
    load_state(c, b->bytes);
    return FMU_OK;
}

/* A state holding a copy of the bytes; NULL (Error, logged naming why) when they are not a
 * state of this FMU, its model and this kind of instance (foreign, truncated, corrupted). */
fmu_state *fmu_state_from_bytes(Instance *c, const unsigned char *bytes, size_t size,
                                const char *fn)
{
    const char *problem = bytes || size == 0 ? state_problem(c, bytes, size) : "a NULL buffer";
    if (problem[0]) {
        fmu_log(c, FMU_ERROR, "%s was given an unusable state (%s); the instance is unchanged",
                fn, problem);
        return NULL;
    }
    fmu_state *b = new_state(size);
    if (!b) {
        fmu_log(c, FMU_ERROR, "%s: out of memory", fn);
        return NULL;
    }
    if (size) memcpy(b->bytes, bytes, size);
    return b;
}
