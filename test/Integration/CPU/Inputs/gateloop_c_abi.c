/* A C program that uses a layer the way a user would: it includes the
 * header recurc wrote for GateLoopMaxHeaded (examples/gateloop.recur with
 * D = 8), links the object with librecur_rt, and checks the kernel against
 * its own float64 loop of the paper's equations (24-25), (7) and (8):
 *   a = sigmoid(x Wg) exp(i x Wth),  h = a h + (x Wk)(x Wv),  y = (x Wq) Re h
 * then decoding step by step, state save/load and reset, and the errors
 * the runtime returns for bad calls. Prints one line per check. */

#include "GateLoopMaxHeaded.h"

#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 3, T = 7, D = 8 };

static unsigned long long rng = 12345;
static float uniform(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static float x[B][T][D], y[B][T][D], ystep[B][T][D], w[5][D][D];
static double yref[B][T][D];

static int failures = 0;
static void check(int ok, const char *what) {
  printf("%s: %s\n", ok ? "ok" : "FAIL", what);
  if (!ok)
    failures++;
}

/* The float64 loop, from zero state. */
static void reference(void) {
  for (int b = 0; b < B; ++b)
    for (int c = 0; c < D; ++c) {
      double complex h = 0;
      for (int t = 0; t < T; ++t) {
        double p[5] = {0, 0, 0, 0, 0};
        for (int m = 0; m < 5; ++m)
          for (int e = 0; e < D; ++e)
            p[m] += (double)x[b][t][e] * w[m][e][c];
        double mag = 1.0 / (1.0 + exp(-p[3]));
        double complex a = mag * (cos(p[4]) + I * sin(p[4]));
        h = a * h + p[1] * p[2];
        yref[b][t][c] = p[0] * creal(h);
      }
    }
}

static double maxRelErr(float got[B][T][D], double want[B][T][D]) {
  double err = 0, scale = 0;
  for (int i = 0; i < B * T * D; ++i) {
    double g = (&got[0][0][0])[i], r = (&want[0][0][0])[i];
    err = fmax(err, fabs(g - r));
    scale = fmax(scale, fabs(r));
  }
  return err / scale;
}

static double maxAbsDiff(float a[B][T][D], float b[B][T][D]) {
  double d = 0;
  for (int i = 0; i < B * T * D; ++i)
    d = fmax(d, fabs((&a[0][0][0])[i] - (&b[0][0][0])[i]));
  return d;
}

int main(void) {
  for (int i = 0; i < B * T * D; ++i)
    (&x[0][0][0])[i] = uniform();
  for (int i = 0; i < 5 * D * D; ++i)
    (&w[0][0][0])[i] = 0.5f * uniform();
  reference();

  int64_t xs[3] = {B, T, D}, ws[2] = {D, D};
  recur_GateLoopMaxHeaded_inputs in = {
      recur_tensor_contiguous(x, RECUR_F32, 3, xs)};
  recur_GateLoopMaxHeaded_params params;
  recur_tensor *p = (recur_tensor *)&params;
  for (int m = 0; m < 5; ++m)
    p[m] = recur_tensor_contiguous(w[m], RECUR_F32, 2, ws);
  recur_GateLoopMaxHeaded_outputs out = {
      recur_tensor_contiguous(y, RECUR_F32, 3, xs)};

  recur_memory_stats before;
  recur_memory_stats_get(&before);

  /* One call on the whole sequence. */
  recur_state *state = NULL;
  check(recur_GateLoopMaxHeaded_state_create(B, &params, &state) == RECUR_OK,
        "state_create");
  int64_t dims[2] = {B, T};
  size_t workspace = 0;
  check(recur_GateLoopMaxHeaded_workspace_size(dims, &workspace) == RECUR_OK,
        "workspace_size");
  recur_memory_stats live, peak;
  recur_memory_stats_get(&live);
  recur_memory_stats_reset_peak();
  check(recur_GateLoopMaxHeaded_forward(&in, &params, state, &out) ==
            RECUR_OK,
        "forward");
  recur_memory_stats_get(&peak);
  /* What the call allocated at its peak stays within the bound. */
  check(workspace > 0 && peak.peak_bytes - live.live_bytes <= workspace,
        "forward allocates within workspace_size");
  double err = maxRelErr(y, yref);
  printf("forward max_rel_err: %.2e\n", err);
  /* f32 inputs and weights, f32 sums of 8 products and 7 recurrence steps:
   * a few float ulps (6e-8) of the largest output. */
  check(err < 1e-5, "forward matches the float64 loop");

  /* Decoding: one position per step, through strided views into x and y. */
  recur_state *dec = NULL;
  recur_GateLoopMaxHeaded_state_create(B, &params, &dec);
  int ok = 1;
  for (int t = 0; t < T; ++t) {
    int64_t one[3] = {B, 1, D};
    recur_GateLoopMaxHeaded_inputs sin = {
        recur_tensor_contiguous(&x[0][t][0], RECUR_F32, 3, one)};
    recur_GateLoopMaxHeaded_outputs sout = {
        recur_tensor_contiguous(&ystep[0][t][0], RECUR_F32, 3, one)};
    sin.x.strides[0] = sout.y.strides[0] = T * D;
    sin.x.strides[1] = sout.y.strides[1] = D;
    ok &= recur_GateLoopMaxHeaded_step(&sin, &params, dec, &sout) == RECUR_OK;
  }
  check(ok, "step x7");
  printf("step max_abs_diff: %.2e\n", maxAbsDiff(ystep, y));
  check(maxAbsDiff(ystep, y) <= 1e-6 * 4, "steps equal the one-shot run");

  /* The state after T steps equals the one after the whole sequence. */
  size_t bytes = 0;
  recur_state_save_size(state, &bytes);
  unsigned char *saved = malloc(bytes), *saved2 = malloc(bytes);
  check(recur_state_save(state, saved, bytes) == RECUR_OK &&
            recur_state_save(dec, saved2, bytes) == RECUR_OK,
        "state_save");
  recur_tensor hv, hd;
  recur_state_view(state, 0, &hv);
  recur_state_view(dec, 0, &hd);
  double sd = 0;
  for (int i = 0; i < 2 * B * D; ++i)
    sd = fmax(sd, fabs(((float *)hv.data)[i] - ((float *)hd.data)[i]));
  check(sd <= 4e-6, "stepped state equals the one-shot state");

  /* Save/load carries a sequence on: two more calls from the loaded copy
   * and from the original agree exactly. */
  recur_state *copy = NULL;
  recur_GateLoopMaxHeaded_state_create(B, &params, &copy);
  check(recur_state_load(copy, saved, bytes) == RECUR_OK, "state_load");
  recur_GateLoopMaxHeaded_forward(&in, &params, state, &out);
  memcpy(ystep, y, sizeof y);
  recur_GateLoopMaxHeaded_forward(&in, &params, copy, &out);
  check(maxAbsDiff(ystep, y) == 0, "loaded state continues identically");
  saved[bytes / 2] ^= 1;
  check(recur_state_load(copy, saved, bytes) == RECUR_ERROR_FORMAT,
        "corrupt saved state refused");

  /* Reset row 1 only: that row then runs as from zero. */
  check(recur_GateLoopMaxHeaded_state_reset(copy, 1, &params) == RECUR_OK,
        "state_reset row 1");
  recur_GateLoopMaxHeaded_forward(&in, &params, copy, &out);
  double rowErr = 0, otherDiff = 0;
  for (int t = 0; t < T; ++t)
    for (int c = 0; c < D; ++c) {
      rowErr = fmax(rowErr, fabs(y[1][t][c] - yref[1][t][c]));
      otherDiff = fmax(otherDiff, fabs(y[0][t][c] - yref[0][t][c]));
    }
  check(rowErr < 1e-5 && otherDiff > 1e-3,
        "reset row restarts, other rows carry on");

  /* Backward from the init rules (no state): dL/dx of L = sum(wy * y),
   * against central differences of the float64 loop at a few elements. */
  static float wy[B][T][D], gx[B][T][D];
  for (int i = 0; i < B * T * D; ++i)
    (&wy[0][0][0])[i] = uniform();
  recur_GateLoopMaxHeaded_outputs dOut = {
      recur_tensor_contiguous(wy, RECUR_F32, 3, xs)};
  recur_GateLoopMaxHeaded_inputs gIn = {
      recur_tensor_contiguous(gx, RECUR_F32, 3, xs)};
  check(recur_GateLoopMaxHeaded_backward(&in, &params, NULL, &dOut, NULL,
                                         &gIn, NULL, NULL) == RECUR_OK,
        "backward");
  double gradErr = 0, gradScale = 0;
  for (int i = 0; i < B * T * D; ++i)
    gradScale = fmax(gradScale, fabs((&gx[0][0][0])[i]));
  for (int k = 0; k < 6; ++k) {
    int i = (int)((uniform() + 1.0f) * 0.5f * (B * T * D - 1));
    float *xi = &(&x[0][0][0])[i], saved = *xi;
    double loss[2], at[2];
    for (int side = 0; side < 2; ++side) {
      *xi = saved + (side ? -1e-3f : 1e-3f);
      at[side] = *xi;
      reference();
      loss[side] = 0;
      for (int j = 0; j < B * T * D; ++j)
        loss[side] += (double)(&wy[0][0][0])[j] * (&yref[0][0][0])[j];
    }
    *xi = saved;
    double fd = (loss[0] - loss[1]) / (at[0] - at[1]);
    gradErr = fmax(gradErr, fabs(fd - (&gx[0][0][0])[i]));
  }
  reference();
  /* f32 kernels against float64 differences with steps of 1e-3: about
   * 1e-6 of the largest gradient; 1e-4 leaves room. */
  printf("backward max_rel_err: %.2e\n", gradErr / gradScale);
  check(gradScale > 0 && gradErr / gradScale < 1e-4,
        "backward matches differences of the float64 loop");

  /* Outputs are written into the caller's tensors (output destinations),
   * unless they share memory with what the kernel reads: an output that is
   * its own input (in place), and a gradient that is its own cotangent,
   * give the same values as separate tensors. */
  static float z[B][T][D], zref[B][T][D], g2[B][T][D];
  recur_GateLoopMaxHeaded_forward(&in, &params, NULL, &out);
  memcpy(zref, y, sizeof y);
  memcpy(z, x, sizeof x);
  recur_GateLoopMaxHeaded_inputs zin = {
      recur_tensor_contiguous(z, RECUR_F32, 3, xs)};
  recur_GateLoopMaxHeaded_outputs zout = {
      recur_tensor_contiguous(z, RECUR_F32, 3, xs)};
  check(recur_GateLoopMaxHeaded_forward(&zin, &params, NULL, &zout) ==
                RECUR_OK &&
            memcmp(z, zref, sizeof z) == 0,
        "in-place forward (output = input) equals out-of-place");
  memcpy(g2, wy, sizeof wy);
  recur_GateLoopMaxHeaded_outputs gOut = {
      recur_tensor_contiguous(g2, RECUR_F32, 3, xs)};
  recur_GateLoopMaxHeaded_inputs gIn2 = {
      recur_tensor_contiguous(g2, RECUR_F32, 3, xs)};
  check(recur_GateLoopMaxHeaded_backward(&in, &params, NULL, &gOut, NULL, &gIn2,
                                         NULL, NULL) == RECUR_OK &&
            memcmp(g2, gx, sizeof gx) == 0,
        "in-place backward (gradient = cotangent) equals out-of-place");

  /* Errors: each returns a status and a message, and the host goes on. */
  int64_t bad[3] = {B, T, D + 1};
  recur_GateLoopMaxHeaded_inputs badShape = {
      recur_tensor_contiguous(x, RECUR_F32, 3, bad)};
  recur_status s = recur_GateLoopMaxHeaded_forward(&badShape, &params, NULL,
                                                   &out);
  printf("shape: %s: %s\n", recur_status_name(s), recur_last_error());
  recur_GateLoopMaxHeaded_inputs badType = in;
  badType.x.dtype = RECUR_F64;
  s = recur_GateLoopMaxHeaded_forward(&badType, &params, NULL, &out);
  printf("dtype: %s: %s\n", recur_status_name(s), recur_last_error());
  s = recur_GateLoopMaxHeaded_forward(NULL, &params, NULL, &out);
  printf("null: %s: %s\n", recur_status_name(s), recur_last_error());
  recur_state *small = NULL;
  recur_GateLoopMaxHeaded_state_create(B - 1, &params, &small);
  s = recur_GateLoopMaxHeaded_forward(&in, &params, small, &out);
  printf("batch: %s: %s\n", recur_status_name(s), recur_last_error());
  recur_layer_desc other = *recur_GateLoopMaxHeaded_layer();
  other.id ^= 1;
  other.name = "Other";
  recur_state *foreign = NULL;
  recur_state_create(&other, B, NULL, &foreign);
  s = recur_GateLoopMaxHeaded_forward(&in, &params, foreign, &out);
  printf("foreign: %s: %s\n", recur_status_name(s), recur_last_error());
  s = recur_GateLoopMaxHeaded_step(&in, &params, state, &out);
  printf("step length: %s: %s\n", recur_status_name(s), recur_last_error());
  recur_layer_desc forwardOnly = *recur_GateLoopMaxHeaded_layer();
  forwardOnly.backward = NULL;
  s = recur_backward(&forwardOnly, (const recur_tensor *)&in,
                     (const recur_tensor *)&params, NULL,
                     (const recur_tensor *)&dOut, NULL,
                     (const recur_tensor *)&gIn, NULL, NULL);
  printf("no backward: %s: %s\n", recur_status_name(s), recur_last_error());
  s = recur_GateLoopMaxHeaded_backward(&in, &params, NULL, NULL, NULL, &gIn,
                                       NULL, NULL);
  printf("null cotangent: %s: %s\n", recur_status_name(s),
         recur_last_error());

  recur_state_destroy(state);
  recur_state_destroy(dec);
  recur_state_destroy(copy);
  recur_state_destroy(small);
  recur_state_destroy(foreign);
  free(saved);
  free(saved2);
  recur_memory_stats after;
  recur_memory_stats_get(&after);
  check(after.live_bytes == before.live_bytes, "no buffer leaked");
  printf("%d failures\n", failures);
  return failures != 0;
}
