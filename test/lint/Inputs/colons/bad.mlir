// RUN recur-opt %s | FileCheck %s --check-prefixes=CHECK,MINE
// CHECK-LABEL func.func @f
// CHECK-NEXT return
// MINE-SAME %arg0
// expected-error missing braces
// expected-error @+1 {{this one is fine}}
// CHECK: this one is fine
// Checks nothing, and that is fine: prose mentioning CHECK lines.
