//===- Memory.cpp - oracle of block_recurrence and memory_update ----------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

using namespace recur::reference;
using namespace recur::reference::detail;

BlockRecurrenceResult
recur::reference::blockRecurrence(const std::vector<Tensor<double>> &inputs,
                                  const std::vector<Tensor<double>> &inits,
                                  int64_t blockSize, int64_t axis,
                                  const BlockBody &body) {
  const std::string op = "block_recurrence";
  if (inputs.empty())
    fail(op, "expects at least one input");
  if (!body)
    fail(op, "needs a body");
  if (blockSize < 1)
    fail(op,
         "'block_size' must be at least 1, got " + std::to_string(blockSize));
  for (size_t m = 0; m < inputs.size(); ++m)
    checkAxis(axis, inputs[m].rank(), op);
  int64_t length = inputs.front().shape[axis];
  for (size_t m = 0; m < inputs.size(); ++m)
    if (inputs[m].shape[axis] != length)
      fail(op, "input #" + std::to_string(m) + " has " +
                   std::to_string(inputs[m].shape[axis]) +
                   " positions along the axis, input #0 has " +
                   std::to_string(length));
  if (length % blockSize != 0)
    fail(op, "sequence length " + std::to_string(length) +
                 " is not a multiple of the block size " +
                 std::to_string(blockSize));

  std::vector<Tensor<double>> carried = inits;
  std::vector<std::vector<Tensor<double>>> outputBlocks; // [output][block]
  for (int64_t start = 0; start < length; start += blockSize) {
    std::vector<Tensor<double>> blocks;
    for (const Tensor<double> &input : inputs)
      blocks.push_back(slice(input, axis, start, blockSize));
    BlockStep step = body(blocks, carried);

    if (step.carried.size() != inits.size())
      fail(op, "body yielded " + std::to_string(step.carried.size()) +
                   " carried values, expected " + std::to_string(inits.size()));
    for (size_t m = 0; m < inits.size(); ++m)
      requireShape(step.carried[m], inits[m].shape, op,
                   "carried value #" + std::to_string(m));
    if (start == 0)
      outputBlocks.resize(step.outputs.size());
    if (step.outputs.size() != outputBlocks.size())
      fail(op, "body yielded " + std::to_string(step.outputs.size()) +
                   " outputs, but " + std::to_string(outputBlocks.size()) +
                   " for the first block");
    for (size_t m = 0; m < step.outputs.size(); ++m) {
      const Tensor<double> &out = step.outputs[m];
      if (axis >= out.rank() || out.shape[axis] != blockSize)
        fail(op, "output #" + std::to_string(m) + " block of shape " +
                     shapeString(out.shape) + " must have " +
                     std::to_string(blockSize) + " positions along the axis");
      if (!outputBlocks[m].empty())
        requireShape(out, outputBlocks[m].front().shape, op,
                     "output #" + std::to_string(m) + " block");
      outputBlocks[m].push_back(out);
    }
    carried = step.carried;
  }

  BlockRecurrenceResult result;
  for (const std::vector<Tensor<double>> &blocks : outputBlocks)
    result.outputs.push_back(concat(blocks, axis));
  result.finals = carried;
  return result;
}

Tensor<double> recur::reference::memoryUpdate(const Tensor<double> &memory,
                                              const Tensor<double> &newStates,
                                              int64_t axis, int64_t size) {
  const std::string op = "memory_update";
  checkAxis(axis, memory.rank(), op);
  if (!sameExcept(newStates.shape, memory.shape, axis))
    fail(op, "'new_states' shape " + shapeString(newStates.shape) +
                 " must match 'memory' shape " + shapeString(memory.shape) +
                 " in all but dimension " + std::to_string(axis));
  int64_t total = memory.shape[axis] + newStates.shape[axis];
  if (size < 0 || size > total)
    fail(op, "'size' (" + std::to_string(size) + ") must be in [0, " +
                 std::to_string(total) + "]");
  Tensor<double> all = concat<double>({memory, newStates}, axis);
  return slice(all, axis, total - size, size);
}
