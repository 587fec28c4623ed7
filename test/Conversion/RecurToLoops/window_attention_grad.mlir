// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.
// RUN: recur-opt %s --convert-recur-to-loops=mark-parallel=true --split-input-file | FileCheck %s --check-prefix=PAR

// The fused backward of window attention. The keys are copied transposed
// twice: in panels ([n, C + T padded / 8, e, 8]: each vector of 8 keys at a
// channel after the one at the channel before) and as rows ([n, e, C + T
// padded]); the values in panels; all padded with zeros to whole vectors of
// 8 keys and one more cache line (16 keys). The key and value cotangents
// accumulate as rows. Per leading index the queries go by tiles of 16 over
// the union of their bands (whole vectors of keys, at most ceil((3 + 16 +
// 16) / 8) * 8 = 40 keys here). Per tile: its rows of q and dy, S = Q K^T
// in register blocks of 4 rows x 3 vectors of keys (12 vector.fma per
// channel) reading the key panels, the softmax over each row's band, G = dY
// V^T the same way from the value panels, dV^T += dY^T P and dK^T += Q^T G
// in blocks of channels x 3 vectors (read, 16 rows of fma, written back),
// dq = G K in blocks of rows x channels over the key rows, summed across the
// lanes. Last, the transposed cotangents are copied back to [n, T, e].

// CHECK-DAG: #[[PAD:map[0-9]*]] = affine_map<()[s0, s1] -> (((s0 + s1) ceildiv 8) * 8 + 16)>
// CHECK-DAG: #[[PANELS:map[0-9]*]] = affine_map<()[s0] -> (s0 floordiv 8)>
// CHECK-DAG: #[[BLOCKS8:map[0-9]*]] = affine_map<()[s0] -> (s0 ceildiv 8)>
// CHECK-DAG: #[[TILES:map[0-9]*]] = affine_map<()[s0] -> (s0 ceildiv 16)>
// CHECK: func.func @window_grad
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x?x4xf32>, %[[K:[^:]+]]: tensor<2x?x4xf32>, %[[V:[^:]+]]: tensor<2x?x3xf32>, %[[DY:[^:]+]]: tensor<2x?x3xf32>)
// CHECK:       %[[COLS:.+]] = affine.apply #[[PAD]]()
// CHECK:       affine.apply #[[PANELS]]()[%[[COLS]]]
// CHECK:       affine.apply #[[BLOCKS8]]()
// CHECK:       %[[KP0:.+]] = scf.for {{.+}} -> (tensor<2x?x4x8xf32>)
// CHECK:         tensor.extract %[[K]]
// CHECK:       %[[KP:.+]] = scf.for {{.+}} -> (tensor<2x?x4x8xf32>)
// CHECK:       scf.for {{.+}} -> (tensor<2x4x?xf32>)
// CHECK:         tensor.extract %[[K]]
// CHECK:       %[[VP0:.+]] = scf.for {{.+}} -> (tensor<2x?x3x8xf32>)
// CHECK:         tensor.extract %[[V]]
// CHECK:       %[[VP:.+]] = scf.for {{.+}} -> (tensor<2x?x3x8xf32>)
// CHECK:       %{{.+}}:3 = scf.for %[[N:[^ ]+]] = {{.+}} -> (tensor<2x?x4xf32>, tensor<2x4x?xf32>, tensor<2x3x?xf32>)
// CHECK:         %[[NT:.+]] = affine.apply #[[TILES]]()
// CHECK:         scf.for %[[TILE:[^ ]+]] = %{{.+}} to %[[NT]]
// CHECK:           bufferization.alloc_tensor(%c4) : tensor<16x?xf32>
// CHECK:             tensor.extract %[[Q]]
// CHECK:           bufferization.alloc_tensor(%c3) : tensor<16x?xf32>
// CHECK:             tensor.extract %[[DY]]
// CHECK:           bufferization.alloc_tensor(%c40) : tensor<16x?xf32>
// CHECK:             scf.for {{.+}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-3:       vector.transfer_read %[[KP]][%[[N]], %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x?x4x8xf32>, vector<8xf32>
// CHECK-COUNT-12:      vector.fma
// CHECK:           math.exp
// CHECK:           bufferization.alloc_tensor(%c40) : tensor<16x?xf32>
// CHECK-COUNT-3:       vector.transfer_read %[[VP]][%[[N]], %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x?x3x8xf32>, vector<8xf32>
// CHECK-COUNT-12:      vector.fma
// CHECK:           arith.mulf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK:           arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// CHECK:             vector.transfer_read %{{.+}}[%[[N]], %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x3x?xf32>, vector<8xf32>
// CHECK:             scf.for %{{.+}} = %{{.+}} to %c16
// CHECK-COUNT-12:      vector.fma
// CHECK:             vector.transfer_write %{{.+}}, %{{.+}}[%[[N]], %{{.+}}, %{{.+}}] {in_bounds = [true]} : vector<8xf32>, tensor<2x3x?xf32>
// CHECK:             vector.transfer_read %{{.+}}[%[[N]], %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x4x?xf32>, vector<8xf32>
// CHECK:             scf.for %{{.+}} = %{{.+}} to %c16
// CHECK-COUNT-12:      vector.fma
// CHECK:             vector.transfer_write %{{.+}}, %{{.+}}[%[[N]], %{{.+}}, %{{.+}}] {in_bounds = [true]} : vector<8xf32>, tensor<2x4x?xf32>
// CHECK:           bufferization.alloc_tensor(%c4) : tensor<16x?xf32>
// CHECK:             vector.reduction <add>, %{{.+}} fastmath<reassoc> : vector<8xf32> into f32
// CHECK:           tensor.insert %{{.+}} into %{{.+}}[%[[N]], %{{.+}}, %{{.+}}] : tensor<2x?x4xf32>
// CHECK:       scf.for {{.+}} -> (tensor<2x?x4xf32>)
// CHECK:       scf.for {{.+}} -> (tensor<2x?x3xf32>)
// CHECK:       return
func.func @window_grad(%q: tensor<2x?x4xf32>, %k: tensor<2x?x4xf32>, %v: tensor<2x?x3xf32>, %dy: tensor<2x?x3xf32>) -> (tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<2x?x3xf32>) {
  %dq, %dk, %dv = recur.window_attention_grad %q, %k, %v, %dy window 3 : tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<2x?x3xf32> -> tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<2x?x3xf32>
  return %dq, %dk, %dv : tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<2x?x3xf32>
}

// -----

// A T5 bias over a cache, in f64 (vectors of 4): the bias is read once per
// distance (0 .. window + block = 6) per leading index, and dS summed per
// distance there; after the tiles, those sums go to the buckets of this
// leading index's partial, and the partials are summed over the batch into
// the table [heads, buckets]. The cotangents of the cache are the first C
// columns of the transposed accumulators.
// CHECK-LABEL: func.func @window_grad_t5_cache
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<2x2x9x4xf64>, %{{.+}}: tensor<2x2x9x4xf64>, %{{.+}}: tensor<2x2x9x4xf64>, %{{.+}}: tensor<2x2x9x4xf64>, %[[T5:[^:]+]]: tensor<2x8xf64>, %[[KC:[^:]+]]: tensor<2x2x2x4xf64>, %[[VC:[^:]+]]: tensor<2x2x2x4xf64>)
// CHECK:       tensor.extract %[[KC]]
// CHECK:       %{{.+}}:4 = scf.for %[[B:[^ ]+]] = {{.+}} -> (tensor<2x2x9x4xf64>, tensor<2x2x4x?xf64>, tensor<2x2x4x?xf64>, tensor<2x2x8xf64>)
// CHECK:         %{{.+}}:4 = scf.for %[[H:[^ ]+]] = {{.+}} -> (tensor<2x2x9x4xf64>, tensor<2x2x4x?xf64>, tensor<2x2x4x?xf64>, tensor<2x2x8xf64>)
// CHECK:           %[[BIAS:.+]] = bufferization.alloc_tensor(%c7) : tensor<?xf64>
// CHECK:           scf.for %[[DELTA:[^ ]+]] = %{{.+}} to %c7
// CHECK:             tensor.extract %[[T5]][%[[H]], %{{.+}}] : tensor<2x8xf64>
// CHECK:           %[[GRAD:.+]] = bufferization.alloc_tensor(%c7) : tensor<?xf64>
// CHECK:           vector.fma {{.+}} : vector<4xf64>
// CHECK:           math.exp
// CHECK:           scf.for %{{.+}} = %{{.+}} to %c7
// CHECK:             tensor.insert %{{.+}} into %{{.+}}[%[[B]], %[[H]], %{{.+}}] : tensor<2x2x8xf64>
// CHECK:       scf.for
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             tensor.insert %{{.+}} into %{{.+}}[%{{.+}}, %{{.+}}] : tensor<2x8xf64>
// CHECK:       return
// With mark-parallel, the nest over the leading indices is independent
// iterations, the loop over a leading index's tiles is not (its tiles add
// to the same key and value cotangents), nor the sum of the partials over
// the batch (every batch index adds to the same table).
// PAR-LABEL: func.func @window_grad_t5_cache
// PAR:         math.exp
// PAR:           scf.yield %{{.+}} : tensor<2x2x9x4xf64>, tensor<2x2x4x?xf64>, tensor<2x2x4x?xf64>, tensor<?xf64>
// PAR-NEXT:    {{^ *}}}{{$}}
// PAR:         } {recur.parallel}
// PAR-NEXT:    scf.yield
// PAR-NEXT:  } {recur.parallel}
// PAR:         scf.for %[[BATCH:[^ ]+]] = %{{.+}} to %c2 step %{{.+}} iter_args(%{{.+}}) -> (tensor<2x8xf64>)
// PAR:           tensor.extract %{{.+}}[%[[BATCH]], %{{.+}}, %{{.+}}] : tensor<2x2x8xf64>
// PAR-NEXT:      arith.addf
// PAR-NEXT:      tensor.insert %{{.+}} into %{{.+}}[%{{.+}}, %{{.+}}] : tensor<2x8xf64>
// PAR-NEXT:      scf.yield
// PAR-NEXT:    {{^ *}}}{{$}}
// PAR-NEXT:    scf.yield
// PAR-NEXT:    {{^ *}}}{{$}}
// PAR-NEXT:    scf.yield
// PAR-NEXT:    {{^ *}}}{{$}}
func.func @window_grad_t5_cache(%q: tensor<2x2x9x4xf64>, %k: tensor<2x2x9x4xf64>, %v: tensor<2x2x9x4xf64>, %dy: tensor<2x2x9x4xf64>, %t5: tensor<2x8xf64>, %kc: tensor<2x2x2x4xf64>, %vc: tensor<2x2x2x4xf64>) -> (tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x8xf64>, tensor<2x2x2x4xf64>, tensor<2x2x2x4xf64>) {
  %g:6 = recur.window_attention_grad %q, %k, %v, %dy bias(%t5 : tensor<2x8xf64>) cache(%kc, %vc : tensor<2x2x2x4xf64>, tensor<2x2x2x4xf64>) window 4 {bias_kind = #recur.bias<t5>, block = 2 : i64, num_buckets = 8 : i64, max_distance = 16 : i64} : tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64> -> tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x8xf64>, tensor<2x2x2x4xf64>, tensor<2x2x2x4xf64>
  return %g#0, %g#1, %g#2, %g#3, %g#4, %g#5 : tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x2x9x4xf64>, tensor<2x8xf64>, tensor<2x2x2x4xf64>, tensor<2x2x2x4xf64>
}
