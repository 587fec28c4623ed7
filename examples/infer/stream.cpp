//===- stream.cpp - streaming inference with the state carried ------------===//
//
// Part of the Recur project.
//
// recur-infer --layer NAME [--steps N] [--batch B] [--seed S]
//
// Serves one compiled layer the way a decoder does (docs/inference.md):
//
// - A layer with a time dimension (GateLoop, LRU) generates: each step's
//   input is tanh of the previous step's output (the first is random), one
//   recur_step call a step, the state carried between calls. The whole
//   generated sequence is then run at once (recur_forward, the parallel
//   form, as a prefill would): its outputs and final state must equal the
//   decoded ones, step for step.
// - A layer without one (Transformer-XL's segments, MemBART's turns) runs
//   N segments in turn with its memory carried.
//
// Midway, the decoding state is saved (recur_state_save) and loaded into a
// fresh state (recur_state_load), and both go on side by side: their
// outputs must be the same bits. Prints the per-call latency (median and
// 90th percentile) and, for the parallel form, the time per position.
// Exit status 1 when a check fails.
//
//===----------------------------------------------------------------------===//

#include "lm.h"

#include "BlockRecurrentSkipFixed.h"
#include "GateLoop.h"
#include "LRU.h"
#include "MemBART.h"
#include "MemBARTDialogue.h"
#include "TransformerXL.h"
#include "TransformerXLSegments.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace recur::train;

namespace {

/// A tensor of the layer, owned here: f32 values in `data`, or a bool mask
/// (all false: nothing padded) in `mask`.
struct Buffer {
  const recur_arg_desc *desc = nullptr;
  std::vector<int64_t> shape;
  std::vector<float> data;
  std::vector<unsigned char> mask;

  recur_tensor view() {
    void *p = desc->dtype == RECUR_BOOL ? static_cast<void *>(mask.data())
                                        : static_cast<void *>(data.data());
    return recur_tensor_contiguous(
        p, desc->dtype, static_cast<int32_t>(shape.size()), shape.data());
  }
  /// The positions [t, t + n) of dimension `dim`, as a view.
  recur_tensor slice(int dim, int64_t t, int64_t n) {
    recur_tensor v = view();
    if (dim >= 0) {
      v.data = static_cast<char *>(v.data) +
               t * v.strides[dim] * recur_dtype_size(desc->dtype);
      v.shape[dim] = n;
    }
    return v;
  }
};

/// The buffer of `desc` with runtime sizes `dims` (f32, or a bool mask).
Buffer makeBuffer(const recur_arg_desc &desc,
                  const std::vector<int64_t> &dims) {
  if (desc.dtype != RECUR_F32 && desc.dtype != RECUR_BOOL)
    fatal(std::string("'") + desc.name + "' is " +
          recur_dtype_name(desc.dtype) +
          "; recur-infer serves f32 tensors and bool masks");
  Buffer b;
  b.desc = &desc;
  int64_t n = 1;
  for (int32_t d = 0; d < desc.rank; ++d) {
    b.shape.push_back(desc.shape[d] >= 0 ? desc.shape[d]
                                         : dims[-1 - desc.shape[d]]);
    n *= b.shape.back();
  }
  if (desc.dtype == RECUR_BOOL)
    b.mask.assign(n, 0);
  else
    b.data.assign(n, 0.0f);
  return b;
}

/// Whether `desc` is a per-row flag (only the batch dim and units): 1 where
/// a sequence or dialogue starts.
bool isRowFlag(const recur_layer_desc *layer, const recur_arg_desc &desc) {
  bool batch = false;
  for (int32_t d = 0; d < desc.rank; ++d) {
    if (desc.shape[d] < 0 && -1 - desc.shape[d] == layer->batch_dim)
      batch = true;
    else if (desc.shape[d] != 1)
      return false;
  }
  return batch;
}

/// Fills the inputs of step `s`: normal values; a row flag 1 at the first
/// step only; masks stay all false.
void fillInputs(const recur_layer_desc *layer, std::vector<Buffer> &inputs,
                int64_t s, Rng &rng) {
  for (Buffer &in : inputs)
    for (float &x : in.data)
      x = isRowFlag(layer, *in.desc) ? (s == 0 ? 1.0f : 0.0f)
                                     : static_cast<float>(rng.normal());
}

/// The index in `desc`'s shape of runtime dimension `dim`, or -1.
int dimIndex(const recur_arg_desc &desc, int32_t dim) {
  for (int32_t d = 0; d < desc.rank; ++d)
    if (desc.shape[d] == -1 - dim)
      return d;
  return -1;
}

/// Views of `bs`, narrowed to positions [t, t + n) of runtime dimension
/// `timeDim` (whole when it is -1).
std::vector<recur_tensor> views(std::vector<Buffer> &bs, int32_t timeDim = -1,
                                int64_t t = 0, int64_t n = 0) {
  std::vector<recur_tensor> v;
  for (Buffer &b : bs)
    v.push_back(timeDim >= 0 ? b.slice(dimIndex(*b.desc, timeDim), t, n)
                             : b.view());
  return v;
}

/// Calls `fn` on the elements at the same index of views `a` and `b` (of
/// the same shape, any strides).
template <typename Fn>
void forEachPair(const recur_tensor &a, const recur_tensor &b, Fn fn) {
  int64_t idx[RECUR_MAX_RANK] = {};
  for (int64_t e = 0, n = recur_tensor_numel(&a); e < n; ++e) {
    int64_t offA = 0, offB = 0;
    for (int32_t d = 0; d < a.rank; ++d) {
      offA += idx[d] * a.strides[d];
      offB += idx[d] * b.strides[d];
    }
    fn(static_cast<float *>(a.data) + offA,
       static_cast<float *>(b.data) + offB);
    for (int32_t d = a.rank - 1; d >= 0 && ++idx[d] == a.shape[d]; --d)
      idx[d] = 0;
  }
}

double maxRelErr(const std::vector<float> &got,
                 const std::vector<float> &want) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    double d = std::fabs(double(got[i]) - double(want[i]));
    err = std::isnan(d) ? INFINITY : std::max(err, d);
    scale = std::max(scale, std::fabs(double(want[i])));
  }
  return scale > 0.0 ? err / scale : err;
}

/// The state's tensors, copied.
std::vector<std::vector<float>> stateData(const recur_layer_desc *layer,
                                          recur_state *state) {
  std::vector<std::vector<float>> out;
  for (int32_t i = 0; i < layer->num_states; ++i) {
    recur_tensor v;
    check(recur_state_view(state, i, &v), "recur_state_view");
    // Compared bit for bit or as floats: a complex state is its pairs.
    const float *p = static_cast<const float *>(v.data);
    out.emplace_back(p, p + recur_tensor_numel(&v) * recur_dtype_size(v.dtype) /
                                sizeof(float));
  }
  return out;
}

/// The largest relative difference between two runs of a layer: their
/// outputs and the final states they left.
double runError(const std::vector<Buffer> &gotOuts,
                const std::vector<Buffer> &wantOuts,
                const std::vector<std::vector<float>> &gotState,
                const std::vector<std::vector<float>> &wantState) {
  double err = 0.0;
  for (size_t o = 0; o < wantOuts.size(); ++o)
    err = std::max(err, maxRelErr(gotOuts[o].data, wantOuts[o].data));
  for (size_t i = 0; i < wantState.size(); ++i)
    err = std::max(err, maxRelErr(gotState[i], wantState[i]));
  return err;
}

struct Latency {
  std::vector<double> us;
  void print(const char *what) {
    std::sort(us.begin(), us.end());
    std::printf("%s latency: median %.1f us, p90 %.1f us over %zu calls\n",
                what, us[us.size() / 2], us[us.size() * 9 / 10], us.size());
  }
};

/// `from` saved with recur_state_save and loaded into `to` (the same layer
/// and batch); returns the saved size in bytes.
size_t copyState(recur_state *to, const recur_state *from) {
  size_t bytes = 0;
  check(recur_state_save_size(from, &bytes), "recur_state_save_size");
  std::vector<unsigned char> buf(bytes);
  check(recur_state_save(from, buf.data(), bytes), "recur_state_save");
  check(recur_state_load(to, buf.data(), bytes), "recur_state_load");
  return bytes;
}

/// A fresh state holding what `state` holds (saved and loaded), announced
/// after `done` units (steps or blocks) of decoding.
recur_state *restoredCopy(const recur_layer_desc *layer, int64_t batch,
                          std::vector<recur_tensor> &p,
                          const recur_state *state, int64_t done,
                          const char *units) {
  recur_state *restored = nullptr;
  check(recur_state_create(layer, batch, p.data(), &restored),
        "recur_state_create");
  size_t bytes = copyState(restored, state);
  std::printf("saved the state after %lld %s (%zu bytes) and loaded it into "
              "a fresh one\n",
              static_cast<long long>(done), units, bytes);
  return restored;
}

/// Token-by-token decoding of the Block-Recurrent layer, whose kernel runs
/// whole blocks of W tokens (its step). Token p of a block is answered by
/// the block's kernel from the state the block started with (the
/// recurrent state c_t and the cache of the previous block), the block's
/// later tokens still zeros: they cannot reach position p (the band is
/// causal, and the state the block reads is c_t, not c_{t+1}). When the
/// block's W tokens are in, the kernel runs once more on the committed
/// state, which advances to c_{t+1} and the new cache. So a token costs
/// one block's kernel call (W positions), and the state changes every W
/// tokens, as the paper decodes. Returns whether the checks passed.
bool decodeBlockRecurrent(const recur_layer_desc *layer,
                          std::vector<Buffer> &inputs,
                          std::vector<recur_tensor> &p,
                          std::vector<Buffer> &outputs, int64_t batch,
                          int64_t blocks, Rng &rng) {
  const int64_t W = layer->step_length;
  const int32_t T = layer->time_dim;
  Buffer &x = inputs[0], &y = outputs[0];
  const int64_t D = x.shape[2];
  int tx = dimIndex(*x.desc, T);
  for (float &v : x.data)
    v = 0.0f;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t d = 0; d < D; ++d)
      x.data[b * x.shape[1] * D + d] = static_cast<float>(rng.normal());
  std::printf("recur-infer: layer %s, batch %lld, %lld tokens (%lld blocks "
              "of %lld), each input tanh of the last output\n",
              layer->name, static_cast<long long>(batch),
              static_cast<long long>(blocks * W),
              static_cast<long long>(blocks), static_cast<long long>(W));
  recur_state *committed = nullptr, *scratch = nullptr, *restored = nullptr;
  check(recur_state_create(layer, batch, p.data(), &committed),
        "recur_state_create");
  check(recur_state_create(layer, batch, p.data(), &scratch),
        "recur_state_create");
  // One block's tokens as they arrive (later ones zero), and its outputs.
  std::vector<Buffer> block = inputs, blockOut = outputs;
  block[0].shape[tx] = W;
  block[0].data.assign(batch * W * D, 0.0f);
  blockOut[0].shape[tx] = W;
  blockOut[0].data.assign(batch * W * D, 0.0f);
  std::vector<Buffer> restoredOut = blockOut;
  Latency token, commit;
  bool identical = true;
  int64_t saveAt = blocks / 2;
  for (int64_t t = 0; t < blocks; ++t) {
    block[1].data.assign(batch, t == 0 ? 1.0f : 0.0f); // start flag
    if (t == saveAt)
      restored = restoredCopy(layer, batch, p, committed, t, "blocks");
    for (int64_t q = 0; q < W; ++q) {
      int64_t pos = t * W + q;
      for (int64_t b = 0; b < batch; ++b)
        std::memcpy(&block[0].data[(b * W + q) * D],
                    &x.data[(b * x.shape[1] + pos) * D], D * sizeof(float));
      std::vector<recur_tensor> in = views(block), out = views(blockOut);
      double t0 = now();
      if (q + 1 < W) {
        copyState(scratch, committed);
        check(recur_forward(layer, in.data(), p.data(), scratch, out.data()),
              "recur_forward");
        token.us.push_back((now() - t0) * 1e6);
      } else {
        check(recur_forward(layer, in.data(), p.data(), committed, out.data()),
              "recur_forward");
        commit.us.push_back((now() - t0) * 1e6);
      }
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t d = 0; d < D; ++d) {
          float v = blockOut[0].data[(b * W + q) * D + d];
          y.data[(b * y.shape[1] + pos) * D + d] = v;
          if (pos + 1 < blocks * W)
            x.data[(b * x.shape[1] + pos + 1) * D + d] = std::tanh(v);
        }
    }
    if (restored) {
      // The restored state decodes the same block whole, beside.
      std::vector<recur_tensor> in = views(block), out = views(restoredOut);
      check(recur_forward(layer, in.data(), p.data(), restored, out.data()),
            "recur_forward (restored)");
      identical = identical && restoredOut[0].data == blockOut[0].data;
    }
    for (float &v : block[0].data)
      v = 0.0f;
  }
  std::vector<std::vector<float>> decoded = stateData(layer, committed);
  identical = identical && decoded == stateData(layer, restored);
  token.print("decode (one token, mid-block)");
  commit.print("decode (a block's last token, the state advancing)");
  std::printf("save/restore mid-stream: %s\n",
              identical ? "identical outputs and final state"
                        : "DIFFERENT from the uninterrupted stream");

  // The block-parallel form over the generated sequence.
  inputs[1].data.assign(batch, 1.0f);
  recur_state *fresh = nullptr;
  check(recur_state_create(layer, batch, p.data(), &fresh),
        "recur_state_create");
  std::vector<Buffer> prefill = outputs;
  std::vector<recur_tensor> in = views(inputs), out = views(prefill);
  double t0 = now();
  check(recur_forward(layer, in.data(), p.data(), fresh, out.data()),
        "recur_forward");
  double seconds = now() - t0;
  double err = runError(outputs, prefill, decoded, stateData(layer, fresh));
  std::printf("block-parallel form (recur_forward over all %lld tokens): "
              "%.2f us per token\n",
              static_cast<long long>(blocks * W), seconds * 1e6 / (blocks * W));
  std::printf("decode == block-parallel form: max_rel_err %.3g (outputs and "
              "final state)\n",
              err);
  for (recur_state *s : {committed, scratch, restored, fresh})
    recur_state_destroy(s);
  if (!(err <= 1e-4))
    std::printf("error: decode and block-parallel form differ beyond 1e-4\n");
  return identical && err <= 1e-4;
}

/// The layer that runs several of `layer`'s segments or turns in one call
/// (the prefill form: the same recurrence with the loop inside the kernel,
/// the same params and state), or null.
const recur_layer_desc *prefillLayer(const recur_layer_desc *layer) {
  if (layer == recur_TransformerXL_layer())
    return recur_TransformerXLSegments_layer();
  if (layer == recur_MemBART_layer())
    return recur_MemBARTDialogue_layer();
  return nullptr;
}

/// Runs the segments `history` (each call's inputs) and their outputs
/// `decoded` once more, all in one call of `pre` from the init state, and
/// returns the largest relative difference from the decoded outputs and
/// `decodedState`. An input with a segment's positions along axis 1 is
/// concatenated; a per-segment flag ([B, 1, 1]) goes to each segment's
/// first position (zeros elsewhere); any other input is the first
/// segment's (the same in every call).
double prefillError(const recur_layer_desc *layer, const recur_layer_desc *pre,
                    std::vector<std::vector<Buffer>> &history,
                    std::vector<std::vector<Buffer>> &decoded,
                    std::vector<recur_tensor> &p, int64_t batch,
                    const std::vector<std::vector<float>> &decodedState) {
  for (int32_t i = 0; i < layer->num_args; ++i)
    if (layer->args[i].role == RECUR_ROLE_PARAM &&
        std::strcmp(layer->args[i].name, pre->args[i].name) != 0)
      fatal(std::string(pre->name) + " does not take " + layer->name +
            "'s params in order");
  const int64_t segLen = history[0][0].shape[1],
                segments = static_cast<int64_t>(history.size());
  std::vector<int64_t> dims(pre->num_runtime_dims, 1);
  dims[pre->batch_dim] = batch;
  dims[pre->time_dim] = segments * segLen;
  std::vector<Buffer> in, out;
  for (int32_t i = 0; i < pre->num_args; ++i)
    if (pre->args[i].role == RECUR_ROLE_INPUT)
      in.push_back(makeBuffer(pre->args[i], dims));
  for (int32_t i = 0; i < pre->num_results; ++i)
    if (pre->results[i].role == RECUR_ROLE_OUTPUT)
      out.push_back(makeBuffer(pre->results[i], dims));
  // Fills `whole` [B, segments * segLen, ...] from the per-segment pieces.
  auto gather = [&](Buffer &whole, auto pieceOf) {
    if (whole.desc->rank < 2 || whole.desc->shape[1] != -1 - pre->time_dim) {
      whole.data = pieceOf(0).data;
      whole.mask = pieceOf(0).mask;
      return;
    }
    int64_t inner = 1;
    for (size_t d = 2; d < whole.shape.size(); ++d)
      inner *= whole.shape[d];
    for (int64_t s = 0; s < segments; ++s) {
      Buffer &piece = pieceOf(s);
      int64_t len = piece.shape[1]; // segLen, or 1 for a flag
      for (int64_t b = 0; b < batch; ++b)
        std::memcpy(&whole.data[((b * segments + s) * segLen) * inner],
                    &piece.data[b * len * inner], len * inner * sizeof(float));
    }
  };
  for (size_t i = 0; i < in.size(); ++i)
    gather(in[i], [&](int64_t s) -> Buffer & { return history[s][i]; });
  std::vector<Buffer> want = out;
  for (size_t o = 0; o < out.size(); ++o)
    gather(want[o], [&](int64_t s) -> Buffer & { return decoded[s][o]; });
  recur_state *fresh = nullptr;
  check(recur_state_create(pre, batch, p.data(), &fresh), "recur_state_create");
  std::vector<recur_tensor> iv = views(in), ov = views(out);
  check(recur_forward(pre, iv.data(), p.data(), fresh, ov.data()),
        "recur_forward");
  double err = runError(out, want, stateData(pre, fresh), decodedState);
  recur_state_destroy(fresh);
  return err;
}

const recur_layer_desc *findLayer(const std::string &name) {
  for (const recur_layer_desc *l :
       {recur_GateLoop_layer(), recur_LRU_layer(), recur_TransformerXL_layer(),
        recur_MemBART_layer()})
    if (name == l->name)
      return l;
  if (name == "BlockRecurrent")
    return recur_BlockRecurrentSkipFixed_layer();
  fatal("unknown --layer '" + name +
        "': expected GateLoop, LRU, BlockRecurrent, TransformerXL or MemBART");
}

} // namespace

int main(int argc, char **argv) {
  std::string name = "GateLoop";
  int64_t steps = 0, batch = 2;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc)
        fatal(arg + " expects a value");
      return argv[++i];
    };
    if (arg == "--layer")
      name = value();
    else if (arg == "--steps")
      steps = std::atoll(value().c_str());
    else if (arg == "--batch")
      batch = std::atoll(value().c_str());
    else if (arg == "--seed")
      seed = std::strtoull(value().c_str(), nullptr, 10);
    else if (arg == "--help" || arg == "-h") {
      std::printf("usage: recur-infer --layer GateLoop|LRU|BlockRecurrent|"
                  "TransformerXL|MemBART\n                   [--steps N] "
                  "[--batch B] [--seed S]\n\n"
                  "Decodes N steps (positions; BlockRecurrent: blocks of W "
                  "tokens, one token\nat a time; TransformerXL, MemBART: "
                  "segments and turns) with the state carried,\nchecks decode "
                  "== the parallel form and save/restore mid-stream == no "
                  "restore,\nand prints the latency per call "
                  "(docs/inference.md).\n");
      return 0;
    } else
      fatal("unexpected argument '" + arg + "' (see --help)");
  }
  const recur_layer_desc *layer = findLayer(name);
  bool timed = layer->time_dim >= 0;
  if (steps <= 0)
    steps = timed ? (layer->step_length > 1 ? 16 : 256) : 8;
  if (batch < 1 || steps < 2)
    fatal("--batch must be at least 1 and --steps at least 2");
  int64_t step = timed ? layer->step_length : 1;
  int32_t pieceDim = timed ? layer->time_dim : -1; // what a step narrows
  int64_t length = timed ? steps * step : 0;

  std::vector<int64_t> dims(layer->num_runtime_dims, 1);
  if (layer->batch_dim >= 0)
    dims[layer->batch_dim] = batch;
  if (timed)
    dims[layer->time_dim] = length;
  Rng rng(seed);
  std::vector<Buffer> inputs, params, outputs;
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &a = layer->args[i];
    if (a.role == RECUR_ROLE_INPUT)
      inputs.push_back(makeBuffer(a, dims));
    else if (a.role == RECUR_ROLE_PARAM) {
      Buffer p = makeBuffer(a, dims);
      initialize(parseInitRule(a.init_rule, a.name), p.data.data(),
                 static_cast<int64_t>(p.data.size()), rng);
      params.push_back(std::move(p));
    }
  }
  for (int32_t i = 0; i < layer->num_results; ++i)
    if (layer->results[i].role == RECUR_ROLE_OUTPUT)
      outputs.push_back(makeBuffer(layer->results[i], dims));
  std::vector<recur_tensor> p = views(params);
  if (layer == recur_BlockRecurrentSkipFixed_layer())
    return decodeBlockRecurrent(layer, inputs, p, outputs, batch, steps, rng)
               ? 0
               : 1;

  // Generation feeds the first output back as the first input when they
  // have the same shape per position (GateLoop's and LRU's y and x).
  bool feedback = timed && !inputs.empty() && !outputs.empty() &&
                  inputs[0].shape == outputs[0].shape;
  fillInputs(layer, inputs, 0, rng);
  std::printf("recur-infer: layer %s, batch %lld, %lld %s%s\n", layer->name,
              static_cast<long long>(batch), static_cast<long long>(steps),
              timed ? "steps of " : "segments",
              timed ? (std::to_string(step) + " position(s), each input tanh "
                                              "of the last output")
                          .c_str()
                    : "");
  if (timed && !feedback)
    std::printf("(inputs drawn at random: no output has the input's shape)\n");

  // Decode, saving and restoring midway; the restored state runs beside.
  recur_state *state = nullptr, *restored = nullptr;
  check(recur_state_create(layer, batch, p.data(), &state),
        "recur_state_create");
  std::vector<Buffer> restoredOut = outputs;
  // Without a time dimension: each call's inputs and outputs, for the
  // prefill check.
  std::vector<std::vector<Buffer>> history, decodedOut;
  Latency decode;
  bool identical = true;
  int64_t saveAt = steps / 2;
  for (int64_t s = 0; s < steps; ++s) {
    int64_t t = s * step;
    if (s == saveAt)
      restored = restoredCopy(layer, batch, p, state, s, "steps");
    if (!timed && s > 0) // a new segment's inputs
      fillInputs(layer, inputs, s, rng);
    std::vector<recur_tensor> in = views(inputs, pieceDim, t, step),
                              out = views(outputs, pieceDim, t, step),
                              out2 = views(restoredOut, pieceDim, t, step);
    double start = now();
    check(recur_step(layer, in.data(), p.data(), state, out.data()),
          "recur_step");
    decode.us.push_back((now() - start) * 1e6);
    if (!timed) {
      history.push_back(inputs);
      decodedOut.push_back(outputs);
    }
    if (restored) {
      check(recur_step(layer, in.data(), p.data(), restored, out2.data()),
            "recur_step (restored)");
      for (size_t o = 0; o < outputs.size(); ++o)
        forEachPair(out[o], out2[o], [&](float *a, float *b) {
          if (std::memcmp(a, b, sizeof(float)))
            identical = false;
        });
    }
    if (feedback && s + 1 < steps) {
      // The next step's input is this step's output, squashed by tanh (as
      // a language model re-embeds the token it sampled: bounded, where
      // feeding the raw output back can grow without bound).
      Buffer &x = inputs[0], &y = outputs[0];
      int d = dimIndex(*x.desc, layer->time_dim);
      forEachPair(y.slice(d, t, step), x.slice(d, t + step, step),
                  [](float *from, float *to) { *to = std::tanh(*from); });
    }
  }
  std::vector<std::vector<float>> decodedState = stateData(layer, state),
                                  restoredState = stateData(layer, restored);
  identical = identical && decodedState == restoredState;
  recur_state_destroy(restored);
  decode.print(timed ? "decode (one step)" : "segment");
  std::printf("save/restore mid-stream: %s\n",
              identical ? "identical outputs and final state"
                        : "DIFFERENT from the uninterrupted stream");
  bool ok = identical;

  if (const recur_layer_desc *pre = prefillLayer(layer)) {
    double err =
        prefillError(layer, pre, history, decodedOut, p, batch, decodedState);
    std::printf("decode == prefill (%s, all %lld in one call): max_rel_err "
                "%.3g (outputs and final state)\n",
                pre->name, static_cast<long long>(steps), err);
    if (!(err <= 1e-4)) {
      std::printf("error: decode and prefill differ beyond 1e-4\n");
      ok = false;
    }
  }

  if (timed) {
    // The parallel form over the generated sequence, from the init state.
    recur_state *fresh = nullptr;
    check(recur_state_create(layer, batch, p.data(), &fresh),
          "recur_state_create");
    std::vector<Buffer> prefill = outputs;
    std::vector<recur_tensor> in = views(inputs), out = views(prefill);
    // Timed after one untimed call (thread start-up, first allocations),
    // from the init state each time (no state: the init rules).
    check(recur_forward(layer, in.data(), p.data(), nullptr, out.data()),
          "recur_forward");
    double start = now();
    check(recur_forward(layer, in.data(), p.data(), fresh, out.data()),
          "recur_forward");
    double seconds = now() - start;
    double err =
        runError(outputs, prefill, decodedState, stateData(layer, fresh));
    recur_state_destroy(fresh);
    std::printf("parallel form (recur_forward over all %lld positions): "
                "%.2f us per position\n",
                static_cast<long long>(length), seconds * 1e6 / length);
    // f32 over a few hundred steps: the decode and the parallel form order
    // their sums differently (chunked or not), within f32 rounding.
    std::printf("decode == parallel form: max_rel_err %.3g (outputs and "
                "final state)\n",
                err);
    if (!(err <= 1e-4)) {
      std::printf("error: decode and parallel form differ beyond 1e-4\n");
      ok = false;
    }
  }
  recur_state_destroy(state);
  return ok ? 0 : 1;
}
