// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// Token band with include_self over a dynamic T: query p sees the keys at
// p - 2 .. p (window 3), clamped at 0; the logit is scale * q.k minus
// slope[h] * (p - p'); the row is zeroed, the largest logit found (pass 1),
// exp(logit - max) accumulated with the weighted values (pass 2) and the row
// divided by the sum only when some key was seen.

// CHECK-LABEL: func.func @window_token_alibi
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x?x4xf32>, %[[K:[^ ]+]]: tensor<2x?x4xf32>, %[[V:[^ ]+]]: tensor<2x?x3xf32>, %[[SL:[^ ]+]]: tensor<2xf32>)
// CHECK-DAG: %[[T:[^ ]+]] = tensor.dim %[[Q]], %{{.+}} : tensor<2x?x4xf32>
// CHECK-DAG: %[[C:[^ ]+]] = arith.constant 0 : index
// CHECK-DAG: %[[SCALE:[^ ]+]] = arith.constant 2.500000e-01 : f32
// CHECK: scf.for %[[H:[^ ]+]] =
// CHECK:   scf.for %[[P:[^ ]+]] = %{{.+}} to %[[T]] step
// CHECK:     %[[C2:[^ ]+]] = arith.constant 2 : index
// CHECK:     %[[FIRST:[^ ]+]] = arith.subi %[[P]], %[[C2]] : index
// CHECK:     %[[C0:[^ ]+]] = arith.constant 0 : index
// CHECK:     %[[LAST:[^ ]+]] = arith.subi %[[P]], %[[C0]] : index
// CHECK:     %[[FIRSTR:[^ ]+]] = arith.addi %[[FIRST]], %[[C]] : index
// CHECK:     %[[BEGIN:[^ ]+]] = arith.maxsi %[[FIRSTR]], %{{.+}} : index
// CHECK:     %[[LASTR:[^ ]+]] = arith.addi %[[LAST]], %[[C]] : index
// CHECK:     %[[END:[^ ]+]] = arith.addi %[[LASTR]], %{{.+}} : index
// CHECK:     %[[ZEROED:[^ ]+]] = scf.for
// CHECK:       tensor.insert %{{.+}} into %{{.+}}[%[[H]], %[[P]], %{{.+}}]
// CHECK:     %[[NEGINF:[^ ]+]] = arith.constant 0xFF800000 : f32
// CHECK:     %[[MAX:[^ ]+]] = scf.for %[[R:[^ ]+]] = %[[BEGIN]] to %[[END]] step %{{.+}} iter_args(%[[M:[^ ]+]] = %[[NEGINF]]) -> (f32)
// CHECK:       %[[DOT:[^ ]+]] = scf.for %[[E:[^ ]+]] =
// CHECK:         %[[QE:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[P]], %[[E]]]
// CHECK:         %[[KE:[^ ]+]] = tensor.extract %[[K]][%[[H]], %[[R]], %[[E]]]
// CHECK:         arith.mulf %[[QE]], %[[KE]] : f32
// CHECK:       %[[SCALED:[^ ]+]] = arith.mulf %[[SCALE]], %[[DOT]] : f32
// CHECK:       %[[PC:[^ ]+]] = arith.addi %[[P]], %[[C]] : index
// CHECK:       %[[DELTA:[^ ]+]] = arith.subi %[[PC]], %[[R]] : index
// CHECK:       %[[SLOPE:[^ ]+]] = tensor.extract %[[SL]][%[[H]]] : tensor<2xf32>
// CHECK:       %[[NEG:[^ ]+]] = arith.negf %[[SLOPE]] : f32
// CHECK:       %[[DI:[^ ]+]] = arith.index_cast %[[DELTA]] : index to i64
// CHECK:       %[[DF:[^ ]+]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK:       %[[BIAS:[^ ]+]] = arith.mulf %[[NEG]], %[[DF]] : f32
// CHECK:       %[[LOGIT:[^ ]+]] = arith.addf %[[SCALED]], %[[BIAS]] : f32
// CHECK:       %[[MN:[^ ]+]] = arith.maximumf %[[M]], %[[LOGIT]] : f32
// CHECK:       scf.yield %[[MN]] : f32
// CHECK:     %[[ACC:[^ ]+]]:2 = scf.for %[[R2:[^ ]+]] = %[[BEGIN]] to %[[END]] step %{{.+}} iter_args(%[[ROW:[^ ]+]] = %[[ZEROED]], %[[SUM:[^ ]+]] = %{{.+}})
// CHECK:       %[[SH:[^ ]+]] = arith.subf %{{.+}}, %[[MAX]] : f32
// CHECK:       %[[W:[^ ]+]] = math.exp %[[SH]] : f32
// CHECK:       %[[SUMN:[^ ]+]] = arith.addf %[[SUM]], %[[W]] : f32
// CHECK:       scf.for %[[J:[^ ]+]] =
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %{{.+}}[%[[H]], %[[P]], %[[J]]]
// CHECK:         %[[VJ:[^ ]+]] = tensor.extract %[[V]][%[[H]], %[[R2]], %[[J]]]
// CHECK:         %[[WV:[^ ]+]] = arith.mulf %[[W]], %[[VJ]] : f32
// CHECK:         arith.addf %[[OLD]], %[[WV]] : f32
// CHECK:     %[[SEEN:[^ ]+]] = arith.cmpf ogt, %[[ACC]]#1, %{{.+}} : f32
// CHECK:     scf.if %[[SEEN]] -> (tensor<2x?x3xf32>)
// CHECK:       scf.for
// CHECK:         arith.divf %{{.+}}, %[[ACC]]#1 : f32
// CHECK:     } else {
// CHECK:       scf.yield %[[ACC]]#0
func.func @window_token_alibi(%q: tensor<2x?x4xf32>, %k: tensor<2x?x4xf32>,
                              %v: tensor<2x?x3xf32>, %slopes: tensor<2xf32>)
    -> tensor<2x?x3xf32> {
  %o = recur.window_attention %q, %k, %v bias(%slopes : tensor<2xf32>)
      window 3
      {include_self, bias_kind = #recur.bias<alibi>, scale = 0.25 : f64}
      : tensor<2x?x4xf32>, tensor<2x?x4xf32>, tensor<2x?x3xf32>
  return %o : tensor<2x?x3xf32>
}

// -----

// Block band (block 2, window 4) behind a cache of C = 5 positions, with the
// T5 bias: key r sits at position r - C and is read from the cache when
// r < C; query p sees the positions from (p / 2) * 2 - 4 to p - 1; the bias
// table is read at the bucket of delta = p + C - r (16 exact buckets, then
// log-spaced up to 128 in f64, clamped to 31); the default scale is
// 1/sqrt(4).

// CHECK-LABEL: func.func @window_block_t5_cache
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<1x2x6x4xf32>, %[[K:[^ ]+]]: tensor<1x2x6x4xf32>, %[[V:[^ ]+]]: tensor<1x2x6x3xf32>, %[[TAB:[^ ]+]]: tensor<2x32xf32>, %[[KC:[^ ]+]]: tensor<1x2x5x4xf32>, %[[VC:[^ ]+]]: tensor<1x2x5x3xf32>)
// CHECK-DAG: %[[C:[^ ]+]] = arith.constant 5 : index
// CHECK-DAG: %[[SCALE:[^ ]+]] = arith.constant 5.000000e-01 : f32
// CHECK: scf.for %[[B:[^ ]+]] =
// CHECK: scf.for %[[H:[^ ]+]] =
// CHECK: scf.for %[[P:[^ ]+]] =
// CHECK:   %[[BL:[^ ]+]] = arith.constant 2 : index
// CHECK:   %[[BI:[^ ]+]] = arith.divui %[[P]], %[[BL]] : index
// CHECK:   %[[BS:[^ ]+]] = arith.muli %[[BI]], %[[BL]] : index
// CHECK:   %[[W:[^ ]+]] = arith.constant 4 : index
// CHECK:   %[[FIRST:[^ ]+]] = arith.subi %[[BS]], %[[W]] : index
// CHECK:   %[[ONE:[^ ]+]] = arith.constant 1 : index
// CHECK:   %[[LAST:[^ ]+]] = arith.subi %[[P]], %[[ONE]] : index
// CHECK:   %[[FIRSTR:[^ ]+]] = arith.addi %[[FIRST]], %[[C]] : index
// CHECK:   %[[BEGIN:[^ ]+]] = arith.maxsi %[[FIRSTR]], %{{.+}} : index
// CHECK:   %[[LASTR:[^ ]+]] = arith.addi %[[LAST]], %[[C]] : index
// CHECK:   %[[END:[^ ]+]] = arith.addi %[[LASTR]], %{{.+}} : index
// CHECK:   scf.for %[[R:[^ ]+]] = %[[BEGIN]] to %[[END]]
// CHECK:     scf.for %[[E:[^ ]+]] =
// CHECK:       %[[INCACHE:[^ ]+]] = arith.cmpi slt, %[[R]], %[[C]] : index
// CHECK:       scf.if %[[INCACHE]] -> (f32) {
// CHECK:         tensor.extract %[[KC]][%[[B]], %[[H]], %[[R]], %[[E]]]
// CHECK:       } else {
// CHECK:         %[[POS:[^ ]+]] = arith.subi %[[R]], %[[C]] : index
// CHECK:         tensor.extract %[[K]][%[[B]], %[[H]], %[[POS]], %[[E]]]
// CHECK:     %[[SCALED:[^ ]+]] = arith.mulf %[[SCALE]], %{{.+}} : f32
// CHECK:     %[[PC:[^ ]+]] = arith.addi %[[P]], %[[C]] : index
// CHECK:     %[[DELTA:[^ ]+]] = arith.subi %[[PC]], %[[R]] : index
// CHECK:     %[[EXACT:[^ ]+]] = arith.constant 16 : index
// CHECK:     %[[N:[^ ]+]] = arith.maxsi %[[DELTA]], %{{.+}} : index
// CHECK:     %[[ISEXACT:[^ ]+]] = arith.cmpi slt, %[[N]], %[[EXACT]] : index
// CHECK:     %[[NL:[^ ]+]] = arith.maxsi %[[N]], %[[EXACT]] : index
// CHECK:     arith.constant 1.600000e+01 : f64
// CHECK:     %[[NI:[^ ]+]] = arith.index_cast %[[NL]] : index to i64
// CHECK:     %[[NF:[^ ]+]] = arith.sitofp %[[NI]] : i64 to f64
// CHECK:     %[[RATIO:[^ ]+]] = arith.divf %[[NF]], %{{.+}} : f64
// CHECK:     arith.constant 1.280000e+02 : f64
// CHECK:     %[[RANGE:[^ ]+]] = arith.divf
// CHECK:     %[[LOGN:[^ ]+]] = math.log %[[RATIO]] : f64
// CHECK:     %[[LOGR:[^ ]+]] = math.log %[[RANGE]] : f64
// CHECK:     %[[FRAC:[^ ]+]] = arith.divf %[[LOGN]], %[[LOGR]] : f64
// CHECK:     %[[SC:[^ ]+]] = arith.mulf %[[FRAC]], %{{.+}} : f64
// CHECK:     %[[OFF:[^ ]+]] = arith.fptosi %[[SC]] : f64 to i64
// CHECK:     %[[OFFI:[^ ]+]] = arith.index_cast %[[OFF]] : i64 to index
// CHECK:     %[[LB:[^ ]+]] = arith.addi %[[EXACT]], %[[OFFI]] : index
// CHECK:     %[[LASTB:[^ ]+]] = arith.constant 31 : index
// CHECK:     %[[CLAMPED:[^ ]+]] = arith.minsi %[[LB]], %[[LASTB]] : index
// CHECK:     %[[BUCKET:[^ ]+]] = arith.select %[[ISEXACT]], %[[N]], %[[CLAMPED]] : index
// CHECK:     %[[BIAS:[^ ]+]] = tensor.extract %[[TAB]][%[[H]], %[[BUCKET]]] : tensor<2x32xf32>
// CHECK:     %[[LOGIT:[^ ]+]] = arith.addf %[[SCALED]], %[[BIAS]] : f32
// CHECK:     arith.maximumf %{{.+}}, %[[LOGIT]] : f32
// CHECK:   scf.for %[[R2:[^ ]+]] = %[[BEGIN]] to %[[END]]
// CHECK:     math.exp
// CHECK:     scf.for %[[J:[^ ]+]] =
// CHECK:       %[[INCACHE2:[^ ]+]] = arith.cmpi slt, %[[R2]], %[[C]] : index
// CHECK:       scf.if %[[INCACHE2]] -> (f32) {
// CHECK:         tensor.extract %[[VC]][%[[B]], %[[H]], %[[R2]], %[[J]]]
// CHECK:       } else {
// CHECK:         tensor.extract %[[V]][%[[B]], %[[H]], %{{.+}}, %[[J]]]
func.func @window_block_t5_cache(%q: tensor<1x2x6x4xf32>,
                                 %k: tensor<1x2x6x4xf32>,
                                 %v: tensor<1x2x6x3xf32>,
                                 %table: tensor<2x32xf32>,
                                 %kc: tensor<1x2x5x4xf32>,
                                 %vc: tensor<1x2x5x3xf32>)
    -> tensor<1x2x6x3xf32> {
  %o = recur.window_attention %q, %k, %v bias(%table : tensor<2x32xf32>)
      cache(%kc, %vc : tensor<1x2x5x4xf32>, tensor<1x2x5x3xf32>)
      window 4 {block = 2 : i64, bias_kind = #recur.bias<t5>}
      : tensor<1x2x6x4xf32>, tensor<1x2x6x4xf32>, tensor<1x2x6x3xf32>
  return %o : tensor<1x2x6x3xf32>
}
