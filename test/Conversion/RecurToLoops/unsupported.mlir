// RUN: recur-opt %s --convert-recur-to-loops -verify-diagnostics

// Ops the reference lowering does not cover yet fail loudly instead of
// surviving into later stages.

func.func @window_attention_not_lowered(%q: tensor<2x16x8xf32>)
    -> tensor<2x16x8xf32> {
  // expected-error @+1 {{failed to legalize operation 'recur.window_attention' that was explicitly marked illegal}}
  %o = recur.window_attention %q, %q, %q window 4
      : tensor<2x16x8xf32>, tensor<2x16x8xf32>, tensor<2x16x8xf32>
  return %o : tensor<2x16x8xf32>
}
