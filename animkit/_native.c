/* animkit._native: the kernels a process needs from its first call, compiled ahead of time (at install) so that no
 * JIT start-up stalls it. Each is a line-for-line port of a Python reference that numba compiles where this
 * extension was not built, and that tests hold it to, bit for bit:
 *   scan_frames: animkit.io.bvh._scan_frames, the BVH MOTION scanner;
 *   fk_frames:   animkit.fk._fk_frames, forward kinematics frame by frame;
 *   raster_loop: animkit.render.raster._raster_loop, the rasteriser's visibility (and flat paint);
 *   gif_index:   a GIF frame's palette indices through the writer's 15-bit colour LUT (animkit.render.writers);
 *   flat_shade:  animkit.render.shading._flat_colors, flat faces' Lambert shade times their colours;
 *   skin_frames: animkit.skin.skin_frames, linear-blend skinning (float64 bit for bit; float32 to its rounding);
 *   mm3:         animkit.motion.retarget_rest._mm3, stacks of 3x3 products (the retarget's and the leg IK's);
 *   polar_turns: animkit.motion.retarget_rest.rotation_part's fast path (det^(1/3), Newton-Schulz);
 *   retarget_turns: animkit.motion.retarget_drive.bone_turns_numpy, each driven bone's turn per frame (polar factor,
 *                rest product, shortest turn onto the source bone) in one pass;
 *   euler_read, turned_by: the retarget drive's reading of a joint's angles in its parent's frame and its world turn
 *                from them (animkit.motion.retarget_drive._drive_groups);
 *   leg_bend: animkit.motion.leg_ik.held_legs_ik's two-bone step (knee, thigh and shin turns) row by row;
 *   lowest_along: animkit.look.surface.lowest_along, the lowest of points along a direction per frame (the foot lock);
 *   lowest_about: animkit.look.surface.lowest_about, the same about an origin, the points point-major;
 *   unwrap_limits: animkit.motion.retarget_drive._unwrap_into_limits, angles unwrapped over frames into their limits;
 *   smooth_max:  animkit.motion.pelvis.smooth_max, a max filter then a mean filter (the pelvis's and a lift's bump);
 *   drift_means: animkit.motion.legs._drift, a contact's mean planted ground speed (the lock's never-worse judge);
 *   prio_step:   animkit.ik.prioritised.bounded_step, the natural solver's prioritised step (its levels' linear
 *                algebra and the inequality rows' active set) in one call; to NumPy's ~1e-15, not bit for bit;
 *   chain_fk:    animkit.ik.problem.ChainModel.forward for one configuration (the natural solver's every iteration);
 *   spread_turns: animkit.ik.spread.Spread.compute's joint groups (each joint's turn from rest, its Jacobian, less
 *                the group's mean); to NumPy's ~1e-15 (a polar factor by Newton's iteration, not an SVD);
 *   ranges_values: animkit.ik.ranges.Ranges.values (side bend, twist, pelvis roll, knees in and their rows);
 *   gaze_rows:   animkit.ik.tasks.Gaze.compute (the look-at rows, the head's level row).
 * Built with -ffp-contract=off: no fused multiply-add, so each product rounds as the reference's does.
 *
 * scan_frames: out[r, c] = float(token c of the r-th non-blank line of an ASCII buffer) * scale[c]. A token is
 * [+-]?(d+.?d*|.d+)([eE][+-]?d+)?; its
 * digits give an integer mantissa m < 2**53 and a decimal exponent e, and x = +-m * 10**e with |e| <= 22 is one
 * correctly rounded multiply or divide (Clinger's fast path), bit-identical to Python's float(). Returns 0 when
 * out (count x width) is filled exactly, -1 on anything else (the caller's exact path then reads or explains it).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const double POW10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
#define MANTISSA_LIMIT 9007199254740992ULL /* 2**53 */

static int is_sep(unsigned char c) { return c == 32 || c == 9 || c == 10 || c == 13; }

static long scan(const unsigned char *buf, Py_ssize_t n, double *out, Py_ssize_t count, Py_ssize_t width,
                 const double *scale) {
    Py_ssize_t i = 0, row = 0, col = 0;
    while (i < n) {
        unsigned char c = buf[i];
        if (c == 32 || c == 9) { i++; continue; }
        if (c == 10 || c == 13) {
            if (c == 13 && i + 1 < n && buf[i + 1] != 10) return -1;
            if (c == 10 && col != 0) {
                if (col != width) return -1;
                row++;
                col = 0;
            }
            i++;
            continue;
        }
        if (row >= count || col >= width) return -1;
        int negative = c == 45;
        if (c == 43 || c == 45) i++;
        Py_ssize_t token = i;
        uint64_t full = 0; /* the digits as written, point left out (wraps past 19 digits: then unused) */
        int nd = 0;
        int point = -1;
        while (i < n) {
            int d = (int)buf[i] - 48;
            if (0 <= d && d <= 9) { full = full * 10 + (uint64_t)d; nd++; }
            else if (d == -2 && point < 0) point = nd;
            else break;
            i++;
        }
        if (nd == 0) return -1;
        long exponent = point < 0 ? 0 : point - nd;
        if (i < n && (buf[i] == 101 || buf[i] == 69)) {
            i++;
            long sign = 1;
            if (i < n && (buf[i] == 43 || buf[i] == 45)) { sign = buf[i] == 45 ? -1 : 1; i++; }
            long power = 0;
            int exp_digits = 0;
            while (i < n && 48 <= buf[i] && buf[i] <= 57) {
                if (power < 100000) power = power * 10 + (buf[i] - 48);
                exp_digits++;
                i++;
            }
            if (exp_digits == 0) return -1;
            exponent += sign * power;
        }
        if (i < n && !is_sep(buf[i])) return -1;
        double value;
        if (nd <= 15 && -22 <= exponent && exponent <= 22) { /* full < 10**15 < 2**53: one rounding */
            if (full == 0) value = 0.0;
            else if (exponent >= 0) value = (double)full * POW10[exponent];
            else value = (double)full / POW10[-exponent];
        } else { /* the digits again, trailing zeros kept out of the mantissa */
            uint64_t mantissa = 0;
            long zeros = 0;
            for (Py_ssize_t j = token; j < n; j++) {
                int d = (int)buf[j] - 48;
                if (d == 0) zeros++;
                else if (0 < d && d <= 9) {
                    if (zeros != 0) {
                        if (mantissa != 0) {
                            for (long z = 0; z < zeros; z++) {
                                mantissa *= 10;
                                if (mantissa >= MANTISSA_LIMIT) return -1;
                            }
                        }
                        zeros = 0;
                    }
                    mantissa = mantissa * 10 + (uint64_t)d;
                    if (mantissa >= MANTISSA_LIMIT) return -1;
                } else if (d != -2) break;
            }
            exponent += zeros;
            if (mantissa == 0) value = 0.0;
            else if (0 <= exponent && exponent <= 22) value = (double)mantissa * POW10[exponent];
            else if (-22 <= exponent && exponent < 0) value = (double)mantissa / POW10[-exponent];
            else return -1;
        }
        out[row * width + col] = (negative ? -value : value) * scale[col];
        col++;
    }
    if (col != 0) {
        if (col != width) return -1;
        row++;
    }
    return row == count ? 0 : -1;
}

/* scan_frames(buf: bytes-like, out: writable C-contiguous float64 buffer (count*width), count, width,
 *             scale: float64 buffer (width)) -> 0 or -1. The GIL is released while scanning. */
static PyObject *scan_frames(PyObject *self, PyObject *args) {
    Py_buffer buf, out, scale;
    Py_ssize_t count, width;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*nny*", &buf, &out, &count, &width, &scale)) return NULL;
    long rc = -1;
    if (count >= 0 && width >= 0 && out.len == (Py_ssize_t)(count * width * (Py_ssize_t)sizeof(double))
            && scale.len == (Py_ssize_t)(width * (Py_ssize_t)sizeof(double))) {
        Py_BEGIN_ALLOW_THREADS
        rc = scan((const unsigned char *)buf.buf, buf.len, (double *)out.buf, count, width,
                  (const double *)scale.buf);
        Py_END_ALLOW_THREADS
    } else {
        PyErr_SetString(PyExc_ValueError, "scan_frames: out must hold count*width doubles, scale width doubles");
    }
    PyBuffer_Release(&buf);
    PyBuffer_Release(&out);
    PyBuffer_Release(&scale);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(rc);
}

/* fk_frames: M_i = M_parent(i) . L_i . E_i1(theta) ... E_ik(theta) frame by frame, nodes parents first; writes the
 * origins p_i (width 3) or each M_i row-major (width 16). The arrays are those animkit.fk._fk_frames documents. */
#define RR(i, r, k) R[((i) * 3 + (r)) * 3 + (k)]
#define LL(i, r, k) L[((i) * 4 + (r)) * 4 + (k)]
#define PP(i, r) p[(i) * 3 + (r)]
#define AX(d, k) axis[(d) * 3 + (k)]

static void fk(Py_ssize_t F, Py_ssize_t N, Py_ssize_t D, Py_ssize_t W, const double *tan_half, const double *theta,
               const Py_ssize_t *parent, const double *L, const unsigned char *rotated, const Py_ssize_t *first,
               const Py_ssize_t *kind, const Py_ssize_t *letter, const double *axis, double *out, double *R,
               double *p) {
    double K[3][3] = {{0}}, E[3][3];
    for (Py_ssize_t f = 0; f < F; f++) {
        for (Py_ssize_t i = 0; i < N; i++) {
            Py_ssize_t q = parent[i];
            for (int r = 0; r < 3; r++) {
                if (q < 0) {
                    for (int k = 0; k < 3; k++) RR(i, r, k) = LL(i, r, k);
                    PP(i, r) = LL(i, r, 3);
                    continue;
                }
                for (int k = 0; k < 3; k++)
                    RR(i, r, k) = rotated[i] ? RR(q, r, 0) * LL(i, 0, k) + RR(q, r, 1) * LL(i, 1, k)
                                                   + RR(q, r, 2) * LL(i, 2, k)
                                             : RR(q, r, k);
                PP(i, r) = (RR(q, r, 0) * LL(i, 0, 3) + RR(q, r, 1) * LL(i, 1, 3) + RR(q, r, 2) * LL(i, 2, 3))
                           + PP(q, r);
            }
            for (Py_ssize_t d = first[i]; d < first[i + 1]; d++) {
                double th = theta[f * D + d];
                Py_ssize_t a = letter[d];
                int revolute = kind[d] == 1;
                if (kind[d] == 2) { /* scale: R <- R (I + (theta - 1) a a^T) */
                    for (int r = 0; r < 3; r++) {
                        double ra = RR(i, r, 0) * AX(d, 0) + RR(i, r, 1) * AX(d, 1) + RR(i, r, 2) * AX(d, 2);
                        for (int k = 0; k < 3; k++) RR(i, r, k) += (th - 1.0) * ra * AX(d, k);
                    }
                } else if (revolute && a >= 0) { /* about a coordinate axis: cos, sin from tan(theta/2) */
                    Py_ssize_t j = (a + 1) % 3, k = (a + 2) % 3;
                    double t = tan_half[f * D + d];
                    double t2 = t * t;
                    double t1 = 1.0 / (1.0 + t2);
                    double cs = (1.0 - t2) * t1;
                    double sn = 2.0 * t * t1;
                    for (int r = 0; r < 3; r++) {
                        double cj = RR(i, r, j), ck = RR(i, r, k);
                        RR(i, r, j) = cj * cs + ck * sn;
                        RR(i, r, k) = ck * cs - cj * sn;
                    }
                } else if (revolute) { /* Rodrigues: E = I + s K + (1 - c) K^2 */
                    K[0][1] = -AX(d, 2); K[0][2] = AX(d, 1); K[1][2] = -AX(d, 0);
                    K[1][0] = AX(d, 2); K[2][0] = -AX(d, 1); K[2][1] = AX(d, 0);
                    double cs = cos(th), sn = sin(th);
                    for (int r = 0; r < 3; r++)
                        for (int k = 0; k < 3; k++) {
                            double K2 = K[r][0] * K[0][k] + K[r][1] * K[1][k] + K[r][2] * K[2][k];
                            E[r][k] = (r == k ? 1.0 : 0.0) + sn * K[r][k] + (1.0 - cs) * K2;
                        }
                    for (int r = 0; r < 3; r++) {
                        double r0 = RR(i, r, 0), r1 = RR(i, r, 1), r2 = RR(i, r, 2);
                        for (int k = 0; k < 3; k++) RR(i, r, k) = r0 * E[0][k] + r1 * E[1][k] + r2 * E[2][k];
                    }
                } else if (a >= 0) { /* prismatic along a coordinate axis */
                    for (int r = 0; r < 3; r++) PP(i, r) += RR(i, r, a) * th;
                } else {
                    for (int r = 0; r < 3; r++)
                        PP(i, r) += (RR(i, r, 0) * AX(d, 0) + RR(i, r, 1) * AX(d, 1) + RR(i, r, 2) * AX(d, 2)) * th;
                }
            }
            double *o = out + (f * N + i) * W;
            if (W == 16) {
                for (int r = 0; r < 3; r++) {
                    for (int k = 0; k < 3; k++) o[4 * r + k] = RR(i, r, k);
                    o[4 * r + 3] = PP(i, r);
                }
                o[12] = 0.0; o[13] = 0.0; o[14] = 0.0; o[15] = 1.0;
            } else {
                for (int r = 0; r < 3; r++) o[r] = PP(i, r);
            }
        }
    }
}

#undef RR
#undef LL
#undef PP
#undef AX

/* fk_frames(tan_half, theta, parent, L, rotated, first, kind, letter, axis, out, F, N, D, W) -> None: C-contiguous
 * buffers of float64 (tan_half, theta: F*D; L: N*16; axis: D*3; out: F*N*W, writable), intp (parent: N;
 * first: N+1; kind, letter: D) and bool (rotated: N), checked against F, N, D and W (3 or 16); the GIL is released
 * while it runs. The parents-first order and first[] within [0, D] are the caller's (animkit.fk) to keep. */
static PyObject *fk_frames(PyObject *self, PyObject *args) {
    Py_buffer b[10];
    Py_ssize_t F, N, D, W;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*w*nnnn", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &b[8], &b[9], &F, &N, &D, &W))
        return NULL;
    const Py_ssize_t f8 = sizeof(double), ip = sizeof(Py_ssize_t);
    const Py_ssize_t want[10] = {F * D * f8, F * D * f8, N * ip, N * 16 * f8, N, (N + 1) * ip, D * ip, D * ip,
                                 D * 3 * f8, F * N * W * f8};
    int ok = F >= 0 && N >= 0 && D >= 0 && (W == 3 || W == 16);
    for (int k = 0; ok && k < 10; k++) ok = b[k].len == want[k];
    double *scratch = ok ? PyMem_RawMalloc((size_t)(N * 12 + 1) * sizeof(double)) : NULL;
    if (!ok) PyErr_SetString(PyExc_ValueError, "fk_frames: a buffer's size does not match F, N, D and W");
    else if (scratch == NULL) PyErr_NoMemory();
    else {
        Py_BEGIN_ALLOW_THREADS
        fk(F, N, D, W, b[0].buf, b[1].buf, b[2].buf, b[3].buf, b[4].buf, b[5].buf, b[6].buf, b[7].buf, b[8].buf,
           b[9].buf, scratch, scratch + N * 9);
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(scratch);
    for (int k = 0; k < 10; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* gif_index(frame, lut, known, out, pending[, prev, prev_out]) -> (new, left): out[p] = lut[k(p)] for the 15-bit
 * colour k = r>>3 << 10 | g>>3 << 5 | b>>3 of each RGB pixel whose colour the LUT knows (known[k] == 1); each colour
 * it does not know is marked known[k] = 2 and counted (new), and the pixels of such colours are listed in
 * pending[0 .. left) (int32), for the caller to index once it has filled lut[k] and set known[k] = 1. The NumPy
 * reference is animkit.render.writers.GifWriter's code/take path. With prev (the frame before, RGB, as large) and
 * prev_out (its finished indices): a pixel whose colour is prev's there takes prev_out's index, the one the LUT
 * gives it (its colour was met and filled then; the LUT never changes a filled entry), so the same out; eight pixels
 * are compared at a time (24 bytes as three words), and a frame that moves a figure over a still backdrop reads
 * the LUT only where it moved. prev is left holding this frame (the pixels that changed copied in), for the next. */
static inline void gif_index_one(const unsigned char *c, const unsigned char *table, unsigned char *seen,
                                 unsigned char *ind, int *later, Py_ssize_t p, long *fresh, Py_ssize_t *left) {
    unsigned k = ((unsigned)(c[0] >> 3) << 10) | ((unsigned)(c[1] >> 3) << 5) | (unsigned)(c[2] >> 3);
    if (seen[k] == 1) { ind[p] = table[k]; return; }
    if (seen[k] == 0) { seen[k] = 2; (*fresh)++; }
    later[(*left)++] = (int)p;
}

static PyObject *gif_index(PyObject *self, PyObject *args) {
    Py_buffer frame, lut, known, out, pending, prev = {0}, prev_out = {0};
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*w*w*|w*y*", &frame, &lut, &known, &out, &pending, &prev, &prev_out))
        return NULL;
    long fresh = 0;
    Py_ssize_t n = out.len, left = 0;
    int since = prev.obj != NULL || prev_out.obj != NULL;
    if (frame.len != 3 * n || lut.len != 32768 || known.len != 32768 || pending.len != 4 * n
        || (since && (prev.len != 3 * n || prev_out.len != n))) {
        PyErr_SetString(PyExc_ValueError, "gif_index: frame (and prev) must hold 3 bytes per output pixel, "
                        "prev_out 1, pending 4, lut and known 32768");
    } else {
        const unsigned char *rgb = frame.buf, *table = lut.buf, *was_ind = prev_out.buf;
        unsigned char *was = prev.buf;
        unsigned char *seen = known.buf, *ind = out.buf;
        int *later = pending.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t p = 0;
        if (since) {
            for (; p + 8 <= n; p += 8) {
                uint64_t a[3], b[3];
                memcpy(a, rgb + 3 * p, 24);
                memcpy(b, was + 3 * p, 24);
                if (((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2])) == 0) {
                    memcpy(ind + p, was_ind + p, 8);
                    continue;
                }
                for (Py_ssize_t q = p; q < p + 8; q++) {
                    const unsigned char *c = rgb + 3 * q, *d = was + 3 * q;
                    if (c[0] == d[0] && c[1] == d[1] && c[2] == d[2]) ind[q] = was_ind[q];
                    else gif_index_one(c, table, seen, ind, later, q, &fresh, &left);
                }
                memcpy(was + 3 * p, a, 24);
            }
            for (; p < n; p++) {
                const unsigned char *c = rgb + 3 * p;
                unsigned char *d = was + 3 * p;
                if (c[0] == d[0] && c[1] == d[1] && c[2] == d[2]) { ind[p] = was_ind[p]; continue; }
                gif_index_one(c, table, seen, ind, later, p, &fresh, &left);
                memcpy(d, c, 3);
            }
        }
        for (; p < n; p++) gif_index_one(rgb + 3 * p, table, seen, ind, later, p, &fresh, &left);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&frame);
    PyBuffer_Release(&lut);
    PyBuffer_Release(&known);
    PyBuffer_Release(&out);
    PyBuffer_Release(&pending);
    PyBuffer_Release(&prev);
    PyBuffer_Release(&prev_out);
    if (PyErr_Occurred()) return NULL;
    return Py_BuildValue("ln", fresh, left);
}

/* raster_loop: animkit.render.raster._raster_loop, triangle by triangle: each row's run of pixels from the three
 * edge functions, the depth test on w = 1/d (float32), and per winning fragment the triangle row in fbuf or, with
 * paint, its colour in flat. Arguments: x0, y0, x1, y1 (T int64), A, B, C (T*3 float64), WA, WB, WC (T float64),
 * W, zbuf (float32, writable), fbuf (int32, writable; unused with paint), colors (T*3 uint8), flat (uint8 RGB,
 * writable; unused without paint), paint, zx, zy, zw. Fragments outside zbuf / flat are skipped (the caller's set-up
 * never makes them). */
static PyObject *raster_loop(PyObject *self, PyObject *args) {
    Py_buffer b[14];
    Py_ssize_t W, zx, zy, zw;
    int paint;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*nw*w*y*w*pnnn", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5],
                          &b[6], &b[7], &b[8], &b[9], &W, &b[10], &b[11], &b[12], &b[13], &paint, &zx, &zy, &zw))
        return NULL;
    const Py_ssize_t T = b[0].len / 8, nz = b[10].len / 4, nf = b[11].len / 4, np3 = b[13].len / 3;
    int ok = b[1].len == T * 8 && b[2].len == T * 8 && b[3].len == T * 8 && b[4].len == T * 24 && b[5].len == T * 24
             && b[6].len == T * 24 && b[7].len == T * 8 && b[8].len == T * 8 && b[9].len == T * 8
             && (!paint || b[12].len >= T * 3) && (paint || nf == nz) && W > 0 && zw > 0;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "raster_loop: the triangle arrays' sizes disagree");
    } else {
        const int64_t *x0 = b[0].buf, *y0 = b[1].buf, *x1 = b[2].buf, *y1 = b[3].buf;
        const double *A = b[4].buf, *B = b[5].buf, *C = b[6].buf, *WA = b[7].buf, *WB = b[8].buf, *WC = b[9].buf;
        float *zbuf = b[10].buf;
        int32_t *fbuf = b[11].buf;
        const unsigned char *colors = b[12].buf;
        unsigned char *flat = b[13].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t t = 0; t < T; t++) {
            double wa = WA[t], wb = WB[t], wc = WC[t];
            double bw = (double)(x1[t] - x0[t]);
            for (int64_t ry = 0; ry < y1[t] - y0[t] + 1; ry++) {
                double fy = (double)ry, lo = 0.0, hi = bw;
                for (int i = 0; i < 3; i++) {
                    double a = A[t * 3 + i];
                    double r = B[t * 3 + i] * fy + C[t * 3 + i];
                    if (a > 0) {
                        double c = ceil(-r / a);
                        if (c > lo) lo = c;
                    } else if (a < 0) {
                        double c = floor(-r / a);
                        if (c < hi) hi = c;
                    } else if (r < 0) {
                        hi = -1.0;
                    }
                }
                if (lo > hi) continue;
                int64_t row = (y0[t] + ry) * W + x0[t];
                int64_t zrow = (y0[t] + ry - zy) * zw + x0[t] - zx;
                double w0 = wc + wb * fy;
                for (int64_t rx = (int64_t)lo; rx < (int64_t)hi + 1; rx++) {
                    float w = (float)(w0 + wa * (double)rx);
                    int64_t z = zrow + rx;
                    if (z < 0 || z >= nz) continue;
                    if (w > zbuf[z] && w > 0) {
                        zbuf[z] = w;
                        if (paint) {
                            int64_t p = row + rx;
                            if (p < 0 || p >= np3) continue;
                            flat[3 * p] = colors[3 * t];
                            flat[3 * p + 1] = colors[3 * t + 1];
                            flat[3 * p + 2] = colors[3 * t + 2];
                        } else {
                            fbuf[z] = (int32_t)t;
                        }
                    }
                }
            }
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 14; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* skin_frames(S, P, out, F, V, J, K, points, stream, fused) -> None: animkit.skin.skin_frames (the reference loop),
 * linear-blend skinning
 *   out[f, v] = sum_k w_vk * S[f, j_vk] (x_v, 1)    (points; normals: the 3x3 blocks on x_v, then normalised)
 * for S (F, J, 3, 4) float64 and the mesh packed once by animkit.skin.pack_influences (P: x (V, 3) and w (V, K) in the
 * output's type, 12 j (V, K) int32 and the count n (V,) int32 of each vertex's nonzero weights, those first and in
 * order), into out (F, V, 3) float64 or float32 (told apart by out's size). float64: each lane runs the reference's
 * operations in its order, the same bits; float32: the same sum in float32 (S, x and w rounded first).
 * How: lanes over frames. S is laid out once per call as M[chunk][j][12] vectors of L frames (L = 8 float32 or
 * 4 float64 values, 32 bytes), so a vertex's influences are the same joints in every lane. Chunk by chunk (its
 * J * 12 vectors stay in L1), the packed vertices go through in tiles of SKIN_TILE; a tile's lanes are transposed in
 * registers and stored straight into the output's frame rows (cached stores, interleaved with the arithmetic), or,
 * for the tile at the end, a chunk short of L frames, and with stream, into a staging block. With stream (the caller's
 * choice: cached stores measured faster here even at 144 MB, in this order) each frame
 * row is written front to back in whole 64-byte lines with non-temporal stores, the part line at a tile's end held
 * back for the next tile (a line written in two non-temporal pieces costs the memory a read-modify-write; that, and
 * the vertex data read and converted per call, was a fifth of the time on outputs past the caches); only a row's first
 * and last line are cached stores. gcc's vector extension gives SSE2 code in the default build and AVX2 in the avx2
 * clone (no FMA: -ffp-contract=off; checked: the clones write identical bytes); float32 on CPUs with FMA runs
 * skin_f32_fma. Measured and dropped: one influence count per tile (zero-weight padding; slower on CesiumMan's 1-4
 * influences), pre-weighted vectors in float32 (no faster), non-temporal pieces every 8-16 vertices between the
 * arithmetic (slower than a tile's rows at once), tiles of vertices outside chunks of frames (the order before:
 * every tile's rows split in part lines). */
#ifdef __GNUC__
typedef float skin_v8f __attribute__((vector_size(32)));
typedef double skin_v4d __attribute__((vector_size(32)));
typedef float skin_v4f __attribute__((vector_size(16)));

/* Frames i of a chunk from its x, y, z lanes: (x_i, y_i, z_i, z_i) to o + i * row, four values each (the fourth lands
 * on the next vertex's x, written after it; the caller keeps the last vertex of all away). In-lane shuffles only. */
static inline __attribute__((always_inline)) void skin_put_f32(float *o, Py_ssize_t row, skin_v8f x, skin_v8f y,
                                                                skin_v8f z) {
    skin_v8f xy0 = __builtin_shufflevector(x, y, 0, 8, 1, 9, 4, 12, 5, 13);
    skin_v8f xy1 = __builtin_shufflevector(x, y, 2, 10, 3, 11, 6, 14, 7, 15);
    skin_v8f zz0 = __builtin_shufflevector(z, z, 0, 0, 1, 1, 4, 4, 5, 5);
    skin_v8f zz1 = __builtin_shufflevector(z, z, 2, 2, 3, 3, 6, 6, 7, 7);
    skin_v8f f0 = __builtin_shufflevector(xy0, zz0, 0, 1, 8, 9, 4, 5, 12, 13);
    skin_v8f f1 = __builtin_shufflevector(xy0, zz0, 2, 3, 10, 11, 6, 7, 14, 15);
    skin_v8f f2 = __builtin_shufflevector(xy1, zz1, 0, 1, 8, 9, 4, 5, 12, 13);
    skin_v8f f3 = __builtin_shufflevector(xy1, zz1, 2, 3, 10, 11, 6, 7, 14, 15);
#define SKIN_PUT4(I, V)                                                                                               \
    do {                                                                                                            \
        skin_v4f lo = __builtin_shufflevector(V, V, 0, 1, 2, 3), hi = __builtin_shufflevector(V, V, 4, 5, 6, 7);    \
        memcpy(o + (I) * row, &lo, 16);                                                                             \
        memcpy(o + ((I) + 4) * row, &hi, 16);                                                                       \
    } while (0)
    SKIN_PUT4(0, f0);
    SKIN_PUT4(1, f1);
    SKIN_PUT4(2, f2);
    SKIN_PUT4(3, f3);
#undef SKIN_PUT4
}

static inline __attribute__((always_inline)) void skin_put_f64(double *o, Py_ssize_t row, skin_v4d x, skin_v4d y,
                                                                skin_v4d z) {
    skin_v4d xy0 = __builtin_shufflevector(x, y, 0, 4, 2, 6), xy1 = __builtin_shufflevector(x, y, 1, 5, 3, 7);
    skin_v4d zz0 = __builtin_shufflevector(z, z, 0, 0, 2, 2), zz1 = __builtin_shufflevector(z, z, 1, 1, 3, 3);
    skin_v4d f0 = __builtin_shufflevector(xy0, zz0, 0, 1, 4, 5), f1 = __builtin_shufflevector(xy1, zz1, 0, 1, 4, 5);
    skin_v4d f2 = __builtin_shufflevector(xy0, zz0, 2, 3, 6, 7), f3 = __builtin_shufflevector(xy1, zz1, 2, 3, 6, 7);
    memcpy(o, &f0, 32);
    memcpy(o + row, &f1, 32);
    memcpy(o + 2 * row, &f2, 32);
    memcpy(o + 3 * row, &f3, 32);
}
#define SKIN_TILE 128
#if defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define SKIN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define SKIN_CLONES
#endif

typedef struct {
    const double *S;
    const void *x, *w;
    const int32_t *jo, *n;
    Py_ssize_t F, V, J, K;
    int points, stream, fused;
} skin_args;

/* A frame row's values [from, to) from src to dst (both indexed from the row's start), in whole 64-byte lines of dst
 * with non-temporal 16-byte stores (no read of the destination's lines, no eviction of the caller's cache: for
 * outputs far larger than the caches); a part line before the first whole one by cached stores. Returns how far it
 * wrote: to with last (a part line at the end by cached stores too), else the last line boundary at or before to. */
#define SKIN_LINES(NAME, T, ATTR, LINE)                                                                              \
    static inline __attribute__((always_inline)) ATTR Py_ssize_t NAME(T *dst, const T *src, Py_ssize_t from,         \
                                                                      Py_ssize_t to, int last) {                     \
        Py_ssize_t e = last ? to : (T *)((uintptr_t)(dst + to) & ~(uintptr_t)63) - dst, i = from;                    \
        if (e <= from) return from;                                                                                 \
        Py_ssize_t h = (T *)(((uintptr_t)(dst + i) + 63) & ~(uintptr_t)63) - dst;                                    \
        if (h > e) h = e;                                                                                           \
        memcpy(dst + i, src + i, (size_t)(h - i) * sizeof(T));                                                      \
        for (i = h; i + 64 / (Py_ssize_t)sizeof(T) <= e; i += 64 / (Py_ssize_t)sizeof(T)) LINE(dst + i, src + i);   \
        memcpy(dst + i, src + i, (size_t)(e - i) * sizeof(T));                                                      \
        return e;                                                                                                   \
    }
#ifdef __SSE2__
#include <emmintrin.h>
#define SKIN_LINE_PS(D, S)                                                                                          \
    do {                                                                                                            \
        _mm_stream_ps(D, _mm_loadu_ps(S));                                                                          \
        _mm_stream_ps((D) + 4, _mm_loadu_ps((S) + 4));                                                              \
        _mm_stream_ps((D) + 8, _mm_loadu_ps((S) + 8));                                                              \
        _mm_stream_ps((D) + 12, _mm_loadu_ps((S) + 12));                                                            \
    } while (0)
#define SKIN_LINE_PD(D, S)                                                                                          \
    do {                                                                                                            \
        _mm_stream_pd(D, _mm_loadu_pd(S));                                                                          \
        _mm_stream_pd((D) + 2, _mm_loadu_pd((S) + 2));                                                              \
        _mm_stream_pd((D) + 4, _mm_loadu_pd((S) + 4));                                                              \
        _mm_stream_pd((D) + 6, _mm_loadu_pd((S) + 6));                                                              \
    } while (0)
SKIN_LINES(skin_lines_f32, float, , SKIN_LINE_PS)
SKIN_LINES(skin_lines_f64, double, , SKIN_LINE_PD)
#define SKIN_SFENCE() _mm_sfence()
#else
#define SKIN_LINE_COPY(D, S) memcpy(D, S, 64)
SKIN_LINES(skin_lines_f32, float, , SKIN_LINE_COPY)
SKIN_LINES(skin_lines_f64, double, , SKIN_LINE_COPY)
#define SKIN_SFENCE()
#endif
#define SKIN_PAD 16 /* values before a staged tile: room for the part line held back (< 64 bytes) */

/* One tile of vertices, one chunk of L frames: the tile's compacted influences (tn[v] of them: tw weights, tj offsets
 * of joints in Mc) on rest vectors tx, lane i of the result to stage[i * srow + 3 v + 0..2]. */
#define SKIN_CHUNK(NAME, T, VT, L, PUT)                                                                              \
    static inline __attribute__((always_inline)) void NAME(const VT *Mc, Py_ssize_t nv, Py_ssize_t K, int points,    \
                                                           const T *tx, const T *tw, const int32_t *tj,             \
                                                           const int32_t *tn, T *stage, Py_ssize_t srow) {          \
        for (Py_ssize_t v = 0; v < nv; v++) {                                                                       \
            const T x = tx[3 * v], y = tx[3 * v + 1], z = tx[3 * v + 2];                                            \
            const T *w = tw + v * K;                                                                                \
            const int32_t *jo = tj + v * K;                                                                         \
            VT a0 = {0}, a1 = {0}, a2 = {0};                                                                        \
            if (points) {                                                                                           \
                for (int32_t k = 0; k < tn[v]; k++) {                                                               \
                    const VT *m = Mc + jo[k];                                                                       \
                    a0 += w[k] * (m[0] * x + m[1] * y + m[2] * z + m[3]);                                           \
                    a1 += w[k] * (m[4] * x + m[5] * y + m[6] * z + m[7]);                                           \
                    a2 += w[k] * (m[8] * x + m[9] * y + m[10] * z + m[11]);                                         \
                }                                                                                                   \
            } else {                                                                                                \
                for (int32_t k = 0; k < tn[v]; k++) {                                                               \
                    const VT *m = Mc + jo[k];                                                                       \
                    a0 += w[k] * (m[0] * x + m[1] * y + m[2] * z);                                                  \
                    a1 += w[k] * (m[4] * x + m[5] * y + m[6] * z);                                                  \
                    a2 += w[k] * (m[8] * x + m[9] * y + m[10] * z);                                                 \
                }                                                                                                   \
                for (int i = 0; i < L; i++) {                                                                       \
                    T len = (T)sqrt((double)(a0[i] * a0[i] + a1[i] * a1[i] + a2[i] * a2[i]));                       \
                    if (len > 0) { a0[i] /= len; a1[i] /= len; a2[i] /= len; }                                      \
                }                                                                                                   \
            }                                                                                                       \
            PUT(stage + 3 * v, srow, a0, a1, a2);                                                                   \
        }                                                                                                           \
    }

/* The whole call: M from S (lane i of chunk c = frame c L + i; spare lanes 0), then chunk by chunk and tile by tile:
 * skin the tile straight into the chunk's frame rows, or into stage (SKIN_PAD values in, each row's held-back part
 * line just before) and write its rows from there. */
#define SKIN_KERNEL(NAME, T, VT, L, CHUNK, HALF, HALVES, LINES, ATTR)                                                              \
    static ATTR void NAME(const skin_args *a, T *out, VT *M, T *stage) {                                            \
        const Py_ssize_t F = a->F, V = a->V, J = a->J, K = a->K, C = (F + L - 1) / L, row = V * 3;                 \
        const Py_ssize_t srow = SKIN_PAD + SKIN_TILE * 3 + SKIN_PAD;                                                \
        const T *tx = a->x, *tw = a->w;                                                                             \
        if (C > 0) memset(M + (C - 1) * J * 12, 0, (size_t)(J * 12) * sizeof(VT));                                 \
        for (Py_ssize_t f = 0; f < F; f++) {                                                                        \
            T *m = (T *)(M + f / L * J * 12) + f % L;                                                               \
            for (Py_ssize_t jj = 0; jj < J * 12; jj++) m[jj * L] = (T)a->S[f * J * 12 + jj];                        \
        }                                                                                                           \
        for (Py_ssize_t c = 0; c < C; c++) {                                                                        \
            const Py_ssize_t nf = F - c * L < L ? F - c * L : L;                                                    \
            Py_ssize_t done[L];                                                                                     \
            for (Py_ssize_t i = 0; i < L; i++) done[i] = 0;                                                         \
            for (Py_ssize_t v0 = 0; v0 < V; v0 += SKIN_TILE) {                                                      \
                const Py_ssize_t nv = V - v0 < SKIN_TILE ? V - v0 : SKIN_TILE, end = (v0 + nv) * 3;                 \
                const int last = v0 + nv >= V;                                                                      \
                if (!a->stream && nf == L && !last) {                                                               \
                    CHUNK(M + c * J * 12, nv, K, a->points, tx + 3 * v0, tw + v0 * K, a->jo + v0 * K, a->n + v0,    \
                          out + c * L * row + v0 * 3, row);                                                         \
                    continue;                                                                                       \
                }                                                                                                   \
                if (HALVES && 2 * nf <= L)                                                                          \
                    HALF(M + c * J * 12, nv, K, a->points, tx + 3 * v0, tw + v0 * K, a->jo + v0 * K, a->n + v0,     \
                         stage + SKIN_PAD, srow);                                                                   \
                else                                                                                                \
                    CHUNK(M + c * J * 12, nv, K, a->points, tx + 3 * v0, tw + v0 * K, a->jo + v0 * K, a->n + v0,    \
                          stage + SKIN_PAD, srow);                                                                  \
                for (Py_ssize_t i = 0; i < nf; i++) {                                                               \
                    T *s = stage + i * srow, *p = s + SKIN_PAD - v0 * 3, *o = out + (c * L + i) * row;              \
                    if (!a->stream) {                                                                               \
                        memcpy(o + v0 * 3, p + v0 * 3, (size_t)(nv * 3) * sizeof(T));                               \
                        continue;                                                                                   \
                    }                                                                                               \
                    const Py_ssize_t e = LINES(o, p, done[i], end, last);                                           \
                    memmove(s + SKIN_PAD - (end - e), p + e, (size_t)(end - e) * sizeof(T));                        \
                    done[i] = e;                                                                                    \
                }                                                                                                   \
            }                                                                                                       \
        }                                                                                                           \
        if (a->stream) SKIN_SFENCE();                                                                               \
    }

SKIN_CHUNK(skin_chunk_f32, float, skin_v8f, 8, skin_put_f32)
SKIN_CHUNK(skin_chunk_f64, double, skin_v4d, 4, skin_put_f64)
SKIN_KERNEL(skin_f32, float, skin_v8f, 8, skin_chunk_f32, skin_chunk_f32, 0, skin_lines_f32, SKIN_CLONES)
SKIN_KERNEL(skin_f64, double, skin_v4d, 4, skin_chunk_f64, skin_chunk_f64, 0, skin_lines_f64, SKIN_CLONES)

/* float32 on x86-64 CPUs with AVX2 and FMA (picked at run time): each row of an influence as three fused
 * multiply-adds onto the translation and one more for its weight, a += w * (m0 x + m1 y + m2 z + m3): 12 FMAs per
 * influence and 8 frames instead of 15 products and 12 sums, which is what bounded the kernel (the multiply pipes).
 * Fewer roundings than the plain float32 path (same error bound); float64 keeps the reference's separate ones. */
#if defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#include <immintrin.h>
#define SKIN_FMA 1
#define SKIN_FMA_ATTR __attribute__((target("avx2,fma")))
static inline __attribute__((always_inline)) SKIN_FMA_ATTR void
skin_chunk_f32_fma(const skin_v8f *Mc, Py_ssize_t nv, Py_ssize_t K, int points, const float *tx, const float *tw,
                   const int32_t *tj, const int32_t *tn, float *stage, Py_ssize_t srow) {
#define SKIN_FMA_POINT(A0, A1, A2, JO, W, X, Y, Z)                                                                   \
    do {                                                                                                            \
        const __m256 *m = (const __m256 *)(Mc + (JO)), wk = _mm256_broadcast_ss(W);                                 \
        A0 = _mm256_fmadd_ps(wk, _mm256_fmadd_ps(m[2], Z, _mm256_fmadd_ps(m[1], Y, _mm256_fmadd_ps(m[0], X, m[3]))), A0); \
        A1 = _mm256_fmadd_ps(wk, _mm256_fmadd_ps(m[6], Z, _mm256_fmadd_ps(m[5], Y, _mm256_fmadd_ps(m[4], X, m[7]))), A1); \
        A2 = _mm256_fmadd_ps(wk, _mm256_fmadd_ps(m[10], Z, _mm256_fmadd_ps(m[9], Y, _mm256_fmadd_ps(m[8], X, m[11]))), A2); \
    } while (0)
    Py_ssize_t v = 0;
    for (; points && v + 1 < nv; v += 2) { /* two vertices at once: twice the independent chains in flight */
        const float *p = tx + 3 * v, *w = tw + v * K;
        const int32_t *jo = tj + v * K, n0 = tn[v], n1 = tn[v + 1], n = n0 < n1 ? n0 : n1;
        const __m256 x = _mm256_set1_ps(p[0]), y = _mm256_set1_ps(p[1]), z = _mm256_set1_ps(p[2]);
        const __m256 x1 = _mm256_set1_ps(p[3]), y1 = _mm256_set1_ps(p[4]), z1 = _mm256_set1_ps(p[5]);
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, b0 = a0, b1 = a0, b2 = a0;
        int32_t k = 0;
        for (; k < n; k++) {
            SKIN_FMA_POINT(a0, a1, a2, jo[k], w + k, x, y, z);
            SKIN_FMA_POINT(b0, b1, b2, jo[K + k], w + K + k, x1, y1, z1);
        }
        for (int32_t i = k; i < n0; i++) SKIN_FMA_POINT(a0, a1, a2, jo[i], w + i, x, y, z);
        for (int32_t i = k; i < n1; i++) SKIN_FMA_POINT(b0, b1, b2, jo[K + i], w + K + i, x1, y1, z1);
        skin_put_f32(stage + 3 * v, srow, (skin_v8f)a0, (skin_v8f)a1, (skin_v8f)a2);
        skin_put_f32(stage + 3 * v + 3, srow, (skin_v8f)b0, (skin_v8f)b1, (skin_v8f)b2);
    }
    for (; v < nv; v++) {
        const __m256 x = _mm256_set1_ps(tx[3 * v]), y = _mm256_set1_ps(tx[3 * v + 1]), z = _mm256_set1_ps(tx[3 * v + 2]);
        const float *w = tw + v * K;
        const int32_t *jo = tj + v * K;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0;
        if (points) {
            for (int32_t k = 0; k < tn[v]; k++) SKIN_FMA_POINT(a0, a1, a2, jo[k], w + k, x, y, z);
        } else {
            for (int32_t k = 0; k < tn[v]; k++) {
                const __m256 *m = (const __m256 *)(Mc + jo[k]), wk = _mm256_broadcast_ss(w + k);
                a0 = _mm256_fmadd_ps(wk, _mm256_fmadd_ps(m[2], z, _mm256_fmadd_ps(m[1], y, _mm256_mul_ps(m[0], x))), a0);
                a1 = _mm256_fmadd_ps(wk, _mm256_fmadd_ps(m[6], z, _mm256_fmadd_ps(m[5], y, _mm256_mul_ps(m[4], x))), a1);
                a2 = _mm256_fmadd_ps(wk, _mm256_fmadd_ps(m[10], z, _mm256_fmadd_ps(m[9], y, _mm256_mul_ps(m[8], x))), a2);
            }
            const __m256 len = _mm256_sqrt_ps(_mm256_fmadd_ps(a2, a2, _mm256_fmadd_ps(a1, a1, _mm256_mul_ps(a0, a0))));
            const __m256 pos = _mm256_cmp_ps(len, _mm256_setzero_ps(), _CMP_GT_OQ);
            const __m256 d = _mm256_blendv_ps(_mm256_set1_ps(1.0f), len, pos);
            a0 = _mm256_div_ps(a0, d);
            a1 = _mm256_div_ps(a1, d);
            a2 = _mm256_div_ps(a2, d);
        }
        skin_put_f32(stage + 3 * v, srow, (skin_v8f)a0, (skin_v8f)a1, (skin_v8f)a2);
    }
#undef SKIN_FMA_POINT
}
/* Four frames' lanes: (x_i, y_i, z_i, z_i) to o + i * row, as skin_put_f32 does for eight. */
static inline __attribute__((always_inline)) void skin_put4_f32(float *o, Py_ssize_t row, skin_v4f x, skin_v4f y,
                                                                 skin_v4f z) {
    skin_v4f xy0 = __builtin_shufflevector(x, y, 0, 4, 2, 6), xy1 = __builtin_shufflevector(x, y, 1, 5, 3, 7);
    skin_v4f zz0 = __builtin_shufflevector(z, z, 0, 0, 2, 2), zz1 = __builtin_shufflevector(z, z, 1, 1, 3, 3);
    skin_v4f f0 = __builtin_shufflevector(xy0, zz0, 0, 1, 4, 5), f1 = __builtin_shufflevector(xy1, zz1, 0, 1, 4, 5);
    skin_v4f f2 = __builtin_shufflevector(xy0, zz0, 2, 3, 6, 7), f3 = __builtin_shufflevector(xy1, zz1, 2, 3, 6, 7);
    memcpy(o, &f0, 16);
    memcpy(o + row, &f1, 16);
    memcpy(o + 2 * row, &f2, 16);
    memcpy(o + 3 * row, &f3, 16);
}
/* The same on the first four lanes of each vector: a last chunk of at most four frames (60 frames: the eighth chunk)
 * in half the arithmetic. Written from skin_chunk_f32_fma with 128-bit vectors. */
static inline __attribute__((always_inline)) SKIN_FMA_ATTR void
skin_chunk_f32_fma4(const skin_v8f *Mc, Py_ssize_t nv, Py_ssize_t K, int points, const float *tx, const float *tw,
                   const int32_t *tj, const int32_t *tn, float *stage, Py_ssize_t srow) {
#define SKIN_FMA4_POINT(A0, A1, A2, JO, W, X, Y, Z)                                                                   \
    do {                                                                                                            \
        const float *m = (const float *)(Mc + (JO));                                                                \
        const __m128 wk = _mm_broadcast_ss(W);                                                                      \
        A0 = _mm_fmadd_ps(wk, _mm_fmadd_ps(_mm_load_ps(m + 8 * 2), Z, _mm_fmadd_ps(_mm_load_ps(m + 8 * 1), Y, _mm_fmadd_ps(_mm_load_ps(m + 8 * 0), X, _mm_load_ps(m + 8 * 3)))), A0); \
        A1 = _mm_fmadd_ps(wk, _mm_fmadd_ps(_mm_load_ps(m + 8 * 6), Z, _mm_fmadd_ps(_mm_load_ps(m + 8 * 5), Y, _mm_fmadd_ps(_mm_load_ps(m + 8 * 4), X, _mm_load_ps(m + 8 * 7)))), A1); \
        A2 = _mm_fmadd_ps(wk, _mm_fmadd_ps(_mm_load_ps(m + 8 * 10), Z, _mm_fmadd_ps(_mm_load_ps(m + 8 * 9), Y, _mm_fmadd_ps(_mm_load_ps(m + 8 * 8), X, _mm_load_ps(m + 8 * 11)))), A2); \
    } while (0)
    Py_ssize_t v = 0;
    for (; points && v + 1 < nv; v += 2) { /* two vertices at once: twice the independent chains in flight */
        const float *p = tx + 3 * v, *w = tw + v * K;
        const int32_t *jo = tj + v * K, n0 = tn[v], n1 = tn[v + 1], n = n0 < n1 ? n0 : n1;
        const __m128 x = _mm_set1_ps(p[0]), y = _mm_set1_ps(p[1]), z = _mm_set1_ps(p[2]);
        const __m128 x1 = _mm_set1_ps(p[3]), y1 = _mm_set1_ps(p[4]), z1 = _mm_set1_ps(p[5]);
        __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, b0 = a0, b1 = a0, b2 = a0;
        int32_t k = 0;
        for (; k < n; k++) {
            SKIN_FMA4_POINT(a0, a1, a2, jo[k], w + k, x, y, z);
            SKIN_FMA4_POINT(b0, b1, b2, jo[K + k], w + K + k, x1, y1, z1);
        }
        for (int32_t i = k; i < n0; i++) SKIN_FMA4_POINT(a0, a1, a2, jo[i], w + i, x, y, z);
        for (int32_t i = k; i < n1; i++) SKIN_FMA4_POINT(b0, b1, b2, jo[K + i], w + K + i, x1, y1, z1);
        skin_put4_f32(stage + 3 * v, srow, (skin_v4f)a0, (skin_v4f)a1, (skin_v4f)a2);
        skin_put4_f32(stage + 3 * v + 3, srow, (skin_v4f)b0, (skin_v4f)b1, (skin_v4f)b2);
    }
    for (; v < nv; v++) {
        const __m128 x = _mm_set1_ps(tx[3 * v]), y = _mm_set1_ps(tx[3 * v + 1]), z = _mm_set1_ps(tx[3 * v + 2]);
        const float *w = tw + v * K;
        const int32_t *jo = tj + v * K;
        __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0;
        if (points) {
            for (int32_t k = 0; k < tn[v]; k++) SKIN_FMA4_POINT(a0, a1, a2, jo[k], w + k, x, y, z);
        } else {
            for (int32_t k = 0; k < tn[v]; k++) {
                const float *m = (const float *)(Mc + jo[k]);
                const __m128 wk = _mm_broadcast_ss(w + k);
                a0 = _mm_fmadd_ps(wk, _mm_fmadd_ps(_mm_load_ps(m + 8 * 2), z, _mm_fmadd_ps(_mm_load_ps(m + 8 * 1), y, _mm_mul_ps(_mm_load_ps(m + 8 * 0), x))), a0);
                a1 = _mm_fmadd_ps(wk, _mm_fmadd_ps(_mm_load_ps(m + 8 * 6), z, _mm_fmadd_ps(_mm_load_ps(m + 8 * 5), y, _mm_mul_ps(_mm_load_ps(m + 8 * 4), x))), a1);
                a2 = _mm_fmadd_ps(wk, _mm_fmadd_ps(_mm_load_ps(m + 8 * 10), z, _mm_fmadd_ps(_mm_load_ps(m + 8 * 9), y, _mm_mul_ps(_mm_load_ps(m + 8 * 8), x))), a2);
            }
            const __m128 len = _mm_sqrt_ps(_mm_fmadd_ps(a2, a2, _mm_fmadd_ps(a1, a1, _mm_mul_ps(a0, a0))));
            const __m128 pos = _mm_cmp_ps(len, _mm_setzero_ps(), _CMP_GT_OQ);
            const __m128 d = _mm_blendv_ps(_mm_set1_ps(1.0f), len, pos);
            a0 = _mm_div_ps(a0, d);
            a1 = _mm_div_ps(a1, d);
            a2 = _mm_div_ps(a2, d);
        }
        skin_put4_f32(stage + 3 * v, srow, (skin_v4f)a0, (skin_v4f)a1, (skin_v4f)a2);
    }
#undef SKIN_FMA4_POINT
}
#define SKIN_LINE_PS32(D, S)                                                                                        \
    do {                                                                                                            \
        _mm256_stream_ps(D, _mm256_loadu_ps(S));                                                                    \
        _mm256_stream_ps((D) + 8, _mm256_loadu_ps((S) + 8));                                                        \
    } while (0)
SKIN_LINES(skin_lines_f32_avx, float, SKIN_FMA_ATTR, SKIN_LINE_PS32) /* 32-byte stores: 2-5 % faster than 16 */
SKIN_KERNEL(skin_f32_fma, float, skin_v8f, 8, skin_chunk_f32_fma, skin_chunk_f32_fma4, 1, skin_lines_f32_avx,
            SKIN_FMA_ATTR)
#endif

static PyObject *skin_frames(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    skin_args a;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*nnnnppp", &b[0], &b[1], &b[2], &a.F, &a.V, &a.J, &a.K, &a.points, &a.stream,
                          &a.fused))
        return NULL;
    const Py_ssize_t n = a.F * a.V * 3, per = a.V * (3 + a.K), ints = a.V * (a.K + 1) * 4;
    const Py_ssize_t size = n > 0 ? b[2].len / n : per > 0 && b[1].len > ints ? (b[1].len - ints) / per : 4;
    int ok = a.F >= 0 && a.V >= 0 && a.J >= 0 && a.K >= 0 && a.J < (1 << 26) && b[0].len == a.F * a.J * 12 * 8 &&
             (size == 4 || size == 8) && b[2].len == n * size && b[1].len == per * size + ints;
    a.S = b[0].buf;
    a.x = b[1].buf;
    a.w = (const char *)b[1].buf + a.V * 3 * size;
    a.jo = (const int32_t *)((const char *)a.w + a.V * a.K * size);
    a.n = a.jo + a.V * a.K;
    if (ok) { /* every offset in range (the zero weights' too, as the reference's joints), every count in [0, K] */
        int32_t lo = 0, hi = 0, nlo = 0, nhi = 0;
        for (Py_ssize_t i = 0; i < a.V * a.K; i++) {
            lo = a.jo[i] < lo ? a.jo[i] : lo;
            hi = a.jo[i] > hi ? a.jo[i] : hi;
        }
        for (Py_ssize_t v = 0; v < a.V; v++) {
            nlo = a.n[v] < nlo ? a.n[v] : nlo;
            nhi = a.n[v] > nhi ? a.n[v] : nhi;
        }
        ok = lo >= 0 && (a.V * a.K == 0 || hi < a.J * 12) && nlo >= 0 && nhi <= a.K;
    }
    const Py_ssize_t L = 32 / size, vectors = (a.F + L - 1) / L * a.J * 12;
    char *scratch = ok ? PyMem_RawMalloc((size_t)(vectors * 32 + 32 + L * (SKIN_TILE * 3 + 2 * SKIN_PAD) * size)) : NULL;
    if (!ok) PyErr_SetString(PyExc_ValueError, "skin_frames: a buffer's size does not match F, V, J and K, or a "
                                               "joint index is outside [0, J)");
    else if (scratch == NULL) PyErr_NoMemory();
    else {
        char *M = scratch + (32 - (uintptr_t)scratch % 32) % 32, *stage = M + vectors * 32;
        Py_BEGIN_ALLOW_THREADS
#ifdef SKIN_FMA
        if (size == 4 && a.fused && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
            skin_f32_fma(&a, b[2].buf, (skin_v8f *)M, (float *)stage);
        else
#endif
        if (size == 4) skin_f32(&a, b[2].buf, (skin_v8f *)M, (float *)stage);
        else skin_f64(&a, b[2].buf, (skin_v4d *)M, (double *)stage);
        Py_END_ALLOW_THREADS
    }
    PyMem_RawFree(scratch);
    for (int k = 0; k < 3; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}
#endif

/* joint_rows(W, index, ibm, out, F, N, J) -> None: animkit.skin.joint_rows, the first three rows of
 *   S_f,j = W_f[index_j] . IBM_j      for W (F, N, 4, 4), index (J,) intp in [0, N), ibm (J, 4, 4), out (F, J, 3, 4),
 * all float64, each entry sum_k W[r, k] IBM[k, c] added in k order (no FMA). NumPy's batched matmul of 3x4 by 4x4
 * blocks costs ~0.3 us a block (J small gemm calls, transposing copies): 5 ms of a 15 ms skinning call at 240 frames
 * of 65 joints; this loop is one pass over W. */
static PyObject *joint_rows(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    Py_ssize_t F, N, J;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nnn", &b[0], &b[1], &b[2], &b[3], &F, &N, &J)) return NULL;
    const double *W = b[0].buf, *I = b[2].buf;
    const Py_ssize_t *idx = b[1].buf;
    double *out = b[3].buf;
    const Py_ssize_t f8 = sizeof(double);
    int ok = F >= 0 && N >= 0 && J >= 0 && b[0].len == F * N * 16 * f8 && b[1].len == J * (Py_ssize_t)sizeof(Py_ssize_t) &&
             b[2].len == J * 16 * f8 && b[3].len == F * J * 12 * f8;
    for (Py_ssize_t j = 0; ok && j < J; j++) ok = idx[j] >= 0 && idx[j] < N;
    if (!ok) PyErr_SetString(PyExc_ValueError, "joint_rows: a buffer's size does not match F, N and J, or an index is "
                                               "outside [0, N)");
    else {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t f = 0; f < F; f++)
            for (Py_ssize_t j = 0; j < J; j++) {
                const double *w = W + (f * N + idx[j]) * 16, *m = I + j * 16;
                double *o = out + (f * J + j) * 12;
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 4; c++)
                        o[r * 4 + c] = w[r * 4] * m[c] + w[r * 4 + 1] * m[4 + c] + w[r * 4 + 2] * m[8 + c] +
                                       w[r * 4 + 3] * m[12 + c];
            }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 4; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}


/* mm3(A, B, out, n, da, ma, db, mb) -> None: animkit.motion.retarget_rest._mm3, stacks of 3x3 products
 *   out_i = A[(i / da) % ma] . B[(i / db) % mb]      i in [0, n), every matrix 9 float64 row-major,
 * each entry (A_r0 B_0c + A_r1 B_1c) + A_r2 B_2c in that order (no FMA), as the NumPy reference adds them: bit for
 * bit. (da, ma) and (db, mb) say how each operand broadcasts over the stack (ma = 1: one matrix for all; da = 1,
 * ma = n: one each). The reference's 27 strided NumPy passes cost ~0.3 ms for 2,000 products; this ~10 us. */
static PyObject *mm3(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    Py_ssize_t n, da, ma, db, mb;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*nnnnn", &b[0], &b[1], &b[2], &n, &da, &ma, &db, &mb)) return NULL;
    const Py_ssize_t f9 = 9 * (Py_ssize_t)sizeof(double);
    int ok = n >= 0 && da >= 1 && ma >= 1 && db >= 1 && mb >= 1 && b[0].len == ma * f9 && b[1].len == mb * f9 &&
             b[2].len == n * f9;
    if (!ok) PyErr_SetString(PyExc_ValueError, "mm3: a buffer's size does not match n, ma and mb");
    else {
        const double *A = b[0].buf, *B = b[1].buf;
        double *out = b[2].buf;
        Py_BEGIN_ALLOW_THREADS
        /* the stacks' indices (i / d) % m kept as counters (a division per matrix cost more than its products) */
        Py_ssize_t qa = 0, ra = 0, qb = 0, rb = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            const double *a = A + qa * 9, *m = B + qb * 9;
            double *o = out + i * 9;
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) o[r * 3 + c] = a[r * 3] * m[c] + a[r * 3 + 1] * m[3 + c] + a[r * 3 + 2] * m[6 + c];
            if (++ra == da) { ra = 0; if (++qa == ma) qa = 0; }
            if (++rb == db) { rb = 0; if (++qb == mb) qb = 0; }
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 3; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* polar_turns(M, R, E, det, err, n, w) -> None: animkit.motion.retarget_rest.rotation_part's fast path, bit for bit:
 * for the top-left 3x3 block A of each of the n matrices M (w x w row-major, w = 3 or 4): det A (its rows' triple
 * product, added as the reference adds), R0 = A / cbrt(det) (A where det <= 0), then Newton-Schulz steps
 * R <- R - 0.5 (R E), E = R^T R - I, over the whole stack while any matrix has 1e-12 < max|E| < 0.1 (at most 3
 * steps); err = max|E| of the last E. R (n x 9) and E (n x 9, scratch), det and err (n) are written; the caller
 * takes the SVD where det <= 0 or err > 1e-9. */
static void polar_e(const double *r, double *e, double *err) {
    double m = 0.0;
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            double v = r[i] * r[k] + r[3 + i] * r[3 + k] + r[6 + i] * r[6 + k];
            if (i == k) v -= 1.0;
            e[i * 3 + k] = v;
            v = fabs(v);
            if (v != v) m = NAN;
            else if (v > m) m = v;
        }
    *err = m;
}

static PyObject *polar_turns(PyObject *self, PyObject *args) {
    Py_buffer b[5];
    Py_ssize_t n, w;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*w*w*w*nn", &b[0], &b[1], &b[2], &b[3], &b[4], &n, &w)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = n >= 0 && (w == 3 || w == 4) && b[0].len == n * w * w * f8 && b[1].len == n * 9 * f8 &&
             b[2].len == n * 9 * f8 && b[3].len == n * f8 && b[4].len == n * f8;
    if (!ok) PyErr_SetString(PyExc_ValueError, "polar_turns: a buffer's size does not match n and w");
    else {
        const double *M = b[0].buf;
        double *R = b[1].buf, *E = b[2].buf, *det = b[3].buf, *err = b[4].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++) {
            const double *a = M + i * w * w, *r1 = a + w, *r2 = a + 2 * w;
            double d = a[0] * (r1[1] * r2[2] - r1[2] * r2[1]) + a[1] * (r1[2] * r2[0] - r1[0] * r2[2]) +
                       a[2] * (r1[0] * r2[1] - r1[1] * r2[0]);
            det[i] = d;
            double c = cbrt(d > 0 ? d : 1.0);
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) R[i * 9 + r * 3 + k] = a[r * w + k] / c;
        }
        for (int step = 0; step < 4; step++) {
            int again = 0;
            for (Py_ssize_t i = 0; i < n; i++) {
                polar_e(R + i * 9, E + i * 9, err + i);
                if (err[i] > 1e-12 && err[i] < 0.1) again = 1;
            }
            if (step == 3 || !again) break;
            for (Py_ssize_t i = 0; i < n; i++) {
                double *r = R + i * 9, t[9];
                const double *e = E + i * 9;
                for (int p = 0; p < 3; p++)
                    for (int k = 0; k < 3; k++) t[p * 3 + k] = r[p * 3] * e[k] + r[p * 3 + 1] * e[3 + k] + r[p * 3 + 2] * e[6 + k];
                for (int k = 0; k < 9; k++) r[k] = r[k] - 0.5 * t[k];
            }
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 5; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* retarget_turns(W, src, child, K, d, out, F, N, B) -> 1, or 0 (a polar factor needs the SVD: the caller runs NumPy):
 * animkit.motion.retarget_drive.bone_turns_numpy, bit for bit, for each driven bone j and frame f
 *   out[j, f] = T_jf . P_jf . K_j      P_jf = rotation_part(W[f, src_j, :3, :3]) (polar_turns' steps over the whole
 *   (B x F) stack, so each matrix takes the steps the reference's stack does), T_jf = I where child_j < 0, else
 *   matrix_aligning(P_jf K_j d_j, p[f, child_j] - p[f, src_j]) (its NumPy arithmetic: I + K + (K K) / max(1 + c,
 *   1e-12), a half turn where c < -1 + 1e-12, I where a direction is zero), products added as mm3 adds them.
 * W (F, N, 4, 4), src and child (B,) int64, K (B, 3, 3), d (B, 3), out (B, F, 3, 3). One pass instead of a dozen
 * NumPy passes over the stack. */
static void aligning(const double *u, const double *v, double *T) {
    double a[3], b[3];
    double na = sqrt((u[0] * u[0] + u[1] * u[1]) + u[2] * u[2]), nb = sqrt((v[0] * v[0] + v[1] * v[1]) + v[2] * v[2]);
    for (int i = 0; i < 9; i++) T[i] = (i % 4 == 0) ? 1.0 : 0.0;
    if (na < 1e-300 || nb < 1e-300) return;
    for (int i = 0; i < 3; i++) { a[i] = u[i] / na; b[i] = v[i] / nb; }
    double c = (a[0] * b[0] + a[1] * b[1]) + a[2] * b[2];
    if (c < -1.0 + 1e-12) { /* opposite: a half turn about an axis perpendicular to a */
        double p[3] = {0.0, a[2], -a[1]}; /* a x (1, 0, 0) */
        if (sqrt((p[0] * p[0] + p[1] * p[1]) + p[2] * p[2]) < 1e-6) { p[0] = -a[2]; p[1] = 0.0; p[2] = a[0]; }
        double n = sqrt((p[0] * p[0] + p[1] * p[1]) + p[2] * p[2]);
        for (int i = 0; i < 3; i++) p[i] /= n;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) T[r * 3 + k] = 2.0 * p[r] * p[k] - (r == k ? 1.0 : 0.0);
        return;
    }
    double k0 = a[1] * b[2] - a[2] * b[1], k1 = a[2] * b[0] - a[0] * b[2], k2 = a[0] * b[1] - a[1] * b[0];
    double den = 1.0 + c > 1e-12 ? 1.0 + c : 1e-12;
    /* K = [k]x; K K's entries as NumPy's product adds them (its zero terms included) */
    double Kx[9] = {0.0, -k2, k1, k2, 0.0, -k0, -k1, k0, 0.0}, KK[9];
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++)
            KK[r * 3 + q] = (Kx[r * 3] * Kx[q] + Kx[r * 3 + 1] * Kx[3 + q]) + Kx[r * 3 + 2] * Kx[6 + q];
    for (int i = 0; i < 9; i++) T[i] = (T[i] + Kx[i]) + KK[i] / den;
}

static PyObject *retarget_turns(PyObject *self, PyObject *args) {
    Py_buffer b[6];
    Py_ssize_t F, N, B;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*nnn", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &F, &N, &B)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = F >= 0 && N >= 1 && B >= 0 && b[0].len == F * N * 16 * f8 && b[1].len == B * 8 && b[2].len == B * 8 &&
             b[3].len == B * 9 * f8 && b[4].len == B * 3 * f8 && b[5].len == B * F * 9 * f8;
    const int64_t *src = b[1].buf, *child = b[2].buf;
    for (Py_ssize_t j = 0; ok && j < B; j++) ok = src[j] >= 0 && src[j] < N && child[j] < N;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "retarget_turns: a buffer's size or an index does not match F, N and B");
        for (int k = 0; k < 6; k++) PyBuffer_Release(&b[k]);
        return NULL;
    }
    const double *W = b[0].buf, *K = b[3].buf, *d = b[4].buf;
    double *out = b[5].buf;
    int good = 1, again = 0, far = 0;
    Py_BEGIN_ALLOW_THREADS
    /* polar_turns' start, A / cbrt(det A), and its first check, frame by frame (a frame's rows of W read together:
     * bone by bone would touch a new line of W for every frame); out stays bone-major */
    for (Py_ssize_t f = 0; f < F; f++)
        for (Py_ssize_t j = 0; j < B; j++) {
            const double *a = W + (f * N + src[j]) * 16, *r1 = a + 4, *r2 = a + 8;
            double *o = out + (j * F + f) * 9, e[9], err;
            double dt = a[0] * (r1[1] * r2[2] - r1[2] * r2[1]) + a[1] * (r1[2] * r2[0] - r1[0] * r2[2]) +
                        a[2] * (r1[0] * r2[1] - r1[1] * r2[0]);
            if (!(dt > 0)) good = 0;
            double c = cbrt(dt > 0 ? dt : 1.0);
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) o[r * 3 + k] = a[r * 4 + k] / c;
            polar_e(o, e, &err);
            if (err > 1e-12 && err < 0.1) again = 1;
            if (!(err <= 1e-9)) far = 1;
        }
    /* Newton-Schulz over the stack, as polar_turns steps (while any matrix needs one, at most 3 steps): a step's
     * update and the next step's check in one pass */
    for (int step = 0; good; step++) {
        if (step == 3 || !again) {
            if (far) good = 0; /* rotation_part takes the SVD there */
            break;
        }
        again = 0;
        far = 0;
        for (Py_ssize_t i = 0; i < B * F; i++) {
            double *r = out + i * 9, t[9], e[9], err;
            polar_e(r, e, &err);
            for (int p = 0; p < 3; p++)
                for (int k = 0; k < 3; k++) t[p * 3 + k] = r[p * 3] * e[k] + r[p * 3 + 1] * e[3 + k] + r[p * 3 + 2] * e[6 + k];
            for (int k = 0; k < 9; k++) r[k] = r[k] - 0.5 * t[k];
            polar_e(r, e, &err);
            if (err > 1e-12 && err < 0.1) again = 1;
            if (!(err <= 1e-9)) far = 1;
        }
    }
    for (Py_ssize_t f = 0; good && f < F; f++)
        for (Py_ssize_t j = 0; j < B; j++) {
            double *o = out + (j * F + f) * 9, P[9], R[9], T[9], u[3], w[3];
            const double *m = K + j * 9;
            memcpy(P, o, sizeof P);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) R[r * 3 + c] = P[r * 3] * m[c] + P[r * 3 + 1] * m[3 + c] + P[r * 3 + 2] * m[6 + c];
            if (child[j] < 0) { memcpy(o, R, sizeof R); continue; }
            const double *dj = d + j * 3, *pc = W + (f * N + child[j]) * 16, *ps = W + (f * N + src[j]) * 16;
            for (int r = 0; r < 3; r++) {
                u[r] = R[r * 3] * dj[0] + R[r * 3 + 1] * dj[1] + R[r * 3 + 2] * dj[2];
                w[r] = pc[r * 4 + 3] - ps[r * 4 + 3];
            }
            aligning(u, w, T);
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) o[r * 3 + c] = T[r * 3] * R[c] + T[r * 3 + 1] * R[3 + c] + T[r * 3 + 2] * R[6 + c];
        }
    Py_END_ALLOW_THREADS
    for (int k = 0; k < 6; k++) PyBuffer_Release(&b[k]);
    return PyLong_FromLong(good);
}

/* lowest_along(points, d, out, F, V) -> None: animkit.look.surface.lowest_along, bit for bit:
 *   out_f = min_v (p_fv0 d_f0 + p_fv1 d_f1) + p_fv2 d_f2      points (F, V, 3), d (F, 3), out (F,), V >= 1,
 * the products added in that order (no FMA) as the NumPy reference adds them, NaN carried as np.min carries it: the
 * lowest of a foot's surface points about its ankle along a row of its turn (the foot lock's sole), one pass over
 * the points instead of a batched matrix-vector product and a reduction (~2 ms for 2,000 frames x 139 points). */
static PyObject *lowest_along(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    Py_ssize_t F, V;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*nn", &b[0], &b[1], &b[2], &F, &V)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = F >= 0 && V >= 1 && b[0].len == F * V * 3 * f8 && b[1].len == F * 3 * f8 && b[2].len == F * f8;
    if (!ok) PyErr_SetString(PyExc_ValueError, "lowest_along: a buffer's size does not match F and V (V >= 1)");
    else {
        const double *P = b[0].buf, *D = b[1].buf;
        double *out = b[2].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t f = 0; f < F; f++) {
            const double *p = P + f * V * 3, d0 = D[3 * f], d1 = D[3 * f + 1], d2 = D[3 * f + 2];
            double m = (p[0] * d0 + p[1] * d1) + p[2] * d2;
            int nan = m != m;
            for (Py_ssize_t v = 1; v < V; v++) {
                double x = (p[3 * v] * d0 + p[3 * v + 1] * d1) + p[3 * v + 2] * d2;
                nan |= x != x;
                m = x < m ? x : m;
            }
            out[f] = nan ? NAN : m;
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 3; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* ---- raster's kernels (animkit.render): a frame's triangle set-up and a GIF frame's changed rectangle ---- */

/* NumPy's minimum / maximum on doubles: a NaN on either side gives NaN. */
static inline double np_min2(double a, double b) { return (a <= b || a != a) ? a : b; }
static inline double np_max2(double a, double b) { return (a >= b || a != a) ? a : b; }
/* np.clip(x, lo, hi): NaN stays NaN. */
static inline double np_clip(double x, double lo, double hi) { return np_min2(np_max2(x, lo), hi); }

/* tri_setup(pc, faces, closed, near, far, fp, cx, cy, W, H, ints, abc, wabc) -> T: the rasteriser's per-frame set-up
 * of animkit.render.raster.render_surfaces in one pass, the same operations in the same order as its NumPy path
 * (_drawn_faces, the projection, visibility._setup):
 *   depth d = -pc[v, 2]; a face is drawn when min(d_0, d_1, d_2) is in [near, far] and, where closed[f] (closed may
 *   be empty: no face closed), not (e1 x e2) . c0 > 0 (view space, e_i = c_i - c0, the dot summed left to right);
 *   X = cx + (fp * pc0) / d, Y = cy - (fp * pc1) / d, IZ = 1 / d per corner; the pixel box
 *   x0 = clip(ceil(min X), 0, W), x1 = clip(floor(max X), -1, W - 1) (y likewise); kept when x0 <= x1, y0 <= y1 and
 *   the doubled area (X1 - X0)(Y2 - Y0) - (X2 - X0)(Y1 - Y0) is finite and above 1e-12 in size; then with
 *   inv = 1 / area2, nxt = (1, 2, 0), prv = (2, 0, 1):
 *   A_i = (Y_nxt - Y_prv) inv, B_i = (X_prv - X_nxt) inv, C_i = A_i (x0 - X_nxt) + B_i (y0 - Y_nxt),
 *   WA = (A_0 IZ_0 + A_1 IZ_1) + A_2 IZ_2 (WB, WC likewise).
 * Outputs (capacity F rows each, the first T filled, in face order): ints (5, F) int64: face, x0, y0, x1, y1;
 * abc (4, F, 3) float64: A, B, C, IZ; wabc (3, F) float64: WA, WB, WC. */
static PyObject *tri_setup(PyObject *self, PyObject *args) {
    Py_buffer b[6];
    double near_, far_, fp, cx, cy;
    Py_ssize_t W, H;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*dddddnnw*w*w*", &b[0], &b[1], &b[2], &near_, &far_, &fp, &cx, &cy, &W, &H,
                          &b[3], &b[4], &b[5]))
        return NULL;
    const Py_ssize_t V = b[0].len / 24, F = b[1].len / 24;
    Py_ssize_t T = 0;
    int ok = b[0].len == V * 24 && b[1].len == F * 24 && (b[2].len == 0 || b[2].len == F) && b[3].len == 5 * F * 8
             && b[4].len == 12 * F * 8 && b[5].len == 3 * F * 8;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "tri_setup: pc (V, 3), faces (F, 3), closed (F or 0) and the outputs "
                                          "(5, F), (4, F, 3), (3, F) disagree");
    } else {
        const double *pc = b[0].buf;
        const int64_t *faces = b[1].buf;
        const unsigned char *closed = b[2].len ? b[2].buf : NULL;
        int64_t *face = b[3].buf, *ox0 = face + F, *oy0 = face + 2 * F, *ox1 = face + 3 * F, *oy1 = face + 4 * F;
        double *A = b[4].buf, *B = A + 3 * F, *C = A + 6 * F, *IZ = A + 9 * F;
        double *WA = b[5].buf, *WB = WA + F, *WC = WA + 2 * F;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t f = 0; f < F; f++) {
            const double *c[3];
            double d[3], X[3], Y[3], iz[3];
            int inside = 1;
            for (int i = 0; i < 3; i++) {
                int64_t v = faces[3 * f + i];
                if (v < 0 || v >= V) { inside = 0; break; }
                c[i] = pc + 3 * v;
                d[i] = -c[i][2];
            }
            if (!inside) continue;
            double dmin = np_min2(np_min2(d[0], d[1]), d[2]);
            if (!(dmin >= near_ && dmin <= far_)) continue;
            if (closed && closed[f]) {
                double e1[3], e2[3], n[3];
                for (int k = 0; k < 3; k++) { e1[k] = c[1][k] - c[0][k]; e2[k] = c[2][k] - c[0][k]; }
                n[0] = e1[1] * e2[2] - e1[2] * e2[1];
                n[1] = e1[2] * e2[0] - e1[0] * e2[2];
                n[2] = e1[0] * e2[1] - e1[1] * e2[0];
                double dot = n[0] * c[0][0];
                dot += n[1] * c[0][1];
                dot += n[2] * c[0][2];
                if (dot > 0.0) continue;
            }
            for (int i = 0; i < 3; i++) {
                X[i] = cx + (fp * c[i][0]) / d[i];
                Y[i] = cy - (fp * c[i][1]) / d[i];
                iz[i] = 1.0 / d[i];
            }
            double x0 = np_clip(ceil(np_min2(np_min2(X[0], X[1]), X[2])), 0.0, (double)W);
            double x1 = np_clip(floor(np_max2(np_max2(X[0], X[1]), X[2])), -1.0, (double)(W - 1));
            double y0 = np_clip(ceil(np_min2(np_min2(Y[0], Y[1]), Y[2])), 0.0, (double)H);
            double y1 = np_clip(floor(np_max2(np_max2(Y[0], Y[1]), Y[2])), -1.0, (double)(H - 1));
            double area2 = (X[1] - X[0]) * (Y[2] - Y[0]) - (X[2] - X[0]) * (Y[1] - Y[0]);
            if (!(x0 <= x1 && y0 <= y1 && fabs(area2) > 1e-12 && isfinite(area2))) continue;
            double inv = 1.0 / area2, wa = 0.0, wb = 0.0, wc = 0.0;
            for (int i = 0; i < 3; i++) {
                int nx = i == 2 ? 0 : i + 1, pv = i == 0 ? 2 : i - 1;
                double a = (Y[nx] - Y[pv]) * inv, bb = (X[pv] - X[nx]) * inv;
                double cc = a * (x0 - X[nx]) + bb * (y0 - Y[nx]);
                A[3 * T + i] = a;
                B[3 * T + i] = bb;
                C[3 * T + i] = cc;
                IZ[3 * T + i] = iz[i];
                if (i == 0) { wa = a * iz[0]; wb = bb * iz[0]; wc = cc * iz[0]; }
                else { wa = wa + a * iz[i]; wb = wb + bb * iz[i]; wc = wc + cc * iz[i]; }
            }
            WA[T] = wa;
            WB[T] = wb;
            WC[T] = wc;
            face[T] = f;
            ox0[T] = (int64_t)x0;
            oy0[T] = (int64_t)y0;
            ox1[T] = (int64_t)x1;
            oy1[T] = (int64_t)y1;
            T++;
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 6; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(T);
}

/* gif_delta(ind, prev, H, W, clear, sub) -> (y0, x0, h, w): a GIF frame's changed rectangle, as
 * animkit.render.writers.GifWriter's NumPy path finds it: the smallest box of rows and columns holding every pixel
 * where ind != prev (both (H, W) uint8; none differ: the 1 x 1 box at the origin), copied row by row into sub
 * (at least h * w bytes, h * w filled), each unchanged pixel in it replaced by clear when 0 <= clear < 256. Rows are
 * compared eight bytes (a word) at a time, and the box's see-through pixels chosen a word at a time by a byte mask
 * (each byte of x = a ^ p: 0xff where it is non-zero, ((x & 0x7f..) + 0x7f..) | x having its top bit set). */
static Py_ssize_t delta_first(const unsigned char *a, const unsigned char *b, Py_ssize_t n) {
    Py_ssize_t x = 0;
    for (; x + 8 <= n; x += 8) {
        uint64_t u, v;
        memcpy(&u, a + x, 8);
        memcpy(&v, b + x, 8);
        if (u != v) break;
    }
    for (; x < n; x++)
        if (a[x] != b[x]) return x;
    return -1;
}

static Py_ssize_t delta_last(const unsigned char *a, const unsigned char *b, Py_ssize_t from, Py_ssize_t n) {
    Py_ssize_t x = n;
    for (; x - 8 >= from; x -= 8) {
        uint64_t u, v;
        memcpy(&u, a + x - 8, 8);
        memcpy(&v, b + x - 8, 8);
        if (u != v) break;
    }
    for (x = x - 1; x >= from; x--)
        if (a[x] != b[x]) return x;
    return -1;
}

static PyObject *gif_delta(PyObject *self, PyObject *args) {
    Py_buffer ind, prev, sub;
    Py_ssize_t H, W, y0 = 0, x0 = 0, h = 1, w = 1;
    int clear;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*nniw*", &ind, &prev, &H, &W, &clear, &sub)) return NULL;
    if (H < 1 || W < 1 || ind.len != H * W || prev.len != H * W || sub.len < H * W) {
        PyErr_SetString(PyExc_ValueError, "gif_delta: ind and prev must be H x W bytes, sub at least that");
    } else {
        const unsigned char *a = ind.buf, *p = prev.buf;
        unsigned char *o = sub.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t ya = H, yb = -1, xa = W, xb = -1;
        for (Py_ssize_t y = 0; y < H; y++) {
            const unsigned char *ra = a + y * W, *rp = p + y * W;
            Py_ssize_t first = delta_first(ra, rp, W);
            if (first < 0) continue;
            Py_ssize_t last = delta_last(ra, rp, first, W);
            if (ya == H) ya = y;
            yb = y;
            if (first < xa) xa = first;
            if (last > xb) xb = last;
        }
        if (yb >= 0) { y0 = ya; x0 = xa; h = yb - ya + 1; w = xb - xa + 1; }
        const uint64_t low7 = 0x7f7f7f7f7f7f7f7fULL, tops = 0x8080808080808080ULL;
        const uint64_t fill = 0x0101010101010101ULL * (uint64_t)(unsigned char)clear;
        for (Py_ssize_t y = 0; y < h; y++) {
            const unsigned char *ra = a + (y0 + y) * W + x0, *rp = p + (y0 + y) * W + x0;
            unsigned char *ro = o + y * w;
            if (clear < 0 || clear > 255) { memcpy(ro, ra, (size_t)w); continue; }
            Py_ssize_t x = 0;
            for (; x + 8 <= w; x += 8) {
                uint64_t u, v;
                memcpy(&u, ra + x, 8);
                memcpy(&v, rp + x, 8);
                uint64_t d = u ^ v;
                uint64_t mask = ((((d & low7) + low7) | d) & tops) >> 7;
                mask *= 0xff;
                uint64_t r = (u & mask) | (fill & ~mask);
                memcpy(ro + x, &r, 8);
            }
            for (; x < w; x++) ro[x] = ra[x] != rp[x] ? ra[x] : (unsigned char)clear;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&ind);
    PyBuffer_Release(&prev);
    PyBuffer_Release(&sub);
    if (PyErr_Occurred()) return NULL;
    return Py_BuildValue("nnnn", y0, x0, h, w);
}

/* flat_shade(V, faces, sel, colors, eye, light, ambient, out) -> 0: animkit.render.shading._flat_colors, face by face
 * for the faces sel (S int64) of a flat surface (V (n, 3) float64 vertices, faces (F, 3) int64, colors (F, 3) uint8):
 * e1 = v1 - v0, e2 = v2 - v0, n = e1 x e2, n /= |n| (|n| = sqrt((nx nx + ny ny) + nz nz); 0 where |n| = 0), n turned
 * to the eye where ((n . (eye - v0)) < 0), I = a + (1 - a) clip((nx lx + ny ly) + nz lz, 0, 1), out = rint(c I), each
 * operation as shading.face_shading's NumPy reference orders it (no FMA), so the same bytes. Returns -1, having
 * written nothing, where a face row or a vertex index is out of range (the caller's NumPy path then raises). */
static PyObject *flat_shade(PyObject *self, PyObject *args) {
    Py_buffer b[7];
    double ambient;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*dw*", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &ambient, &b[6]))
        return NULL;
    const Py_ssize_t nv = b[0].len / 24, F = b[1].len / 24, S = b[2].len / 8;
    long status = 0;
    if (b[0].len != nv * 24 || b[1].len != F * 24 || b[2].len != S * 8 || b[3].len != F * 3 || b[4].len != 24
        || b[5].len != 24 || b[6].len != S * 3) {
        PyErr_SetString(PyExc_ValueError, "flat_shade: the arrays' sizes disagree");
    } else {
        const double *V = b[0].buf, *eye = b[4].buf, *l = b[5].buf;
        const int64_t *faces = b[1].buf, *sel = b[2].buf;
        const unsigned char *colors = b[3].buf;
        unsigned char *out = b[6].buf;
        const double k = 1.0 - ambient;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < S && status == 0; j++) {
            int64_t f = sel[j];
            if (f < 0 || f >= F) { status = -1; break; }
            const int64_t *c = faces + 3 * f;
            if (c[0] < 0 || c[0] >= nv || c[1] < 0 || c[1] >= nv || c[2] < 0 || c[2] >= nv) { status = -1; break; }
        }
        for (Py_ssize_t j = 0; j < S && status == 0; j++) {
            const int64_t *c = faces + 3 * sel[j];
            const double *v0 = V + 3 * c[0], *v1 = V + 3 * c[1], *v2 = V + 3 * c[2];
            double e1x = v1[0] - v0[0], e1y = v1[1] - v0[1], e1z = v1[2] - v0[2];
            double e2x = v2[0] - v0[0], e2y = v2[1] - v0[1], e2z = v2[2] - v0[2];
            double nx = e1y * e2z - e1z * e2y, ny = e1z * e2x - e1x * e2z, nz = e1x * e2y - e1y * e2x;
            double norm = sqrt((nx * nx + ny * ny) + nz * nz);
            if (norm > 0) { nx = nx / norm; ny = ny / norm; nz = nz / norm; }
            else { nx = 0.0; ny = 0.0; nz = 0.0; }
            double tx = eye[0] - v0[0], ty = eye[1] - v0[1], tz = eye[2] - v0[2];
            if ((nx * tx + ny * ty) + nz * tz < 0) { nx = -nx; ny = -ny; nz = -nz; }
            double d = (nx * l[0] + ny * l[1]) + nz * l[2];
            d = np_clip(d, 0.0, 1.0);
            double I = ambient + k * d;
            const unsigned char *fc = colors + 3 * sel[j];
            for (int ch = 0; ch < 3; ch++) out[3 * j + ch] = (unsigned char)rint((double)fc[ch] * I);
        }
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < 7; i++) PyBuffer_Release(&b[i]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(status);
}

/* blend_px(flat, pix, alpha, color, tmp) -> 0 or -1: animkit.render.segments.blend's NumPy path, out[p] =
 * rint((float)flat[p] * (1 - a) + c * a) per channel in float32 (rounding half to even), for the flat pixels pix (N
 * int64) with alpha (N float32) and color (3 float32), every value computed from the image as it was (a pixel listed
 * twice gets its last entry's value, as NumPy's fancy assignment gives) through tmp (N * 3 bytes). Returns -1, having
 * written nothing, when a pixel is outside flat (n * 3 bytes) or a value outside [0, 255] (the caller's NumPy path
 * then says what it says). */
static PyObject *blend_px(PyObject *self, PyObject *args) {
    Py_buffer b[5];
    (void)self;
    if (!PyArg_ParseTuple(args, "w*y*y*y*w*", &b[0], &b[1], &b[2], &b[3], &b[4])) return NULL;
    const Py_ssize_t n = b[0].len / 3, N = b[1].len / 8;
    long status = 0;
    if (b[0].len != 3 * n || b[1].len != 8 * N || b[2].len != 4 * N || b[3].len != 12 || b[4].len < 3 * N) {
        PyErr_SetString(PyExc_ValueError, "blend_px: flat (n, 3) uint8, pix (N,) int64, alpha (N,) float32, "
                                          "color (3,) float32 and tmp (N, 3) disagree");
    } else {
        unsigned char *flat = b[0].buf, *tmp = b[4].buf;
        const int64_t *pix = b[1].buf;
        const float *alpha = b[2].buf, *color = b[3].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < N && status == 0; j++) {
            int64_t p = pix[j];
            if (p < 0 || p >= n) { status = -1; break; }
            float a = alpha[j], keep = 1.0f - a;
            for (int k = 0; k < 3; k++) {
                float r = rintf((float)flat[3 * p + k] * keep + color[k] * a);
                if (!(r >= 0.0f && r <= 255.0f)) { status = -1; break; }
                tmp[3 * j + k] = (unsigned char)r;
            }
        }
        if (status == 0)
            for (Py_ssize_t j = 0; j < N; j++) memcpy(flat + 3 * pix[j], tmp + 3 * j, 3);
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 5; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(status);
}

/* lowest_about(points, origin, d, out, F, V) -> None: animkit.look.surface.lowest_about, bit for bit:
 *   out_f = min_v ((p_vf0 - o_f0) d_f0 + (p_vf1 - o_f1) d_f1) + (p_vf2 - o_f2) d_f2
 * points (V, F, 3) point-major (as a skinning table's product leaves them), origin and d (F, 3), out (F,), V >= 1:
 * lowest_along of the points about their origin, each difference and product rounded as the NumPy reference's
 * (subtract, then lowest_along), NaN carried as np.min carries it, the points taken in the same order (v ascending,
 * the first of equals kept); 256 frames at a time, each point's run of them read in memory order (a frame's points
 * lie 3F apart: frame by frame would touch a page per point), no (F, V, 3) difference written. */
static PyObject *lowest_about(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    Py_ssize_t F, V;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nn", &b[0], &b[1], &b[2], &b[3], &F, &V)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = F >= 0 && V >= 1 && b[0].len == V * F * 3 * f8 && b[1].len == F * 3 * f8 && b[2].len == F * 3 * f8
             && b[3].len == F * f8;
    if (!ok) PyErr_SetString(PyExc_ValueError, "lowest_about: a buffer's size does not match F and V (V >= 1)");
    else {
        const double *P = b[0].buf, *O = b[1].buf, *D = b[2].buf;
        double *out = b[3].buf;
        Py_BEGIN_ALLOW_THREADS
        enum { BLOCK = 256 }; /* frames at a time: their mins stay in L1 while each point's run of them streams by */
        double m[BLOCK];
        int nan[BLOCK];
        for (Py_ssize_t f0 = 0; f0 < F; f0 += BLOCK) {
            const Py_ssize_t n = F - f0 < BLOCK ? F - f0 : BLOCK;
            for (Py_ssize_t v = 0; v < V; v++) {
                const double *p = P + (v * F + f0) * 3, *o = O + 3 * f0, *d = D + 3 * f0;
                for (Py_ssize_t j = 0; j < n; j++) {
                    double x = ((p[3 * j] - o[3 * j]) * d[3 * j] + (p[3 * j + 1] - o[3 * j + 1]) * d[3 * j + 1])
                               + (p[3 * j + 2] - o[3 * j + 2]) * d[3 * j + 2];
                    if (v == 0) {
                        m[j] = x;
                        nan[j] = x != x;
                    } else {
                        nan[j] |= x != x;
                        m[j] = x < m[j] ? x : m[j];
                    }
                }
            }
            for (Py_ssize_t j = 0; j < n; j++) out[f0 + j] = nan[j] ? NAN : m[j];
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 4; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* The Tait-Bryan angles (a, b, g) of A = Bt^T . Rt (mm3's sums) for the order (i, j, k), s = +1 for a cyclic order:
 * euler_read's and drive_joint's arithmetic, one matrix (p = Bt, r = Rt, 9 row-major each). */
static void euler_one(const double *p, const double *r, int i, int j, int k, double sign, double *out) {
    double A[9];
    for (int u = 0; u < 3; u++)
        for (int c = 0; c < 3; c++) A[u * 3 + c] = p[u] * r[c] + p[3 + u] * r[3 + c] + p[6 + u] * r[6 + c];
    double sb = np_clip(sign * A[i * 3 + k], -1.0, 1.0);
    double beta = asin(sb), alpha, gamma;
    if (fabs(sb) > 1.0 - 1e-12) {
        alpha = atan2(sign * A[k * 3 + j], A[j * 3 + j]);
        gamma = 0.0;
    } else {
        alpha = atan2(-sign * A[j * 3 + k], A[k * 3 + k]);
        gamma = atan2(-sign * A[i * 3 + j], A[i * 3 + i]);
    }
    out[0] = alpha;
    out[1] = beta;
    out[2] = gamma;
}

/* R = Bt . R_l0(v_0) . R_l1(v_1) ... over the k DOFs whose letter is 0, 1 or 2 (x, y, z; -1: skipped): turned_by's
 * and drive_joint's arithmetic, one matrix (Bt and out 9 row-major, out may not alias Bt). */
static void turned_one(const double *Bt, const double *vals, const int64_t *letters, Py_ssize_t k, double *out) {
    double R[9], T[9], E[9];
    memcpy(R, Bt, sizeof R);
    for (Py_ssize_t c = 0; c < k; c++) {
        int l = (int)letters[c];
        if (l < 0) continue;
        int p = (l + 1) % 3, q = (l + 2) % 3;
        double v = vals[c], cs = cos(v), sn = sin(v);
        for (int e = 0; e < 9; e++) E[e] = 0.0;
        E[l * 3 + l] = 1.0;
        E[p * 3 + p] = cs;
        E[q * 3 + q] = cs;
        E[q * 3 + p] = sn;
        E[p * 3 + q] = -sn;
        for (int r = 0; r < 3; r++)
            for (int s = 0; s < 3; s++) T[r * 3 + s] = R[r * 3] * E[s] + R[r * 3 + 1] * E[3 + s] + R[r * 3 + 2] * E[6 + s];
        memcpy(R, T, sizeof R);
    }
    memcpy(out, R, sizeof R);
}

/* euler_read(Bt, Rt, out, n, i, j, k) -> None: animkit.motion.retarget_drive._drive_groups' reading, for joints of
 * two or three revolute DOFs about distinct coordinate axes: A = Bt^T . Rt (mm3's sums), then
 * animkit.model.transforms.euler_intrinsic_from_matrix(A, order) for the Tait-Bryan order (i, j, k) (k the third
 * axis for two DOFs), its arithmetic and its gimbal lock (|sin b| > 1 - 1e-12: g = 0, a carries the turn):
 *   b = asin(clip(s A_ik, -1, 1)), a = atan2(-s A_jk, A_kk), g = atan2(-s A_ij, A_ii)   s = +1 for a cyclic order.
 * Bt, Rt (n, 3, 3), out (n, 3). The C library's atan2/asin may differ from NumPy's SIMD ones in the last bit. */
static PyObject *euler_read(PyObject *self, PyObject *args) {
    Py_buffer b[3];
    Py_ssize_t n, i, j, k;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*w*nnnn", &b[0], &b[1], &b[2], &n, &i, &j, &k)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = n >= 0 && b[0].len == n * 9 * f8 && b[1].len == n * 9 * f8 && b[2].len == n * 3 * f8 && i >= 0 &&
             i < 3 && j >= 0 && j < 3 && k >= 0 && k < 3 && i != j && j != k && i != k;
    if (!ok) PyErr_SetString(PyExc_ValueError, "euler_read: a buffer's size or the order does not match");
    else {
        const double *Bt = b[0].buf, *Rt = b[1].buf;
        double *out = b[2].buf;
        const double sign = ((j - i + 3) % 3 == 1) ? 1.0 : -1.0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t m = 0; m < n; m++) euler_one(Bt + m * 9, Rt + m * 9, (int)i, (int)j, (int)k, sign, out + m * 3);
        Py_END_ALLOW_THREADS
    }
    for (int q = 0; q < 3; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* turned_by(Bt, vals, letters, out, n, k) -> None: animkit.motion.retarget_drive's world turn of a joint from its
 * parent frame's turn and its angles, R = Bt . R_l0(v_0) . R_l1(v_1) ..., R_l(v) the coordinate axis l's turn
 * (_about: cos v on the other two diagonal entries, sin v below, -sin v above), each product added as mm3 adds it.
 * Bt (n, 3, 3), vals (n, k), letters (k,) int64 (0, 1, 2 for x, y, z; -1: a DOF that does not turn), out (n, 3, 3). */
static PyObject *turned_by(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    Py_ssize_t n, k;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nn", &b[0], &b[1], &b[2], &b[3], &n, &k)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = n >= 0 && k >= 0 && b[0].len == n * 9 * f8 && b[1].len == n * k * f8 && b[2].len == k * 8 &&
             b[3].len == n * 9 * f8;
    const int64_t *letters = b[2].buf;
    for (Py_ssize_t c = 0; ok && c < k; c++) ok = letters[c] >= -1 && letters[c] < 3;
    if (!ok) PyErr_SetString(PyExc_ValueError, "turned_by: a buffer's size or a letter does not match n and k");
    else {
        const double *Bt = b[0].buf, *vals = b[1].buf;
        double *out = b[3].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t m = 0; m < n; m++) turned_one(Bt + m * 9, vals + m * k, letters, k, out + m * 9);
        Py_END_ALLOW_THREADS
    }
    for (int q = 0; q < 4; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* drive_joint(Rp, L, Rt, out, R, F, mp, D, c0, letters, i, j, k) -> None: animkit.motion.retarget_drive's
 * _drive_joint, _drive_groups' reading of one joint whose columns have no finite limit, in one pass over the frames:
 *   Bt_f = Rp_f . L (mm3's sums; Rp_f itself where L is empty: a parent frame that stands still),
 *   the Tait-Bryan angles of Bt_f^T . Rt_f for the order (i, j, k) (euler_read's arithmetic) written into
 *   out[f, c0 + c] for the DOFs c whose letters[c] >= 0, in order (the other columns keep what out holds),
 *   R_f = Bt_f . R_l0(v_0) ... over the row out[f, c0 : c0 + k] (turned_by's arithmetic).
 * Rp (mp, 3, 3) with mp = F or 1 (one parent turn for every frame), L (3, 3) or empty, Rt (F, 3, 3), out (F, D),
 * letters (k,) int64 with 2 or 3 letters >= 0 (those of the order i, j(, k)), R (F, 3, 3). */
static PyObject *drive_joint(PyObject *self, PyObject *args) {
    Py_buffer b[6];
    Py_ssize_t F, mp, D, c0, i, j, k;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*w*nnnny*nnn", &b[0], &b[1], &b[2], &b[3], &b[4], &F, &mp, &D, &c0, &b[5], &i,
                          &j, &k))
        return NULL;
    const Py_ssize_t f8 = sizeof(double), nk = b[5].len / 8;
    const int64_t *letters = b[5].buf;
    int ok = F >= 0 && (mp == F || mp == 1) && b[0].len == mp * 9 * f8 && (b[1].len == 0 || b[1].len == 9 * f8) &&
             b[2].len == F * 9 * f8 && b[3].len == F * D * f8 && b[4].len == F * 9 * f8 && b[5].len == nk * 8 &&
             c0 >= 0 && c0 + nk <= D && i >= 0 && i < 3 && j >= 0 && j < 3 && k >= 0 && k < 3 && i != j && j != k &&
             i != k;
    Py_ssize_t nrev = 0;
    for (Py_ssize_t c = 0; ok && c < nk; c++) {
        ok = letters[c] >= -1 && letters[c] < 3;
        nrev += letters[c] >= 0;
    }
    ok = ok && (nrev == 2 || nrev == 3);
    if (!ok) PyErr_SetString(PyExc_ValueError, "drive_joint: a buffer's size, the order or a letter does not match");
    else {
        const double *Rp = b[0].buf, *L = b[1].len ? b[1].buf : NULL, *Rt = b[2].buf;
        double *out = b[3].buf, *R = b[4].buf;
        const double sign = ((j - i + 3) % 3 == 1) ? 1.0 : -1.0;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t f = 0; f < F; f++) {
            const double *a = Rp + (mp == 1 ? 0 : f * 9);
            double Bt[9], eul[3];
            if (L == NULL) memcpy(Bt, a, sizeof Bt);
            else
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++) Bt[r * 3 + c] = a[r * 3] * L[c] + a[r * 3 + 1] * L[3 + c] + a[r * 3 + 2] * L[6 + c];
            euler_one(Bt, Rt + f * 9, (int)i, (int)j, (int)k, sign, eul);
            double *row = out + f * D + c0;
            for (Py_ssize_t c = 0, m = 0; c < nk; c++)
                if (letters[c] >= 0) row[c] = eul[m++];
            turned_one(Bt, row, letters, nk, R + f * 9);
        }
        Py_END_ALLOW_THREADS
    }
    for (int q = 0; q < 6; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* leg_bend(Hp, K, A, Mh, Mk, n_w, u, alpha, l1, dd, side, R_thigh, R_shin, K_new, n) -> None:
 * animkit.motion.leg_ik.held_legs_ik's two-bone step for n rows (legs' frames stacked), its NumPy arithmetic in one
 * pass: the knee plane's normal n_p = n_w - (n_w . u) u normalised, v = side (n_p x u), the knee
 * K' = Hp + l1 (cos(alpha) u + sin(alpha) v), the ankle A' = Hp + dd u, and the thigh's and shin's new world turns
 *   R_thigh = (F(K' - Hp, n_p) F(K - Hp, n_w)^T) Rh,   R_shin = (F(A' - K', n_p) F(A - K, n_w)^T) Rk
 * with F(a, b) the columns (a^, b_perp^, a^ x b_perp^) (_frames_batch) and Rh, Rk the hip's and knee's world
 * blocks Mh, Mk divided by their first column's length (_rotation). Positions (n, 3), blocks (n, 3, 3), alpha, l1,
 * dd and side (n,). The C library's cos/sin may differ from NumPy's SIMD ones in the last bit. */
static double norm3(const double *x) { return sqrt((x[0] * x[0] + x[1] * x[1]) + x[2] * x[2]); }

static void cross3(const double *a, const double *b, double *o) {
    o[0] = a[1] * b[2] - a[2] * b[1];
    o[1] = a[2] * b[0] - a[0] * b[2];
    o[2] = a[0] * b[1] - a[1] * b[0];
}

static void frame_cols(const double *a_in, const double *b_in, double *Fm) { /* _frames_batch, one row */
    double a[3], b[3], c[3], na = norm3(a_in);
    for (int i = 0; i < 3; i++) a[i] = a_in[i] / na;
    double ba = (b_in[0] * a[0] + b_in[1] * a[1]) + b_in[2] * a[2];
    for (int i = 0; i < 3; i++) b[i] = b_in[i] - ba * a[i];
    double nb = norm3(b);
    nb = nb > 1e-300 ? nb : 1e-300;
    for (int i = 0; i < 3; i++) b[i] = b[i] / nb;
    cross3(a, b, c);
    for (int i = 0; i < 3; i++) { Fm[i * 3] = a[i]; Fm[i * 3 + 1] = b[i]; Fm[i * 3 + 2] = c[i]; }
}

static void bone_turn(const double *Fa, const double *Fb, const double *M, double *out) {
    double T[9], R[9];
    double nm = sqrt((M[0] * M[0] + M[3] * M[3]) + M[6] * M[6]);
    for (int i = 0; i < 9; i++) R[i] = M[i] / nm;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) T[r * 3 + c] = Fa[r * 3] * Fb[c * 3] + Fa[r * 3 + 1] * Fb[c * 3 + 1] + Fa[r * 3 + 2] * Fb[c * 3 + 2];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) out[r * 3 + c] = T[r * 3] * R[c] + T[r * 3 + 1] * R[3 + c] + T[r * 3 + 2] * R[6 + c];
}

static PyObject *leg_bend(PyObject *self, PyObject *args) {
    Py_buffer b[14];
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*w*w*w*n", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &b[13], &n)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    static const int width[14] = {3, 3, 3, 9, 9, 3, 3, 1, 1, 1, 1, 9, 9, 3};
    int ok = n >= 0;
    for (int k = 0; ok && k < 14; k++) ok = b[k].len == n * width[k] * f8;
    if (!ok) PyErr_SetString(PyExc_ValueError, "leg_bend: a buffer's size does not match n");
    else {
        const double *Hp = b[0].buf, *K = b[1].buf, *A = b[2].buf, *Mh = b[3].buf, *Mk = b[4].buf, *nw = b[5].buf,
                     *u = b[6].buf, *alpha = b[7].buf, *l1 = b[8].buf, *dd = b[9].buf, *side = b[10].buf;
        double *Rt = b[11].buf, *Rs = b[12].buf, *Kn = b[13].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t r = 0; r < n; r++) {
            const double *h = Hp + r * 3, *k = K + r * 3, *a = A + r * 3, *w = nw + r * 3, *ur = u + r * 3;
            double np_[3], v[3], kn[3], an[3], d1[3], d2[3], Fa[9], Fb[9];
            double wu = (w[0] * ur[0] + w[1] * ur[1]) + w[2] * ur[2];
            for (int i = 0; i < 3; i++) np_[i] = w[i] - wu * ur[i];
            double nn = norm3(np_);
            for (int i = 0; i < 3; i++) np_[i] = np_[i] / nn;
            cross3(np_, ur, v);
            double ca = cos(alpha[r]), sa = sin(alpha[r]);
            for (int i = 0; i < 3; i++) {
                v[i] = side[r] * v[i];
                kn[i] = h[i] + l1[r] * (ca * ur[i] + sa * v[i]);
                an[i] = h[i] + dd[r] * ur[i];
                Kn[r * 3 + i] = kn[i];
            }
            for (int i = 0; i < 3; i++) { d1[i] = kn[i] - h[i]; d2[i] = k[i] - h[i]; }
            frame_cols(d1, np_, Fa);
            frame_cols(d2, w, Fb);
            bone_turn(Fa, Fb, Mh + r * 9, Rt + r * 9);
            for (int i = 0; i < 3; i++) { d1[i] = an[i] - kn[i]; d2[i] = a[i] - k[i]; }
            frame_cols(d1, np_, Fa);
            frame_cols(d2, w, Fb);
            bone_turn(Fa, Fb, Mk + r * 9, Rs + r * 9);
        }
        Py_END_ALLOW_THREADS
    }
    for (int k = 0; k < 14; k++) PyBuffer_Release(&b[k]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* unwrap_limits(values, lower, upper, out, F, n) -> None: animkit.motion.retarget_drive._unwrap_into_limits's NumPy
 * steps per column j of values (F, n), to 1e-12 (the mean's sum may add in another order than NumPy's reduction):
 *   u = np.unwrap(v) (d = v_f - v_{f-1}; d' = mod(d + pi, 2 pi) - pi, pi where d' = -pi and d > 0; the correction
 *   d' - d, 0 where |d| < pi, summed in frame order), shift = round((mean u - mid) / 2 pi) 2 pi (mid the middle of
 *   finite limits, else 0), then where the limits span a whole turn lo + mod(u - shift - lo, 2 pi) capped at hi,
 *   else u - shift clipped into [lo, hi]; mod is NumPy's (fmod, moved into the divisor's sign), NaN carried as
 *   NumPy carries it. Frames read row by row (every column at once), twice. */
static double np_mod(double a, double b) {
    double m = fmod(a, b);
    if (m != 0.0) {
        if ((b < 0) != (m < 0)) m += b;
    } else m = copysign(0.0, b);
    return m;
}

/* write_joint(Ra, L, Rw, active, P, lim, F, ma, D, c0, letters, i, j, k) -> None: animkit.motion.leg_ik's
 * _write_joint, _write_joints' reading of one joint on the frames f where active[f] != 0, in place in P (F, D):
 *   Bt_f = Ra_f . L (mm3's sums), the Tait-Bryan angles of Bt_f^T . Rw_f for the order (i, j, k) (euler_read's
 *   arithmetic) for the DOFs c with letters[c] >= 0, in order, each moved by whole turns nearest its old value
 *   o = P[f, c0 + c] (_nearest_turns: (o + ((a - o + pi) mod 2 pi)) - pi, NumPy's mod), the other DOFs keeping
 *   theirs; then every value of the row clipped to [lim[c, 0], lim[c, 1]] as NumPy's clip ufunc takes it on arrays
 *   (max then min, each keeping the bound where equal, NaN carried), written to P[f, c0 + c].
 * Ra (ma, 3, 3) with ma = F or 1, L and Rw (F or 1 / F, 3, 3), active (F,) uint8, lim (k, 2), letters (k,) int64
 * with 2 or 3 letters >= 0 (those of the order). */
static inline double np_clip_ufunc(double x, double lo, double hi) {
    double m = isnan(x) ? x : (x > lo ? x : lo);
    return isnan(m) ? m : (m < hi ? m : hi);
}

static PyObject *write_joint(PyObject *self, PyObject *args) {
    Py_buffer b[7];
    Py_ssize_t F, ma, D, c0, i, j, k;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*w*y*nnnny*nnn", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &F, &ma, &D, &c0,
                          &b[6], &i, &j, &k))
        return NULL;
    const Py_ssize_t f8 = sizeof(double), nk = b[6].len / 8;
    const int64_t *letters = b[6].buf;
    int ok = F >= 0 && (ma == F || ma == 1) && b[0].len == ma * 9 * f8 && b[1].len == 9 * f8 &&
             b[2].len == F * 9 * f8 && b[3].len == F && b[4].len == F * D * f8 && b[5].len == nk * 2 * f8 &&
             b[6].len == nk * 8 && c0 >= 0 && c0 + nk <= D && i >= 0 && i < 3 && j >= 0 && j < 3 && k >= 0 && k < 3 &&
             i != j && j != k && i != k;
    Py_ssize_t nrev = 0;
    for (Py_ssize_t c = 0; ok && c < nk; c++) {
        ok = letters[c] >= -1 && letters[c] < 3;
        nrev += letters[c] >= 0;
    }
    ok = ok && (nrev == 2 || nrev == 3);
    if (!ok) PyErr_SetString(PyExc_ValueError, "write_joint: a buffer's size, the order or a letter does not match");
    else {
        const double *Ra = b[0].buf, *L = b[1].buf, *Rw = b[2].buf, *lim = b[5].buf;
        const unsigned char *active = b[3].buf;
        double *P = b[4].buf;
        const double sign = ((j - i + 3) % 3 == 1) ? 1.0 : -1.0;
        const double pi = 3.141592653589793, two_pi = 2 * 3.141592653589793;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t f = 0; f < F; f++) {
            if (!active[f]) continue;
            const double *a = Ra + (ma == 1 ? 0 : f * 9);
            double Bt[9], eul[3];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) Bt[r * 3 + c] = a[r * 3] * L[c] + a[r * 3 + 1] * L[3 + c] + a[r * 3 + 2] * L[6 + c];
            euler_one(Bt, Rw + f * 9, (int)i, (int)j, (int)k, sign, eul);
            double *row = P + f * D + c0;
            for (Py_ssize_t c = 0, m = 0; c < nk; c++) {
                double v = row[c];
                if (letters[c] >= 0) v = (v + np_mod((eul[m++] - v) + pi, two_pi)) - pi;
                row[c] = np_clip_ufunc(v, lim[2 * c], lim[2 * c + 1]);
            }
        }
        Py_END_ALLOW_THREADS
    }
    for (int q = 0; q < 7; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *unwrap_limits(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    Py_ssize_t F, n;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nn", &b[0], &b[1], &b[2], &b[3], &F, &n)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = F >= 1 && n >= 0 && b[0].len == F * n * f8 && b[1].len == n * f8 && b[2].len == n * f8 &&
             b[3].len == F * n * f8;
    double *cum = ok ? PyMem_Calloc((size_t)(3 * n + 1), sizeof(double)) : NULL;
    if (!ok) PyErr_SetString(PyExc_ValueError, "unwrap_limits: a buffer's size does not match F >= 1 and n");
    else if (cum == NULL) PyErr_NoMemory();
    else {
        const double *V = b[0].buf, *lo = b[1].buf, *hi = b[2].buf;
        double *out = b[3].buf, *sum = cum + n, *shift = cum + 2 * n;
        const double pi = 3.141592653589793, two_pi = 2 * 3.141592653589793;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = 0; j < n; j++) {
            out[j] = V[j];
            sum[j] = V[j];
        }
        for (Py_ssize_t f = 1; f < F; f++) {
            const double *v = V + f * n, *prev = v - n;
            double *o = out + f * n;
            for (Py_ssize_t j = 0; j < n; j++) {
                double d = v[j] - prev[j];
                double dm = np_mod(d + pi, two_pi) + -pi;
                if (dm == -pi && d > 0) dm = pi;
                double corr = dm - d;
                if (fabs(d) < pi) corr = 0.0;
                cum[j] = f == 1 ? corr : cum[j] + corr;
                o[j] = v[j] + cum[j];
                sum[j] += o[j];
            }
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            int finite = isfinite(lo[j]) && isfinite(hi[j]);
            double mid = finite ? 0.5 * (lo[j] + hi[j]) : 0.0;
            shift[j] = nearbyint((sum[j] / (double)F - mid) / two_pi) * two_pi;
            cum[j] = finite && hi[j] - lo[j] >= two_pi - 1e-9; /* (reused: whether the limits span a whole turn) */
        }
        for (Py_ssize_t f = 0; f < F; f++) {
            double *o = out + f * n;
            for (Py_ssize_t j = 0; j < n; j++) {
                double v = o[j] - shift[j];
                if (cum[j] != 0.0) {
                    double w = lo[j] + np_mod(v - lo[j], two_pi);
                    o[j] = w > hi[j] ? hi[j] : w;
                } else {
                    double c = v < lo[j] ? lo[j] : v;
                    o[j] = c > hi[j] ? hi[j] : c;
                }
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(cum);
    for (int q = 0; q < 4; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* smooth_max(x, out, F, r) -> None: animkit.motion.pelvis.smooth_max's NumPy steps, bit for bit: x (F,) edge-padded
 * by r, its max over each window of 2r + 1 (NaN carried as np.max carries it), edge-padded by r again, and that
 * window's mean: NumPy's pairwise sum (eight running sums over blocks of up to 128, halves above; the order
 * np.add.reduce takes along a contiguous window) divided by 2r + 1. The max by running maxima within blocks of
 * 2r + 1 (van Herk / Gil-Werman: three comparisons a frame; a max is exact in any order), the mean one window at a
 * time (NumPy's max and mean over a strided window view take ~F x 49 steps each at 120 fps). Returns 1, or 0
 * where x holds a NaN (nothing written: left to NumPy, whose max carries it). */
static double pairwise_sum(const double *a, Py_ssize_t n) {
    if (n < 8) {
        double res = -0.0;
        for (Py_ssize_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= 128) {
        double r[8];
        Py_ssize_t i;
        for (int j = 0; j < 8; j++) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++) r[j] += a[i + j];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    Py_ssize_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

static PyObject *smooth_max(PyObject *self, PyObject *args) {
    Py_buffer b[2];
    Py_ssize_t F, r;
    int done = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*nn", &b[0], &b[1], &F, &r)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = F >= 1 && r >= 0 && b[0].len == F * f8 && b[1].len == F * f8;
    double *pad = ok ? PyMem_Malloc((size_t)(3 * (F + 2 * r)) * sizeof(double)) : NULL;
    if (!ok) PyErr_SetString(PyExc_ValueError, "smooth_max: a buffer's size does not match F >= 1 (r >= 0)");
    else if (pad == NULL) PyErr_NoMemory();
    else {
        const double *x = b[0].buf;
        double *out = b[1].buf;
        const Py_ssize_t w = 2 * r + 1;
        Py_BEGIN_ALLOW_THREADS
        int nan = 0;
        for (Py_ssize_t i = 0; i < F; i++) nan |= x[i] != x[i];
        if (!nan) {
            const Py_ssize_t n = F + 2 * r;
            double *g = pad + n, *h = pad + 2 * n; /* van Herk / Gil-Werman: running maxima within blocks of w */
            for (Py_ssize_t i = 0; i < n; i++) pad[i] = x[i < r ? 0 : (i - r >= F ? F - 1 : i - r)];
            for (Py_ssize_t i = 0; i < n; i++) g[i] = i % w == 0 || pad[i] > g[i - 1] ? pad[i] : g[i - 1];
            for (Py_ssize_t i = n - 1; i >= 0; i--)
                h[i] = i == n - 1 || (i + 1) % w == 0 || pad[i] > h[i + 1] ? pad[i] : h[i + 1];
            for (Py_ssize_t f = 0; f < F; f++) out[f] = h[f] > g[f + w - 1] ? h[f] : g[f + w - 1];
            for (Py_ssize_t i = 0; i < F + 2 * r; i++) pad[i] = out[i < r ? 0 : (i - r >= F ? F - 1 : i - r)];
            for (Py_ssize_t f = 0; f < F; f++) out[f] = pairwise_sum(pad + f, w) / (double)w;
            done = 1;
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(pad);
    for (int q = 0; q < 2; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(done);
}

/* drift_means(Y, mask, runs, out, nX, nM, L, U, window) -> None: animkit.motion.legs._drift's NumPy steps, bit for bit:
 * Y (nX, nM, L, 2) the ground positions of nM planted points in nX clips over L frames, mask (nM, L) uint8 their
 * contacts, runs (U, 2) int64 the runs [s, e) of the masks' union. Per point, per run [s, e) of its mask, w =
 * min(window, e - s - 1) >= 1: v(f) = sqrt(dx^2 + dy^2) / w, d = Y(f + w) - Y(f), for f in [s, e - w), NaN elsewhere;
 * the slowest point per frame (fmin: NaN only where every point is); out (nX, U) each union run's mean of it over
 * its frames that are not NaN (NumPy's pairwise sum of them, NaN among them read as 0, over their count), NaN where
 * none is. Scratch: nX * nM * L + L doubles. */
static PyObject *drift_means(PyObject *self, PyObject *args) {
    Py_buffer b[4];
    Py_ssize_t nX, nM, L, U, window;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*w*nnnnn", &b[0], &b[1], &b[2], &b[3], &nX, &nM, &L, &U, &window)) return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = nX >= 1 && nM >= 1 && L >= 1 && U >= 0 && window >= 1 && b[0].len == nX * nM * L * 2 * f8 &&
             b[1].len == nM * L && b[2].len == U * 2 * 8 && b[3].len == nX * U * f8;
    const int64_t *runs = b[2].buf;
    for (Py_ssize_t u = 0; ok && u < U; u++) ok = 0 <= runs[2 * u] && runs[2 * u] < runs[2 * u + 1] && runs[2 * u + 1] <= L;
    double *v = ok ? PyMem_Malloc((size_t)(nX * nM * L + L) * sizeof(double)) : NULL;
    if (!ok) PyErr_SetString(PyExc_ValueError, "drift_means: a buffer's size or a run does not match nX, nM, L and U");
    else if (v == NULL) PyErr_NoMemory();
    else {
        const double *Y = b[0].buf;
        const unsigned char *mask = b[1].buf;
        double *out = b[3].buf, *seg = v + nX * nM * L;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < nX * nM * L; i++) v[i] = NAN;
        for (Py_ssize_t j = 0; j < nM; j++) {
            const unsigned char *m = mask + j * L;
            for (Py_ssize_t s = 0; s < L;) {
                if (!m[s]) { s++; continue; }
                Py_ssize_t e = s;
                while (e < L && m[e]) e++;
                Py_ssize_t w = e - s - 1 < window ? e - s - 1 : window;
                for (Py_ssize_t x = 0; w >= 1 && x < nX; x++) {
                    const double *y = Y + ((x * nM + j) * L) * 2;
                    double *o = v + (x * nM + j) * L;
                    for (Py_ssize_t f = s; f < e - w; f++) {
                        double dx = y[2 * (f + w)] - y[2 * f], dy = y[2 * (f + w) + 1] - y[2 * f + 1];
                        o[f] = sqrt(dx * dx + dy * dy) * 1.0 / (double)w;
                    }
                }
                s = e;
            }
        }
        for (Py_ssize_t x = 0; x < nX; x++) {
            double *slow = v + x * nM * L; /* the slowest point, written over the first point's row */
            for (Py_ssize_t j = 1; j < nM; j++) {
                const double *o = v + (x * nM + j) * L;
                for (Py_ssize_t f = 0; f < L; f++) slow[f] = slow[f] != slow[f] ? o[f] : (o[f] < slow[f] ? o[f] : slow[f]);
            }
            for (Py_ssize_t u = 0; u < U; u++) {
                Py_ssize_t s = (Py_ssize_t)runs[2 * u], e = (Py_ssize_t)runs[2 * u + 1], count = 0;
                for (Py_ssize_t f = s; f < e; f++) {
                    seg[f - s] = slow[f] != slow[f] ? 0.0 : slow[f];
                    count += slow[f] == slow[f];
                }
                out[x * U + u] = count ? pairwise_sum(seg, e - s) / (double)count : NAN;
            }
        }
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(v);
    for (int q = 0; q < 4; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* prio_step(J, V, counts, lams, grad, sc, Jb, room, out, n, L, mb, bound) -> 1, or 0 (left to NumPy):
 * animkit.ik.prioritised.bounded_step's arithmetic in one call. The L levels' rows J (sum counts x n, stacked in
 * order), their V and lambda; grad = the null-space gradient, sc = W^-1/2, bound = its step's bound; the mb
 * inequality rows Jb (mb x n) and their room (mb = 0: none). Each level k in the null space of those before:
 *   Jt = J_k sc, JP = Jt P (Jt where P = I), x = (JP JP^T + lam^2 I)^-1 (V_k - Jt dphi), dphi += JP^T x,
 *   P -= JP^T (JP JP^T + 1e-8 I)^-1 JP (only where a later level or the gradient reads it),
 * then dz = 1/2 P (sc grad) bounded by `bound` (max norm), out = sc (dphi - dz); the rows that step breaks join
 * as a first level asking J dq = room (room scaled by 0.2 where >= 0), up to 3 rounds (an active set). Solves by
 * LU with partial pivoting (LAPACK's dgesv's algorithm; its sums in another order: equal to NumPy to ~1e-15).
 * Returns 0, with out undefined, where a matrix is exactly singular or a number is not finite: NumPy's path then
 * gives its own answer or its LinAlgError. */
typedef struct {
    const double *J, *V;
    Py_ssize_t m;
    double lam;
} prio_level;

static int prio_lu_solve(double *A, Py_ssize_t m, double *B, Py_ssize_t r) {
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t p = k;
        double big = fabs(A[k * m + k]);
        for (Py_ssize_t i = k + 1; i < m; i++)
            if (fabs(A[i * m + k]) > big) { big = fabs(A[i * m + k]); p = i; }
        if (!(big > 0.0)) return -1; /* exactly singular (or NaN): NumPy's path decides */
        if (p != k) {
            for (Py_ssize_t j = 0; j < m; j++) { double t = A[k * m + j]; A[k * m + j] = A[p * m + j]; A[p * m + j] = t; }
            for (Py_ssize_t c = 0; c < r; c++) { double t = B[k * r + c]; B[k * r + c] = B[p * r + c]; B[p * r + c] = t; }
        }
        double piv = A[k * m + k];
        for (Py_ssize_t i = k + 1; i < m; i++) {
            double l = A[i * m + k] / piv;
            if (l == 0.0) continue;
            for (Py_ssize_t j = k + 1; j < m; j++) A[i * m + j] -= l * A[k * m + j];
            for (Py_ssize_t c = 0; c < r; c++) B[i * r + c] -= l * B[k * r + c];
        }
    }
    for (Py_ssize_t i = m - 1; i >= 0; i--) {
        for (Py_ssize_t c = 0; c < r; c++) {
            double s = B[i * r + c];
            for (Py_ssize_t j = i + 1; j < m; j++) s -= A[i * m + j] * B[j * r + c];
            B[i * r + c] = s / A[i * m + i];
        }
    }
    return 0;
}

/* the workspace: P, P2 (n x n), dphi, v (n), Jt, JP, Y (M x n), G, A (M x M), x (M) */
static Py_ssize_t prio_work_size(Py_ssize_t n, Py_ssize_t M) { return 2 * n * n + 2 * n + 3 * M * n + 2 * M * M + M; }

static int prio_core(const prio_level *lv, Py_ssize_t L, const double *grad, const double *sc, double bound,
                     Py_ssize_t n, Py_ssize_t M, double *w, double *out) {
    double *P = w, *P2 = P + n * n, *dphi = P2 + n * n, *v = dphi + n, *Jt = v + n, *JP = Jt + M * n,
           *Y = JP + M * n, *G = Y + M * n, *A = G + M * M, *x = A + M * M;
    int null = 0, hasP = 0;
    for (Py_ssize_t j = 0; j < n; j++) { null |= grad[j] != 0.0; dphi[j] = 0.0; }
    for (Py_ssize_t k = 0; k < L; k++) {
        const Py_ssize_t m = lv[k].m;
        const double *J = lv[k].J, *V = lv[k].V;
        for (Py_ssize_t i = 0; i < m; i++)
            for (Py_ssize_t j = 0; j < n; j++) Jt[i * n + j] = J[i * n + j] * sc[j];
        if (!hasP) memcpy(JP, Jt, (size_t)(m * n) * sizeof(double));
        else
            for (Py_ssize_t i = 0; i < m; i++)
                for (Py_ssize_t j = 0; j < n; j++) {
                    double s = 0.0;
                    for (Py_ssize_t l = 0; l < n; l++) s += Jt[i * n + l] * P[l * n + j];
                    JP[i * n + j] = s;
                }
        for (Py_ssize_t i = 0; i < m; i++)
            for (Py_ssize_t c = 0; c <= i; c++) {
                double s = 0.0;
                for (Py_ssize_t j = 0; j < n; j++) s += JP[i * n + j] * JP[c * n + j];
                G[i * m + c] = G[c * m + i] = s;
            }
        for (Py_ssize_t i = 0; i < m; i++) {
            double s = V[i];
            if (k > 0)
                for (Py_ssize_t j = 0; j < n; j++) s -= Jt[i * n + j] * dphi[j];
            x[i] = s;
        }
        memcpy(A, G, (size_t)(m * m) * sizeof(double));
        for (Py_ssize_t i = 0; i < m; i++) A[i * m + i] += lv[k].lam * lv[k].lam;
        if (prio_lu_solve(A, m, x, 1)) return -1;
        if (null || k < L - 1) {
            memcpy(A, G, (size_t)(m * m) * sizeof(double));
            for (Py_ssize_t i = 0; i < m; i++) A[i * m + i] += 1e-8;
            memcpy(Y, JP, (size_t)(m * n) * sizeof(double));
            if (prio_lu_solve(A, m, Y, n)) return -1;
            for (Py_ssize_t a = 0; a < n; a++)
                for (Py_ssize_t b = 0; b < n; b++) {
                    double s = 0.0;
                    for (Py_ssize_t i = 0; i < m; i++) s += JP[i * n + a] * Y[i * n + b];
                    P2[a * n + b] = (hasP ? P[a * n + b] : (double)(a == b)) - s;
                }
            memcpy(P, P2, (size_t)(n * n) * sizeof(double));
            hasP = 1;
        }
        for (Py_ssize_t j = 0; j < n; j++) {
            double s = 0.0;
            for (Py_ssize_t i = 0; i < m; i++) s += JP[i * n + j] * x[i];
            dphi[j] = dphi[j] + s;
        }
    }
    if (!null) {
        for (Py_ssize_t j = 0; j < n; j++) out[j] = sc[j] * dphi[j];
        return 0;
    }
    double big = 0.0;
    for (Py_ssize_t j = 0; j < n; j++) v[j] = sc[j] * grad[j];
    for (Py_ssize_t a = 0; a < n; a++) {
        double s;
        if (hasP) {
            s = 0.0;
            for (Py_ssize_t b = 0; b < n; b++) s += 0.5 * P[a * n + b] * v[b];
        } else s = 0.5 * v[a];
        out[a] = s; /* dz, for now */
        if (fabs(s) > big) big = fabs(s);
    }
    double f = big > bound ? bound / big : 1.0;
    for (Py_ssize_t j = 0; j < n; j++) out[j] = sc[j] * (dphi[j] - (f == 1.0 ? out[j] : out[j] * f));
    return 0;
}

static PyObject *prio_step(PyObject *self, PyObject *args) {
    Py_buffer b[9];
    Py_ssize_t n, L, mb;
    double bound;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*w*nnnd", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &n, &L, &mb, &bound))
        return NULL;
    const Py_ssize_t f8 = sizeof(double);
    const int64_t *counts = b[2].buf;
    Py_ssize_t rows = 0, M = mb;
    int ok = n >= 1 && L >= 0 && mb >= 0 && b[2].len == L * 8 && b[3].len == L * f8 && b[4].len == n * f8 &&
             b[5].len == n * f8 && b[6].len == mb * n * f8 && b[7].len == mb * f8 && b[8].len == n * f8;
    for (Py_ssize_t k = 0; ok && k < L; k++) {
        ok = counts[k] >= 1;
        rows += (Py_ssize_t)counts[k];
        if (counts[k] > M) M = (Py_ssize_t)counts[k];
    }
    ok = ok && b[0].len == rows * n * f8 && b[1].len == rows * f8;
    double *w = NULL;
    prio_level *lv = NULL;
    unsigned char *act = NULL;
    if (ok) {
        w = PyMem_Malloc((size_t)(prio_work_size(n, M) + mb * n + mb + mb) * sizeof(double));
        lv = PyMem_Malloc((size_t)(L + 1) * sizeof(prio_level));
        act = PyMem_Malloc((size_t)(2 * mb + 1));
    }
    int res = 0;
    if (!ok) PyErr_SetString(PyExc_ValueError, "prio_step: a buffer's size does not match n, L, mb and counts");
    else if (w == NULL || lv == NULL || act == NULL) PyErr_NoMemory();
    else {
        const double *J = b[0].buf, *V = b[1].buf, *lams = b[3].buf, *grad = b[4].buf, *sc = b[5].buf,
                     *Jb = b[6].buf, *room = b[7].buf;
        double *out = b[8].buf, *Ja = w + prio_work_size(n, M), *Ra = Ja + mb * n, *rg = Ra + mb;
        unsigned char *want = act + mb;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t r0 = 0;
        for (Py_ssize_t k = 0; k < L; k++) {
            lv[k + 1].J = J + r0 * n;
            lv[k + 1].V = V + r0;
            lv[k + 1].m = (Py_ssize_t)counts[k];
            lv[k + 1].lam = lams[k];
            r0 += (Py_ssize_t)counts[k];
        }
        int fail = prio_core(lv + 1, L, grad, sc, bound, n, M, w, out);
        for (Py_ssize_t i = 0; i < mb; i++) { rg[i] = room[i] < 0 ? room[i] : 0.2 * room[i]; act[i] = 0; }
        for (int round = 0; !fail && mb > 0 && round < 3; round++) { /* BOUND_ROUNDS, BOUND_GAIN above */
            int changed = 0;
            Py_ssize_t cnt = 0;
            for (Py_ssize_t i = 0; i < mb; i++) {
                double s = 0.0;
                for (Py_ssize_t j = 0; j < n; j++) s += Jb[i * n + j] * out[j];
                want[i] = act[i] || rg[i] < 0 || s > rg[i] + 1e-12;
                changed |= want[i] != act[i];
            }
            if (!changed) break;
            for (Py_ssize_t i = 0; i < mb; i++) {
                act[i] = want[i];
                if (!act[i]) continue;
                memcpy(Ja + cnt * n, Jb + i * n, (size_t)n * sizeof(double));
                Ra[cnt++] = rg[i];
            }
            lv[0].J = Ja;
            lv[0].V = Ra;
            lv[0].m = cnt;
            lv[0].lam = 1e-3; /* BOUND_DAMPING */
            fail = prio_core(lv, L + 1, grad, sc, bound, n, M, w, out);
        }
        for (Py_ssize_t j = 0; !fail && j < n; j++) fail = !isfinite(out[j]);
        res = !fail;
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(w);
    PyMem_Free(lv);
    PyMem_Free(act);
    for (int q = 0; q < 9; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    return PyLong_FromLong(res);
}

/* chain_fk(q, Hs, parent, revolute, eff_link, eff_C, T, r, a, Eff, n, K, E): animkit.ik.problem.ChainModel.forward
 * for one configuration (b = 1): per link C_k E_k(q_k) = [1, sin q, 1 - cos q(, q)] . Hs_k (K x 20, summed in
 * that order), T_k = T_parent(k)[:, :4] . (C_k E_k) (4 x 5; a root link: C_k E_k), the DOF axis a_k = T_k[:3, 4],
 * its origin r_k = T_k[:3, 3] (less a_k q_k for a prismatic link), each effector T_link(e)[:, :4] . eff_C_e.
 * The same products as NumPy's matmul, summed in index order (its BLAS may fuse or reorder: ~1e-16 apart). */
static PyObject *chain_fk(PyObject *self, PyObject *args) {
    Py_buffer b[10];
    Py_ssize_t n, K, E;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*w*w*w*w*nnn", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &b[9], &n, &K, &E))
        return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = n >= 1 && (K == 3 || K == 4) && E >= 0 && b[0].len == n * f8 && b[1].len == n * K * 20 * f8 &&
             b[2].len == n * 8 && b[3].len == n && b[4].len == E * 8 && b[5].len == E * 16 * f8 &&
             b[6].len == n * 20 * f8 && b[7].len == n * 3 * f8 && b[8].len == n * 3 * f8 && b[9].len == E * 16 * f8;
    const int64_t *parent = b[2].buf, *eff = b[4].buf;
    for (Py_ssize_t k = 0; ok && k < n; k++) ok = parent[k] < k;
    for (Py_ssize_t e = 0; ok && e < E; e++) ok = 0 <= eff[e] && eff[e] < n;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "chain_fk: a buffer's size or an index does not match n, K and E");
    } else {
        const double *q = b[0].buf, *Hs = b[1].buf, *C = b[5].buf;
        const unsigned char *rev = b[3].buf;
        double *T = b[6].buf, *r = b[7].buf, *a = b[8].buf, *Eff = b[9].buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < n; k++) {
            double basis[4] = {1.0, sin(q[k]), 0.0, q[k]}, loc[20];
            basis[2] = 1.0 - cos(q[k]);
            const double *H = Hs + k * K * 20;
            for (int i = 0; i < 20; i++) {
                double s = basis[0] * H[i];
                for (Py_ssize_t c = 1; c < K; c++) s += basis[c] * H[c * 20 + i];
                loc[i] = s;
            }
            double *Tk = T + k * 20;
            if (parent[k] < 0) memcpy(Tk, loc, sizeof(loc));
            else {
                const double *Tp = T + parent[k] * 20;
                for (int i = 0; i < 4; i++)
                    for (int j = 0; j < 5; j++) {
                        double s = Tp[i * 5] * loc[j];
                        for (int l = 1; l < 4; l++) s += Tp[i * 5 + l] * loc[l * 5 + j];
                        Tk[i * 5 + j] = s;
                    }
            }
            for (int i = 0; i < 3; i++) {
                a[k * 3 + i] = Tk[i * 5 + 4];
                r[k * 3 + i] = rev[k] ? Tk[i * 5 + 3] : Tk[i * 5 + 3] - Tk[i * 5 + 4] * q[k];
            }
        }
        for (Py_ssize_t e = 0; e < E; e++) {
            const double *Tl = T + eff[e] * 20, *Ce = C + e * 16;
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++) {
                    double s = Tl[i * 5] * Ce[j];
                    for (int l = 1; l < 4; l++) s += Tl[i * 5 + l] * Ce[l * 4 + j];
                    Eff[e * 16 + i * 4 + j] = s;
                }
        }
        Py_END_ALLOW_THREADS
    }
    for (int q = 0; q < 10; q++) PyBuffer_Release(&b[q]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

/* spread_turns: animkit.ik.spread.Spread.compute's joint groups (its _turn per joint, then each group's turns less
 * their mean): for joint j of N (one group), r_j = P(R_j) log(Tᵀ_j Π_i E_i(θ_ji))^∨ with P the polar factor
 * (Newton's iteration X ← (X + X⁻ᵀ)/2, where the reference takes U Vᵀ of an SVD: the same factor to ~1e-16), E_i a
 * revolute DOF's Rodrigues turn (a prismatic DOF's is I, a scale DOF's I + (θ − 1) a aᵀ), then ∂r_j = a_m × r_j on the DOFs ``above`` marks and
 * J_l⁻¹(r_j) a_k on those ``mine`` marks; out e (3N,) = r − mean(r), J (3N, D) = ∂r − mean(∂r). kind[j*K+i]
 * (up to K DOFs a joint): 0 none, 1 revolute, 2 prismatic, 3 scale; a joint with no DOF (has[j] = 0) turns r = 0, ∂r = 0. Returns 1, or 0 (a
 * singular R or a number not finite: left to NumPy). */
static void sp_mm3(const double *A, const double *B, double *C) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) C[i * 3 + j] = (A[i * 3] * B[j] + A[i * 3 + 1] * B[3 + j]) + A[i * 3 + 2] * B[6 + j];
}

static int sp_polar(const double *R, double *X) {
    memcpy(X, R, 9 * sizeof(double));
    for (int it = 0; it < 60; it++) {
        double c[9] = {X[4] * X[8] - X[5] * X[7], X[5] * X[6] - X[3] * X[8], X[3] * X[7] - X[4] * X[6],
                       X[2] * X[7] - X[1] * X[8], X[0] * X[8] - X[2] * X[6], X[1] * X[6] - X[0] * X[7],
                       X[1] * X[5] - X[2] * X[4], X[2] * X[3] - X[0] * X[5], X[0] * X[4] - X[1] * X[3]};
        double det = X[0] * c[0] + X[1] * c[1] + X[2] * c[2]; /* c: the cofactors, X⁻ᵀ = c / det */
        if (!(fabs(det) > 1e-300) || !isfinite(det)) return 0;
        double change = 0.0;
        for (int k = 0; k < 9; k++) {
            double y = 0.5 * (X[k] + c[k] / det);
            change = fmax(change, fabs(y - X[k]));
            X[k] = y;
        }
        if (change <= 1e-15) return 1;
    }
    return 0;
}

static void sp_log(const double *M, double *out) { /* animkit.model.transforms.rotation_vector_from_matrix */
    double u[3] = {0.5 * (M[7] - M[5]), 0.5 * (M[2] - M[6]), 0.5 * (M[3] - M[1])};
    double cs = 0.5 * ((M[0] + M[4]) + M[8] - 1.0);
    cs = cs < -1.0 ? -1.0 : (cs > 1.0 ? 1.0 : cs);
    double sn = sqrt((u[0] * u[0] + u[1] * u[1]) + u[2] * u[2]);
    double angle = atan2(sn, cs);
    double f = sn > 1e-12 ? angle / (sn > 1e-300 ? sn : 1e-300) : 1.0;
    for (int i = 0; i < 3; i++) out[i] = u[i] * f;
    if (cs < 0.0 && sn < 1e-6) { /* near π: the axis from (M + Mᵀ)/2 − cos I, its largest diagonal's row */
        double S[9];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) S[i * 3 + j] = 0.5 * (M[i * 3 + j] + M[j * 3 + i]) - (i == j ? cs : 0.0);
        int col = 0;
        if (S[4] > S[col * 4]) col = 1;
        if (S[8] > S[col * 4]) col = 2;
        double ax[3] = {S[col * 3], S[col * 3 + 1], S[col * 3 + 2]};
        double n = sqrt((ax[0] * ax[0] + ax[1] * ax[1]) + ax[2] * ax[2]);
        n = n > 1e-300 ? n : 1e-300;
        double dot = 0.0;
        for (int i = 0; i < 3; i++) {
            ax[i] /= n;
            dot += ax[i] * u[i];
        }
        double sg = dot < 0 ? -1.0 : 1.0;
        for (int i = 0; i < 3; i++) out[i] = ax[i] * (sg * angle);
    }
}

static PyObject *spread_turns(PyObject *self, PyObject *args) {
    Py_buffer b[11];
    Py_ssize_t N, D, K;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*w*w*nnn", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6], &b[7],
                          &b[8], &b[9], &b[10], &N, &D, &K))
        return NULL;
    const Py_ssize_t f8 = sizeof(double);
    int ok = N >= 1 && D >= 0 && K >= 0 && b[0].len == N * 9 * f8 && b[1].len == N * 9 * f8 &&
             b[2].len == N * K * 3 * f8 && b[3].len == N * K && b[4].len == N * K * f8 && b[5].len == N && b[6].len == D * 3 * f8 &&
             b[7].len == N * D && b[8].len == N * D && b[9].len == N * 3 * f8 && b[10].len == N * 3 * D * f8;
    if (!ok) {
        for (int k = 0; k < 11; k++) PyBuffer_Release(&b[k]);
        PyErr_SetString(PyExc_ValueError, "spread_turns: a buffer's size does not match N, D and K");
        return NULL;
    }
    const double *R = b[0].buf, *T = b[1].buf, *axes = b[2].buf, *theta = b[4].buf, *a = b[6].buf;
    const unsigned char *kind = b[3].buf, *has = b[5].buf, *above = b[7].buf, *mine = b[8].buf;
    double *e = b[9].buf, *J = b[10].buf;
    int good = 1;
    Py_BEGIN_ALLOW_THREADS
    memset(J, 0, (size_t)(N * 3 * D) * sizeof(double));
    for (Py_ssize_t j = 0; j < N && good; j++) {
        double *r = e + j * 3, *Jj = J + j * 3 * D;
        r[0] = r[1] = r[2] = 0.0;
        if (!has[j]) continue;
        double W[9], A[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, L[9], v[3];
        if (!sp_polar(R + j * 9, W)) {
            good = 0;
            break;
        }
        for (Py_ssize_t i = 0; i < K; i++) {
            const unsigned char kd = kind[j * K + i];
            if (kd != 1 && kd != 3) continue;
            const double *ax = axes + (j * K + i) * 3, t = theta[j * K + i];
            double E[9], P[9];
            if (kd == 1) {
                double s = sin(t), c1 = 1.0 - cos(t);
                double S[9] = {0.0, -ax[2], ax[1], ax[2], 0.0, -ax[0], -ax[1], ax[0], 0.0}, S2[9];
                sp_mm3(S, S, S2);
                for (int k = 0; k < 9; k++) E[k] = ((k % 4 == 0 ? 1.0 : 0.0) + s * S[k]) + c1 * S2[k];
            } else {
                for (int k = 0; k < 9; k++) E[k] = (k % 4 == 0 ? 1.0 : 0.0) + (t - 1.0) * (ax[k / 3] * ax[k % 3]);
            }
            sp_mm3(A, E, P);
            memcpy(A, P, sizeof(P));
        }
        sp_mm3(T + j * 9, A, L);
        sp_log(L, v);
        for (int i = 0; i < 3; i++) r[i] = (W[i * 3] * v[0] + W[i * 3 + 1] * v[1]) + W[i * 3 + 2] * v[2];
        double t = sqrt((r[0] * r[0] + r[1] * r[1]) + r[2] * r[2]);
        double cc = t < 1e-4 ? 1.0 / 12.0 + t * t / 720.0 : 1.0 / (t * t) - (1.0 + cos(t)) / (2.0 * t * sin(t));
        double K[9] = {0.0, -r[2], r[1], r[2], 0.0, -r[0], -r[1], r[0], 0.0}, K2[9], Li[9];
        sp_mm3(K, K, K2);
        for (int k = 0; k < 9; k++) Li[k] = ((k % 4 == 0 ? 1.0 : 0.0) - 0.5 * K[k]) + cc * K2[k];
        for (Py_ssize_t m = 0; m < D; m++) {
            const double *am = a + m * 3;
            if (mine[j * D + m]) {
                for (int i = 0; i < 3; i++) Jj[i * D + m] = (Li[i * 3] * am[0] + Li[i * 3 + 1] * am[1]) + Li[i * 3 + 2] * am[2];
            } else if (above[j * D + m]) {
                Jj[m] = am[1] * r[2] - am[2] * r[1];
                Jj[D + m] = am[2] * r[0] - am[0] * r[2];
                Jj[2 * D + m] = am[0] * r[1] - am[1] * r[0];
            }
        }
    }
    for (Py_ssize_t k = 0; good && k < 3 * D + 3; k++) { /* each column less its mean over the joints */
        double *base = k < 3 ? e + k : J + (k - 3);
        Py_ssize_t stride = k < 3 ? 3 : 3 * D;
        double s = 0.0;
        for (Py_ssize_t j = 0; j < N; j++) s += base[j * stride];
        double mean = s / (double)N;
        if (!isfinite(mean)) good = 0;
        for (Py_ssize_t j = 0; j < N; j++) base[j * stride] -= mean;
    }
    Py_END_ALLOW_THREADS
    for (int k = 0; k < 11; k++) PyBuffer_Release(&b[k]);
    return PyLong_FromLong(good);
}

/* ranges_values: animkit.ik.ranges.Ranges.values (the module's docstring: side bend, twist, pelvis roll, knees in),
 * each quantity's value and its row ∂/∂θ (D,) in one call. X (P, 3): the points read (the right and left upper
 * arms where ``arms``, then each leg's knee, ankle and toe), O (L, 3) each leg's other ankle, Rh the hips' world
 * rotation, ph and hh the pelvis's up and right in the hips' frame, u the unit up, a and r (D, 3) the DOFs' world
 * axes and origins, rev (D,) revolute, moves (P, D) the DOFs that move each point, pd (D,) those that turn the
 * hips; flags: side bend, twist, pelvis roll. A point's Jacobian column is a_m × (x − r_m) (revolute) or a_m, where
 * the DOF moves it. Out: vals (M,) and rows (M, D), M = sb + tw + pr + L, in that order. Returns 1. */
static void rg_matvec(const double *R, const double *v, double *o) {
    for (int i = 0; i < 3; i++) o[i] = (R[i * 3] * v[0] + R[i * 3 + 1] * v[1]) + R[i * 3 + 2] * v[2];
}

static double rg_dot(const double *x, const double *y) { return (x[0] * y[0] + x[1] * y[1]) + x[2] * y[2]; }

static void rg_pj(const double *x, const double *a, const double *r, const unsigned char *rev,
                  const unsigned char *moves, Py_ssize_t D, double *J) { /* J (3, D): the point x's Jacobian */
    for (Py_ssize_t m = 0; m < D; m++) {
        double c[3] = {a[m * 3], a[m * 3 + 1], a[m * 3 + 2]};
        if (rev[m]) {
            double v[3] = {x[0] - r[m * 3], x[1] - r[m * 3 + 1], x[2] - r[m * 3 + 2]};
            cross3(a + m * 3, v, c);
        }
        for (int i = 0; i < 3; i++) J[i * D + m] = moves[m] ? c[i] : 0.0;
    }
}

static double rg_unit_den(double x) { double s = sqrt(fmax(1.0 - x * x, 0.0)); return s > 1e-9 ? s : 1e-9; }

static PyObject *ranges_values(PyObject *self, PyObject *args) {
    Py_buffer b[13];
    Py_ssize_t P, L, D;
    int sb, tw, pr;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*w*w*nnniii", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &P, &L, &D, &sb, &tw, &pr))
        return NULL;
    const Py_ssize_t f8 = sizeof(double), arms = P - 3 * L, M = sb + tw + pr + L;
    int ok = P >= 0 && L >= 0 && D >= 0 && (arms == 0 || arms == 2) && (arms == 2 || (!sb && !tw)) &&
             b[0].len == P * 3 * f8 && b[1].len == L * 3 * f8 && b[2].len == 9 * f8 && b[3].len == 3 * f8 &&
             b[4].len == 3 * f8 && b[5].len == 3 * f8 && b[6].len == D * 3 * f8 && b[7].len == D * 3 * f8 &&
             b[8].len == D && b[9].len == P * D && b[10].len == D && b[11].len == M * f8 && b[12].len == M * D * f8;
    double *J = ok ? malloc((size_t)(P * 3 * D + 9 * D + 1) * sizeof(double)) : NULL;
    if (!ok || !J) {
        for (int k = 0; k < 13; k++) PyBuffer_Release(&b[k]);
        if (ok) return PyErr_NoMemory();
        PyErr_SetString(PyExc_ValueError, "ranges_values: a buffer's size does not match P, L and D");
        return NULL;
    }
    const double *X = b[0].buf, *O = b[1].buf, *Rh = b[2].buf, *a = b[6].buf, *r = b[7].buf;
    const double *u = b[5].buf;
    const unsigned char *rev = b[8].buf, *moves = b[9].buf, *pd = b[10].buf;
    double *vals = b[11].buf, *rows = b[12].buf;
    Py_BEGIN_ALLOW_THREADS
    double *dp = J + P * 3 * D, *dh = dp + 3 * D, *dg = dh + 3 * D; /* (3, D) each: a_m × v where m turns the hips */
    double p[3], h[3], g[3];
    rg_matvec(Rh, b[3].buf, p);
    rg_matvec(Rh, b[4].buf, h);
    cross3(p, h, g);
    for (Py_ssize_t k = 0; k < P; k++) rg_pj(X + k * 3, a, r, rev, moves + k * D, D, J + k * 3 * D);
    for (Py_ssize_t m = 0; m < D; m++) {
        double cp[3], ch[3], cg[3];
        cross3(a + m * 3, p, cp);
        cross3(a + m * 3, h, ch);
        cross3(a + m * 3, g, cg);
        for (int i = 0; i < 3; i++) {
            dp[i * D + m] = pd[m] ? cp[i] : 0.0;
            dh[i * D + m] = pd[m] ? ch[i] : 0.0;
            dg[i * D + m] = pd[m] ? cg[i] : 0.0;
        }
    }
    Py_ssize_t row = 0;
    if (arms) {
        const double *xr = X, *xl = X + 3, *Jr = J, *Jl = J + 3 * D;
        double d[3] = {xr[0] - xl[0], xr[1] - xl[1], xr[2] - xl[2]};
        if (sb) {
            double n = sqrt(rg_dot(d, d)), sv[3] = {d[0] / n, d[1] / n, d[2] / n};
            double sig = rg_dot(sv, p), den = rg_unit_den(sig);
            vals[row] = asin(fmax(-1.0, fmin(1.0, sig)));
            for (Py_ssize_t m = 0; m < D; m++) {
                double jd[3], ds[3];
                for (int i = 0; i < 3; i++) jd[i] = Jr[i * D + m] - Jl[i * D + m];
                for (int i = 0; i < 3; i++)
                    ds[i] = (((i == 0) - sv[i] * sv[0]) * jd[0] + ((i == 1) - sv[i] * sv[1]) * jd[1] +
                             ((i == 2) - sv[i] * sv[2]) * jd[2]) / n;
                double dpm[3] = {dp[m], dp[D + m], dp[2 * D + m]};
                rows[row * D + m] = (rg_dot(p, ds) + rg_dot(sv, dpm)) / den;
            }
            row++;
        }
        if (tw) {
            double Xv = rg_dot(d, h), Yv = rg_dot(d, g), q = fmax(Xv * Xv + Yv * Yv, 1e-300);
            vals[row] = atan2(Yv, Xv);
            for (Py_ssize_t m = 0; m < D; m++) {
                double jd[3], dhm[3] = {dh[m], dh[D + m], dh[2 * D + m]}, dgm[3] = {dg[m], dg[D + m], dg[2 * D + m]};
                for (int i = 0; i < 3; i++) jd[i] = Jr[i * D + m] - Jl[i * D + m];
                double dX = rg_dot(h, jd) + rg_dot(d, dhm), dY = rg_dot(g, jd) + rg_dot(d, dgm);
                rows[row * D + m] = (Xv * dY - Yv * dX) / q;
            }
            row++;
        }
    }
    if (pr) {
        double rr = rg_dot(h, u), den = rg_unit_den(rr);
        vals[row] = asin(fmax(-1.0, fmin(1.0, rr)));
        for (Py_ssize_t m = 0; m < D; m++) {
            double dhm[3] = {dh[m], dh[D + m], dh[2 * D + m]};
            rows[row * D + m] = rg_dot(u, dhm) / den;
        }
        row++;
    }
    for (Py_ssize_t l = 0; l < L; l++, row++) { /* κ = asin(â · n), the module docstring */
        const double *k = X + (arms + 3 * l) * 3, *an = k + 3, *t = k + 6, *o = O + l * 3;
        const double *Jk = J + (arms + 3 * l) * 3 * D, *Ja = Jk + 3 * D, *Jt = Ja + 3 * D;
        double va[3] = {k[0] - an[0], k[1] - an[1], k[2] - an[2]}, ta[3] = {t[0] - an[0], t[1] - an[1], t[2] - an[2]};
        double la = sqrt(rg_dot(va, va)), ah[3] = {va[0] / la, va[1] / la, va[2] / la}, mm[3];
        cross3(u, ta, mm);
        double lm = fmax(sqrt(rg_dot(mm, mm)), 1e-300);
        double oa[3] = {o[0] - an[0], o[1] - an[1], o[2] - an[2]}, sg = rg_dot(mm, oa) < 0 ? -1.0 : 1.0;
        double n[3] = {sg * mm[0] / lm, sg * mm[1] / lm, sg * mm[2] / lm};
        double x = rg_dot(ah, n), den = rg_unit_den(x);
        vals[row] = asin(fmax(-1.0, fmin(1.0, x)));
        for (Py_ssize_t m = 0; m < D; m++) {
            double jka[3], jta[3], dm[3], dah[3], dn[3];
            for (int i = 0; i < 3; i++) {
                jka[i] = Jk[i * D + m] - Ja[i * D + m];
                jta[i] = Jt[i * D + m] - Ja[i * D + m];
            }
            cross3(u, jta, dm);
            for (int i = 0; i < 3; i++) {
                dah[i] = ((((i == 0) - ah[i] * ah[0]) * jka[0] + ((i == 1) - ah[i] * ah[1]) * jka[1]) +
                          ((i == 2) - ah[i] * ah[2]) * jka[2]) / la;
                dn[i] = (((sg * ((i == 0) - n[i] * n[0])) * dm[0] + (sg * ((i == 1) - n[i] * n[1])) * dm[1]) +
                         (sg * ((i == 2) - n[i] * n[2])) * dm[2]) / lm;
            }
            rows[row * D + m] = (rg_dot(n, dah) + rg_dot(ah, dn)) / den;
        }
    }
    Py_END_ALLOW_THREADS
    free(J);
    for (int k = 0; k < 13; k++) PyBuffer_Release(&b[k]);
    return PyLong_FromLong(1);
}

/* gaze_rows: animkit.ik.tasks.Gaze.compute (animkit.ik.body.gaze_jacobian and the level row): with f = R_h f_h,
 * v = t − p_h, ρ = |v|, d = v / max(ρ, 1e-12): g = f − d and ∂g = B_hm (a_m × f) + (I − d dᵀ)/max(ρ, 1e-12) ∂p_h
 * (∂p_h: a_m × (p_h − r_m) revolute, a_m prismatic, where m moves the head); with ``ear``, the row e · u,
 * ∂ = (a_m × e) · u on the revolute DOFs moving the head, e = R_h ear; every column not in ``keep`` zeroed.
 * Out g (3 + ear,), J (3 + ear, D). Returns 1. */
static PyObject *gaze_rows(PyObject *self, PyObject *args) {
    Py_buffer b[13];
    Py_ssize_t D;
    int ear;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*y*y*y*y*w*w*ni", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &b[6],
                          &b[7], &b[8], &b[9], &b[10], &b[11], &b[12], &D, &ear))
        return NULL;
    const Py_ssize_t f8 = sizeof(double), M = 3 + (ear != 0);
    int ok = D >= 0 && b[0].len == 9 * f8 && b[1].len == 3 * f8 && b[2].len == 3 * f8 && b[3].len == 3 * f8 &&
             b[4].len == D * 3 * f8 && b[5].len == D * 3 * f8 && b[6].len == D && b[7].len == D &&
             b[8].len == 3 * f8 && b[9].len == 3 * f8 && b[10].len == D && b[11].len == M * f8 &&
             b[12].len == M * D * f8;
    if (!ok) {
        for (int k = 0; k < 13; k++) PyBuffer_Release(&b[k]);
        PyErr_SetString(PyExc_ValueError, "gaze_rows: a buffer's size does not match D");
        return NULL;
    }
    const double *R = b[0].buf, *ph = b[1].buf, *fl = b[2].buf, *t = b[3].buf, *a = b[4].buf, *r = b[5].buf;
    const double *el = b[8].buf, *u = b[9].buf;
    const unsigned char *rev = b[6].buf, *mv = b[7].buf, *keep = b[10].buf;
    double *g = b[11].buf, *J = b[12].buf;
    Py_BEGIN_ALLOW_THREADS
    double f[3], v[3] = {t[0] - ph[0], t[1] - ph[1], t[2] - ph[2]}, d[3], e[3];
    rg_matvec(R, fl, f);
    double rho = sqrt(rg_dot(v, v)), rd = rho > 1e-12 ? rho : 1e-12;
    for (int i = 0; i < 3; i++) {
        d[i] = v[i] / rd;
        g[i] = f[i] - d[i];
    }
    double P[9]; /* (I − d dᵀ) / max(ρ, 1e-12) */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) P[i * 3 + j] = ((i == j) - d[i] * d[j]) / rd;
    if (ear) {
        rg_matvec(R, el, e);
        g[3] = rg_dot(e, u);
    }
    for (Py_ssize_t m = 0; m < D; m++) {
        const double *am = a + m * 3;
        double jf[3] = {0.0, 0.0, 0.0}, jp[3] = {0.0, 0.0, 0.0}, je = 0.0;
        if (mv[m]) {
            if (rev[m]) {
                double w[3] = {ph[0] - r[m * 3], ph[1] - r[m * 3 + 1], ph[2] - r[m * 3 + 2]}, ce[3];
                cross3(am, f, jf);
                cross3(am, w, jp);
                if (ear) {
                    cross3(am, e, ce);
                    je = rg_dot(ce, u);
                }
            } else {
                jp[0] = am[0], jp[1] = am[1], jp[2] = am[2];
            }
        }
        for (int i = 0; i < 3; i++) {
            double jd = -((P[i * 3] * jp[0] + P[i * 3 + 1] * jp[1]) + P[i * 3 + 2] * jp[2]);
            J[i * D + m] = keep[m] ? jf[i] - jd : 0.0;
        }
        if (ear) J[3 * D + m] = keep[m] ? je : 0.0;
    }
    Py_END_ALLOW_THREADS
    for (int k = 0; k < 13; k++) PyBuffer_Release(&b[k]);
    return PyLong_FromLong(1);
}

static PyMethodDef methods[] = {
    {"raster_loop", raster_loop, METH_VARARGS,
     "raster_loop(x0, y0, x1, y1, A, B, C, WA, WB, WC, W, zbuf, fbuf, colors, flat, paint, zx, zy, zw): visibility"},
    {"gif_index", gif_index, METH_VARARGS,
     "gif_index(frame, lut, known, out, pending[, prev, prev_out]) -> (colours not in the LUT yet (marked known == 2),"
     " their pixels left in pending); prev's indices where the colour is prev's"},
    {"scan_frames", scan_frames, METH_VARARGS,
     "scan_frames(buf, out, count, width, scale) -> 0 (out filled) or -1 (leave it to the exact path)"},
    {"fk_frames", fk_frames, METH_VARARGS,
     "fk_frames(tan_half, theta, parent, L, rotated, first, kind, letter, axis, out, F, N, D, W): FK frame by frame"},
#ifdef __GNUC__
    {"skin_frames", skin_frames, METH_VARARGS,
     "skin_frames(S, P, out, F, V, J, K, points, stream, fused): linear-blend skinning"},
#endif
    {"joint_rows", joint_rows, METH_VARARGS,
     "joint_rows(W, index, ibm, out, F, N, J): the first three rows of W[:, index] @ ibm"},
    {"mm3", mm3, METH_VARARGS, "mm3(A, B, out, n, da, ma, db, mb): stacks of 3x3 products, broadcast"},
    {"polar_turns", polar_turns, METH_VARARGS, "polar_turns(M, R, E, det, err, n, w): rotation_part's fast path"},
    {"retarget_turns", retarget_turns, METH_VARARGS,
     "retarget_turns(W, src, child, K, d, out, F, N, B) -> 1, or 0 (left to NumPy): the retarget's bone turns"},
    {"euler_read", euler_read, METH_VARARGS, "euler_read(Bt, Rt, out, n, i, j, k): Tait-Bryan angles of Bt^T Rt"},
    {"turned_by", turned_by, METH_VARARGS, "turned_by(Bt, vals, letters, out, n, k): Bt times coordinate turns"},
    {"write_joint", write_joint, METH_VARARGS,
     "write_joint(Ra, L, Rw, active, P, lim, F, ma, D, c0, letters, i, j, k): one joint's leg IK write-back"},
    {"drive_joint", drive_joint, METH_VARARGS,
     "drive_joint(Rp, L, Rt, out, R, F, mp, D, c0, letters, i, j, k): one joint's Euler read and world turn"},
    {"leg_bend", leg_bend, METH_VARARGS,
     "leg_bend(Hp, K, A, Mh, Mk, n_w, u, alpha, l1, dd, side, R_thigh, R_shin, K_new, n): the leg IK's bend"},
    {"lowest_along", lowest_along, METH_VARARGS, "lowest_along(points, d, out, F, V): min_v <p_fv, d_f>"},
    {"tri_setup", tri_setup, METH_VARARGS,
     "tri_setup(pc, faces, closed, near, far, fp, cx, cy, W, H, ints, abc, wabc) -> T: the rasteriser's set-up"},
    {"flat_shade", flat_shade, METH_VARARGS,
     "flat_shade(V, faces, sel, colors, eye, light, ambient, out) -> 0, or -1: flat faces' shaded colours"},
    {"gif_delta", gif_delta, METH_VARARGS, "gif_delta(ind, prev, H, W, clear, sub) -> (y0, x0, h, w): changed box"},
    {"blend_px", blend_px, METH_VARARGS, "blend_px(flat, pix, alpha, color, tmp) -> 0, or -1: left to NumPy"},
    {"lowest_about", lowest_about, METH_VARARGS,
     "lowest_about(points, origin, d, out, F, V): min_v <p_vf - o_f, d_f>, points (V, F, 3)"},
    {"drift_means", drift_means, METH_VARARGS,
     "drift_means(Y, mask, runs, out, nX, nM, L, U, window): the foot lock's mean planted ground speed per run"},
    {"smooth_max", smooth_max, METH_VARARGS, "smooth_max(x, out, F, r) -> 1, or 0 (a NaN: left to NumPy): a max filter, then a mean filter"},
    {"unwrap_limits", unwrap_limits, METH_VARARGS,
     "unwrap_limits(values, lower, upper, out, F, n): angles unwrapped over frames, into their limits"},
    {"prio_step", prio_step, METH_VARARGS,
     "prio_step(J, V, counts, lams, grad, sc, Jb, room, out, n, L, mb, bound) -> 1, or 0 (left to NumPy): the natural "
     "solver's prioritised step with its inequality rows"},
    {"spread_turns", spread_turns, METH_VARARGS,
     "spread_turns(R, T, axes, kind, theta, has, a, above, mine, e, J, N, D, K) -> 1, or 0 (left to NumPy)"},
    {"ranges_values", ranges_values, METH_VARARGS,
     "ranges_values(X, O, Rh, ph, hh, u, a, r, rev, moves, pd, vals, rows, P, L, D, sb, tw, pr) -> 1"},
    {"gaze_rows", gaze_rows, METH_VARARGS, "gaze_rows(R, p, f, t, a, r, rev, moves, ear, up, keep, g, J, D, ear) -> 1"},
    {"chain_fk", chain_fk, METH_VARARGS,
     "chain_fk(q, Hs, parent, revolute, eff_link, eff_C, T, r, a, Eff, n, K, E): a chain's FK for one configuration"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
