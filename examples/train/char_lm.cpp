//===- char_lm.cpp - a character-level language model ---------------------===//
//
// Part of the Recur project.
//
// recur-train-char trains a byte-level language model whose blocks are the
// layers of examples/train/char_lm.recur, a Block-Recurrent Transformer
// layer or the sliding-window layer of the same size, on real text, and
// reports the validation loss in bits per character (docs/training.md).
//
// The default text is the Debian package `fortunes`: every file of
// /usr/share/games/fortunes except the .dat and .u8 indexes, sorted by
// name and concatenated. `--data=kjv` reads the King James Bible instead,
// as the Debian package bible-kjv's `bible` program prints it, one verse a
// line after its reference ("Ge1:1 In the beginning ..."): long documents,
// whose book, chapter and verse numbers lie far beyond a short window.
// The first 90% trains, the last 10% validates.
// Each training sequence is a window of --seq bytes at a random offset and
// starts a new document; with --stream, each batch row reads on where it
// stopped, the blocks carrying their states from one step to the next.
//
//===----------------------------------------------------------------------===//

#include "lm.h"

#include "BlockRecurrentBlock.h"
#include "BlockRecurrentLSTMBlock.h"
#include "SlidingWindowBlock.h"
#include "SlidingWindowWideBlock.h"
#include "SlidingWindowWideLSTMBlock.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>

using namespace recur::train;

namespace {

const char *const kDefaultData = "/usr/share/games/fortunes";

/// `--data=kjv`: the whole King James Bible from the Debian package
/// bible-kjv, a verse a line (`-f` puts the reference first, `-l1000` keeps
/// every verse, at most 535 bytes, on one line).
const char *const kKjvCommand = "bible -f -l1000 Gen1:1-Rev22:21";

const char *const kUsage = R"(usage: recur-train-char [options]

Trains a byte-level language model whose blocks are compiled sliding-window
layers, one of them (or all) a Block-Recurrent layer, then prints the
validation loss in bits per byte.

  --variant=block-recurrent|sliding-window
                       the layers at --recurrent-layer are
                       BlockRecurrentBlock, or SlidingWindowWideBlock (no
                       state, a wider MLP: the same size); the others are
                       SlidingWindowBlock (default block-recurrent)
  --gate=fixed|lstm    the recurrent block's state gate: fixed
                       (BlockRecurrentBlock, the paper's best on PG19) or
                       lstm (BlockRecurrentLSTMBlock); with --match=params
                       the sliding-window model matches that block's size
                       (SlidingWindowWideLSTMBlock for lstm) (default fixed)
  --match=params|dims   what the sliding-window model matches in the
                       recurrent block's place: its parameter count, with
                       SlidingWindowWideBlock (default), or its dimensions
                       (the paper's comparison), with SlidingWindowBlock
  --recurrent-layer=N|all
                       which block is the recurrent one, from 0 at the
                       bottom, or every block (default: the top one, as the
                       paper's layer 10 of 12)
  --data=PATH|kjv      a text file, or a directory whose files (without
                       .dat and .u8) are concatenated in name order
                       (default /usr/share/games/fortunes, Debian package
                       fortunes); kjv: the King James Bible, a verse a line
                       after its reference, as `bible -f` of the Debian
                       package bible-kjv prints it (4.4 MB)
  --seed=N             initialization and batch order (default 1)
  --steps=N            optimizer steps (default 400)
  --batch=N            sequences per step (default 8)
  --seq=N              bytes per sequence, a multiple of the block size
                       (default 128)
  --layers=N           blocks (default 2)
  --lr=X               peak learning rate (default 3e-3)
  --warmup=N           warmup steps (default 20)
  --weight-decay=X     AdamW weight decay of matrices (default 0.05)
  --split=tail|spread  which tenth of the text validates: the last, or,
                       of the text cut in pieces of a hundredth (rounded
                       up), every tenth one (unseen text of the same kind)
                       (default tail)
  --eval-windows=N|all validation windows of --seq bytes: N spread evenly
                       over the validation text (with --stream, N / --batch
                       rounded up from the start of each row), or all of it
                       (default all)
  --stream             each batch row reads the text on from where the last
                       step left it, and the blocks carry their states
                       (recurrent state, K/V cache) from step to step,
                       gradients stopping at the step boundary; validation
                       reads --batch rows of consecutive windows the same way
  --log-every=N        steps per progress line (default 50)
  --threads=N          threads (default: OMP_NUM_THREADS or all cores)
  --save=FILE          write the trained weights (safetensors)
  --load=FILE          start from saved weights
  --eval-only          evaluate only (with --load)
  --help               this text

Prints `step <n> loss <x> lr <lr> tokens/s <y>` every --log-every steps,
then `eval first words loss <x> positions <n> rest loss <x> positions <n>`
(the bytes of each line up to and including its first space, a verse's
reference in kjv, and the others) and
`eval loss <x> bpc <y> positions <n>` at the end (loss in nats per byte).
)";

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fatal("cannot read '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

/// What `command` prints on its standard output; fatal if it cannot be
/// run or fails.
std::string readCommand(const std::string &command, const std::string &hint) {
  FILE *pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (!pipe)
    fatal("cannot run '" + command + "'" + hint);
  std::string text;
  char chunk[1 << 16];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0)
    text.append(chunk, got);
  int status = pclose(pipe);
  if (status != 0 || text.empty())
    fatal("'" + command + "' failed" +
          (WIFEXITED(status) && WEXITSTATUS(status) == 127 ? hint : ""));
  return text;
}

/// The text at `path`: the file, or the regular files of the directory in
/// name order without fortune's .dat and .u8 indexes; `kjv` is the King
/// James Bible.
std::string readText(const std::string &path) {
  if (path == "kjv")
    return readCommand(kKjvCommand, " (install the Debian package bible-kjv)");
  struct stat info;
  if (stat(path.c_str(), &info) != 0)
    fatal("cannot read '" + path + "'" +
          (path == kDefaultData
               ? " (install the Debian package fortunes, or pass --data)"
               : ""));
  if (!S_ISDIR(info.st_mode))
    return readFile(path);
  DIR *dir = opendir(path.c_str());
  if (!dir)
    fatal("cannot list '" + path + "'");
  std::vector<std::string> names;
  while (dirent *entry = readdir(dir)) {
    std::string name = entry->d_name;
    struct stat file;
    if (name[0] == '.' || endsWith(name, ".dat") || endsWith(name, ".u8") ||
        stat((path + "/" + name).c_str(), &file) != 0 || !S_ISREG(file.st_mode))
      continue;
    names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  std::string text;
  for (const std::string &name : names)
    text += readFile(path + "/" + name);
  return text;
}

/// Per byte of `text`, whether it is in the first word of its line: from
/// the line's start up to and including its first space (in kjv, a verse's
/// reference, `Ge1:5 `, which a short window cannot see the last one of).
std::vector<bool> firstWords(const std::string &text) {
  std::vector<bool> first(text.size());
  bool inFirst = true;
  for (size_t i = 0; i < text.size(); ++i) {
    first[i] = inFirst;
    if (text[i] == '\n')
      inFirst = true;
    else if (text[i] == ' ')
      inFirst = false;
  }
  return first;
}

/// A window of `time` bytes at `offset` and the bytes after each.
void addWindow(const std::string &text, int64_t offset, int64_t time,
               int32_t *tokens, int32_t *targets) {
  for (int64_t t = 0; t < time; ++t) {
    tokens[t] = static_cast<unsigned char>(text[offset + t]);
    targets[t] = static_cast<unsigned char>(text[offset + t + 1]);
  }
}

} // namespace

int main(int argc, char **argv) {
  Options opts(argc, argv, {"help", "eval-only", "stream"},
               {"variant", "gate", "match", "split", "recurrent-layer", "data",
                "seed", "steps", "batch", "seq", "layers", "lr", "warmup",
                "weight-decay", "eval-windows", "log-every", "threads", "save",
                "load"});
  if (opts.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::string variant = opts.get("variant", "block-recurrent");
  std::string gate = opts.get("gate", "fixed");
  if (gate != "fixed" && gate != "lstm")
    fatal("--gate must be fixed or lstm, not '" + gate + "'");
  bool lstm = gate == "lstm";
  const recur_layer_desc *special = nullptr;
  if (variant == "block-recurrent")
    special = lstm ? recur_BlockRecurrentLSTMBlock_layer()
                   : recur_BlockRecurrentBlock_layer();
  else if (variant == "sliding-window")
    special = lstm ? recur_SlidingWindowWideLSTMBlock_layer()
                   : recur_SlidingWindowWideBlock_layer();
  else
    fatal("--variant must be block-recurrent or sliding-window, not '" +
          variant + "'");
  std::string match = opts.get("match", "params");
  if (match != "params" && match != "dims")
    fatal("--match must be params or dims, not '" + match + "'");
  if (variant == "sliding-window" && match == "dims")
    special = recur_SlidingWindowBlock_layer();
  int64_t layers = opts.getInt("layers", 2);
  if (layers < 1)
    fatal("--layers must be >= 1");
  std::string where = opts.get("recurrent-layer", std::to_string(layers - 1));
  ModelConfig config;
  config.vocab = 256;
  bool placed = false;
  for (int64_t b = 0; b < layers; ++b) {
    bool here = where == "all" || where == std::to_string(b);
    placed |= here;
    config.blocks.push_back(here ? special : recur_SlidingWindowBlock_layer());
  }
  if (!placed)
    fatal("--recurrent-layer must be a block from 0 to " +
          std::to_string(layers - 1) + " or 'all', not '" + where + "'");

  uint64_t seed = static_cast<uint64_t>(opts.getInt("seed", 1));
  int64_t steps = opts.getInt("steps", 400);
  int64_t batch = opts.getInt("batch", 8);
  int64_t seq = opts.getInt("seq", 128);
  bool allWindows = opts.get("eval-windows", "all") == "all";
  int64_t evalWindows = allWindows ? 1 : opts.getInt("eval-windows", 0);
  int64_t logEvery = opts.getInt("log-every", 50);
  bool stream = opts.has("stream");
  if (steps < 0 || batch < 1 || evalWindows < 1 || logEvery < 1)
    fatal("--steps must be >= 0, --batch, --eval-windows (or all) and "
          "--log-every >= 1");
  // Both layers run blocks of W tokens: the recurrent one steps a block at
  // a time, the sliding-window one keeps the last W keys.
  const recur_layer_desc *block = config.blocks[0];
  int64_t window = 0;
  for (int32_t i = 0; i < block->num_args; ++i)
    if (block->args[i].role == RECUR_ROLE_STATE &&
        std::string(block->args[i].name) == "kc")
      window = block->args[i].shape[2];
  if (window <= 0 || seq < window || seq % window != 0)
    fatal("--seq must be a positive multiple of the block size " +
          std::to_string(window) + ", not " + std::to_string(seq));
  setThreads(static_cast<int>(opts.getInt("threads", 0)));

  std::string dataPath = opts.get("data", kDefaultData);
  std::string text = readText(dataPath);
  std::string split = opts.get("split", "tail");
  if (split != "tail" && split != "spread")
    fatal("--split must be tail or spread, not '" + split + "'");
  // tail: the last tenth validates; spread: the text cut into pieces of
  // ceil(size / 100) bytes (the last one shorter; a text under 9901 bytes
  // has fewer than 100), every tenth one (9, 19, ...) validating. Each
  // part's pieces are joined.
  std::vector<bool> textFirst = firstWords(text);
  std::string trainText, validText;
  std::vector<bool> validFirst; // firstWords of validText, seams aside
  auto take = [&](int64_t at, int64_t end, bool valid) {
    (valid ? validText : trainText).append(text, at, end - at);
    if (valid)
      validFirst.insert(validFirst.end(), textFirst.begin() + at,
                        textFirst.begin() + end);
  };
  int64_t size = static_cast<int64_t>(text.size());
  if (split == "tail") {
    take(0, size * 9 / 10, false);
    take(size * 9 / 10, size, true);
  } else {
    int64_t piece = (size + 99) / 100;
    for (int64_t k = 0, at = 0; at < size; ++k, at += piece)
      take(at, std::min(size, at + piece), k % 10 == 9);
  }
  if (static_cast<int64_t>(validText.size()) < seq + 1)
    fatal("'" + dataPath + "' has " + std::to_string(text.size()) +
          " bytes; its validation tenth needs at least --seq + 1 = " +
          std::to_string(seq + 1));

  Model model(config, seed ^ 0x5eedf00dull);
  std::map<std::string, std::string> metadata = {{"task", "char-lm"},
                                                 {"variant", variant}};
  std::printf("model: variant %s, %s, blocks and window of %lld bytes\n",
              variant.c_str(), model.summary().c_str(),
              static_cast<long long>(window));
  std::printf("data: %s, %lld bytes (%lld train, %lld validation), "
              "%lld x %lld bytes per step\n",
              dataPath.c_str(), static_cast<long long>(text.size()),
              static_cast<long long>(trainText.size()),
              static_cast<long long>(validText.size()),
              static_cast<long long>(batch), static_cast<long long>(seq));
  std::fflush(stdout);

  if (opts.has("load")) {
    model.load(opts.get("load", ""), metadata);
    std::printf("loaded %s\n", opts.get("load", "").c_str());
  }
  double start = now();
  if (!opts.has("eval-only")) {
    AdamW optimizer(adamWFromOptions(opts, 3e-3, 20, steps));
    Rng order(seed ^ 0xda7a5eedull);
    int64_t span = static_cast<int64_t>(trainText.size()) - seq - 1;
    if (span < 1)
      fatal("the training text is shorter than --seq");
    // Streaming: row i reads on from where it stopped (from a random
    // offset, wrapping around at the end).
    std::vector<int64_t> cursor(batch, -1);
    model.carryStates(stream);
    train(model, optimizer, steps, logEvery, [&](Batch &b) {
      b.batch = batch;
      b.time = seq;
      b.tokens.resize(batch * seq);
      b.targets.resize(batch * seq);
      b.starts.assign(batch, 1.0f);
      for (int64_t i = 0; i < batch; ++i) {
        int64_t offset;
        if (stream && cursor[i] >= 0 && cursor[i] <= span) {
          offset = cursor[i];
          b.starts[i] = 0.0f;
        } else {
          offset = static_cast<int64_t>(order.below(span + 1));
        }
        cursor[i] = offset + seq;
        addWindow(trainText, offset, seq, b.tokens.data() + i * seq,
                  b.targets.data() + i * seq);
      }
    });
  }
  double trainSeconds = now() - start;
  if (opts.has("save")) {
    model.save(opts.get("save", ""), metadata);
    std::printf("saved %s\n", opts.get("save", "").c_str());
  }

  // Validation: --eval-windows windows spread evenly over the validation
  // text (all: every whole window of it), each a new document; with
  // --stream, --batch rows of consecutive windows (row i reads the i-th of
  // --batch equal parts of the text) read with the states carried.
  std::vector<Batch> batches;
  std::vector<int64_t> offsets; // per batch row of `batches`, in order
  int64_t validBytes = static_cast<int64_t>(validText.size());
  if (stream) {
    int64_t rowBytes = validBytes / batch;
    int64_t perRow = (rowBytes - 1) / seq;
    if (!allWindows)
      perRow = std::min((evalWindows + batch - 1) / batch, perRow);
    if (perRow < 1)
      fatal("the validation text is too short for --batch rows of --seq");
    for (int64_t k = 0; k < perRow; ++k) {
      Batch b;
      b.batch = batch;
      b.time = seq;
      b.tokens.resize(batch * seq);
      b.targets.resize(batch * seq);
      b.starts.assign(batch, k == 0 ? 1.0f : 0.0f);
      for (int64_t i = 0; i < batch; ++i) {
        offsets.push_back(i * rowBytes + k * seq);
        addWindow(validText, offsets.back(), seq, b.tokens.data() + i * seq,
                  b.targets.data() + i * seq);
      }
      batches.push_back(std::move(b));
    }
  } else {
    int64_t span = validBytes - seq - 1;
    // all: windows end to end, the last one ending before the last byte
    // (whose next byte a target would need).
    if (allWindows)
      evalWindows = span / seq + 1;
    for (int64_t done = 0; done < evalWindows; done += batch) {
      Batch b;
      b.batch = std::min(batch, evalWindows - done);
      b.time = seq;
      b.tokens.resize(b.batch * seq);
      b.targets.resize(b.batch * seq);
      for (int64_t i = 0; i < b.batch; ++i) {
        int64_t k = done + i;
        int64_t offset = allWindows        ? k * seq
                         : evalWindows > 1 ? span * k / (evalWindows - 1)
                                           : 0;
        offsets.push_back(offset);
        addWindow(validText, offset, seq, b.tokens.data() + i * seq,
                  b.targets.data() + i * seq);
      }
      batches.push_back(std::move(b));
    }
  }
  model.carryStates(stream);
  // The loss of the first words of lines apart from the rest's: what lies
  // beyond a window shows there.
  Score score, firstScore, restScore;
  size_t row = 0;
  for (const Batch &b : batches) {
    score.add(model.forward(b, false));
    const std::vector<double> &losses = model.losses();
    for (int64_t i = 0; i < b.batch; ++i, ++row)
      for (int64_t t = 0; t < b.time; ++t) {
        if (b.targets[i * b.time + t] < 0)
          continue;
        Score &part = validFirst[offsets[row] + t + 1] ? firstScore : restScore;
        part.lossSum += losses[i * b.time + t];
        ++part.count;
      }
  }
  std::printf("train seconds %.1f\n", trainSeconds);
  std::printf("eval first words loss %.4f positions %lld rest loss %.4f "
              "positions %lld\n",
              firstScore.loss(), static_cast<long long>(firstScore.count),
              restScore.loss(), static_cast<long long>(restScore.count));
  std::printf("eval loss %.4f bpc %.4f positions %lld\n", score.loss(),
              score.loss() / std::log(2.0),
              static_cast<long long>(score.count));
  return 0;
}
