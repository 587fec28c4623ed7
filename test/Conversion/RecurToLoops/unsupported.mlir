// RUN: recur-opt %s --convert-recur-to-loops -verify-diagnostics

// The one form the reference lowering does not cover: a block_recurrence
// output with a dynamic size besides the axis. The outputs are allocated
// before the body runs, and that size is only known inside it. The pass says
// so instead of leaving the op for later stages.

func.func @block_output_dynamic_width(%x: tensor<2x8xf32>, %n: index)
    -> tensor<?x8xf32> {
  // expected-error @+1 {{'recur.block_recurrence' op cannot be lowered to reference loops: output #0 has a dynamic dimension 0 besides the axis; the reference lowering allocates the outputs before the body runs and needs its size}}
  %y = recur.block_recurrence (%x : tensor<2x8xf32>) block 4 along 1
      -> tensor<?x8xf32> {
  ^bb0(%xb: tensor<2x4xf32>):
    %e = tensor.empty(%n) : tensor<?x4xf32>
    recur.yield %e : tensor<?x4xf32>
  }
  return %y : tensor<?x8xf32>
}
