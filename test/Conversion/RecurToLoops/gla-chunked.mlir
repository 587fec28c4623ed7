// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// The chunked algorithm with chunks of 16 steps and a dynamic T, real
// decays. Per leading index the state starts at zero, then a loop over the
// chunk starts with step 16 threads y and the state; each chunk has
// len = min(16, T - start) steps and its own scratch tensors (created in the
// chunk loop, so the iterations over the leading index share none):
// - the log prefix of every key index i, rows 0 .. len of [17, 3] tensors:
//   the sum of log|a| in f64 (a extended from f32), the sign of the product
//   and the count of exact zeros, a zero restarting the sum and the sign;
// - qd = q * decay(0, m + 1) and kd = k * decay(r + 1, len) ([16, 3]), each
//   decay 0 across a zero and otherwise sign * exp of the difference of two
//   f64 sums rounded to f32;
// - the scores A[m, r], r <= m ([16, 16]), a sum over the key index;
// - y[start + m, j] = sum_{r <= m} A[m, r] v[r, j] + sum_i qd[m, i] S[i, j];
// - S[i, j] = decay(0, len) S[i, j] + sum_r kd[r, i] v[r, j] in place.

// CHECK-LABEL: func.func @gla_chunked_real
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x?x3xf32>, %[[K:[^ ]+]]: tensor<2x?x3xf32>, %[[V:[^ ]+]]: tensor<2x?x4xf32>, %[[A:[^ ]+]]: tensor<2x?x3xf32>)
// CHECK: %[[T:[^ ]+]] = tensor.dim %[[Q]], %{{.+}} : tensor<2x?x3xf32>
// CHECK: scf.for %[[N:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[YS:[^ ]+]] = %{{.+}}, %{{.+}} = %{{.+}})
// CHECK:   %[[ZS:[^ ]+]] = scf.for
// CHECK:       arith.constant 0.000000e+00 : f32
// CHECK:   %[[C16:[^ ]+]] = arith.constant 16 : index
// CHECK:   scf.for %[[START:[^ ]+]] = %{{.+}} to %[[T]] step %[[C16]] iter_args(%[[YC:[^ ]+]] = %[[YS]], %[[SC:[^ ]+]] = %[[ZS]])
// CHECK:     %[[REST:[^ ]+]] = arith.subi %[[T]], %[[START]] : index
// CHECK:     %[[LEN:[^ ]+]] = arith.minsi %{{.+}}, %[[REST]] : index
// CHECK:     %[[LOGE:[^ ]+]] = tensor.empty() : tensor<17x3xf64>
// CHECK:     %[[SIGNE:[^ ]+]] = tensor.empty() : tensor<17x3xf32>
// CHECK:     %[[ZE:[^ ]+]] = tensor.empty() : tensor<17x3xi64>
// CHECK:     %[[P:[^ ]+]]:3 = scf.for %[[I:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[LOGE]], %{{.+}} = %[[SIGNE]], %{{.+}} = %[[ZE]])
// CHECK:       scf.for %[[M:[^ ]+]] = %{{.+}} to %[[LEN]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}, %[[LOG:[^ ]+]] = %{{.+}}, %[[SIGN:[^ ]+]] = %{{.+}}, %[[ZC:[^ ]+]] = %{{.+}})
// CHECK:         %[[TM:[^ ]+]] = arith.addi %[[START]], %[[M]] : index
// CHECK:         %[[AM:[^ ]+]] = tensor.extract %[[A]][%[[N]], %[[TM]], %[[I]]]
// CHECK:         %[[ISZERO:[^ ]+]] = arith.cmpf oeq, %[[AM]], %{{.+}} : f32
// CHECK:         %[[NEG:[^ ]+]] = arith.cmpf olt, %[[AM]], %{{.+}} : f32
// CHECK:         %[[AM64:[^ ]+]] = arith.extf %[[AM]] : f32 to f64
// CHECK:         %[[ABS:[^ ]+]] = math.absf %[[AM64]] : f64
// CHECK:         %[[FLIP:[^ ]+]] = arith.negf %[[SIGN]] : f32
// CHECK:         %[[NSIGN:[^ ]+]] = arith.select %[[NEG]], %[[FLIP]], %[[SIGN]] : f32
// CHECK:         %[[LOGA:[^ ]+]] = math.log %[[ABS]] : f64
// CHECK:         %[[SUM:[^ ]+]] = arith.addf %[[LOG]], %[[LOGA]] : f64
// CHECK:         %[[COUNT:[^ ]+]] = arith.extui %[[ISZERO]] : i1 to i64
// CHECK:         %[[NLOG:[^ ]+]] = arith.select %[[ISZERO]], %{{.+}}, %[[SUM]] : f64
// CHECK:         %[[RSIGN:[^ ]+]] = arith.select %[[ISZERO]], %{{.+}}, %[[NSIGN]] : f32
// CHECK:         %[[NZ:[^ ]+]] = arith.addi %[[ZC]], %[[COUNT]] : i64
// CHECK:         %[[ROW:[^ ]+]] = arith.addi %[[M]], %{{.+}} : index
// CHECK:         tensor.insert %[[NLOG]] into %{{.+}}[%[[ROW]], %[[I]]] : tensor<17x3xf64>
// CHECK:         tensor.insert %[[RSIGN]] into %{{.+}}[%[[ROW]], %[[I]]] : tensor<17x3xf32>
// CHECK:         tensor.insert %[[NZ]] into %{{.+}}[%[[ROW]], %[[I]]] : tensor<17x3xi64>
// CHECK:     %[[QDE:[^ ]+]] = tensor.empty() : tensor<16x3xf32>
// CHECK:     %[[QD:[^ ]+]] = scf.for %[[QM:[^ ]+]] = %{{.+}} to %[[LEN]] step %{{.+}} iter_args(%{{.+}} = %[[QDE]])
// CHECK:       %[[QTO:[^ ]+]] = arith.addi %[[QM]], %{{.+}} : index
// CHECK:       scf.for %[[QI:[^ ]+]] =
// CHECK:         %[[QT:[^ ]+]] = tensor.extract %[[Q]][%[[N]], %{{.+}}, %[[QI]]]
// CHECK:         %[[ZTO:[^ ]+]] = tensor.extract %[[P]]#2[%[[QTO]], %[[QI]]]
// CHECK:         %[[ZFROM:[^ ]+]] = tensor.extract %[[P]]#2[%{{.+}}, %[[QI]]]
// CHECK:         %[[SAME:[^ ]+]] = arith.cmpi eq, %[[ZTO]], %[[ZFROM]] : i64
// CHECK:         %[[LTO:[^ ]+]] = tensor.extract %[[P]]#0[%[[QTO]], %[[QI]]]
// CHECK:         %[[LFROM:[^ ]+]] = tensor.extract %[[P]]#0[%{{.+}}, %[[QI]]]
// CHECK:         %[[DIFF:[^ ]+]] = arith.subf %[[LTO]], %[[LFROM]] : f64
// CHECK:         %[[DIFF32:[^ ]+]] = arith.truncf %[[DIFF]] : f64 to f32
// CHECK:         %[[EXP:[^ ]+]] = math.exp %[[DIFF32]] : f32
// CHECK:         %[[MAG:[^ ]+]] = arith.select %[[SAME]], %[[EXP]], %{{.+}} : f32
// CHECK:         %[[STO:[^ ]+]] = tensor.extract %[[P]]#1[%[[QTO]], %[[QI]]]
// CHECK:         %[[SFROM:[^ ]+]] = tensor.extract %[[P]]#1[%{{.+}}, %[[QI]]]
// CHECK:         %[[SGN:[^ ]+]] = arith.mulf %[[STO]], %[[SFROM]] : f32
// CHECK:         %[[DECAY:[^ ]+]] = arith.mulf %[[SGN]], %[[MAG]] : f32
// CHECK:         %[[QDV:[^ ]+]] = arith.mulf %[[QT]], %[[DECAY]] : f32
// CHECK:         tensor.insert %[[QDV]] into %{{.+}}[%[[QM]], %[[QI]]] : tensor<16x3xf32>
// CHECK:     %[[KDE:[^ ]+]] = tensor.empty() : tensor<16x3xf32>
// CHECK:     %[[KD:[^ ]+]] = scf.for %[[KR:[^ ]+]] = %{{.+}} to %[[LEN]] step %{{.+}} iter_args(%{{.+}} = %[[KDE]])
// CHECK:       %[[KFROM:[^ ]+]] = arith.addi %[[KR]], %{{.+}} : index
// CHECK:       scf.for %[[KI:[^ ]+]] =
// CHECK:         tensor.extract %[[K]][%[[N]], %{{.+}}, %[[KI]]]
// CHECK:         tensor.extract %[[P]]#2[%[[LEN]], %[[KI]]]
// CHECK:         tensor.extract %[[P]]#2[%[[KFROM]], %[[KI]]]
// CHECK:         math.exp
// CHECK:         tensor.insert %{{.+}} into %{{.+}}[%[[KR]], %[[KI]]] : tensor<16x3xf32>
// CHECK:     %[[AE:[^ ]+]] = tensor.empty() : tensor<16x16xf32>
// CHECK:     %[[SCORES:[^ ]+]] = scf.for %[[SM:[^ ]+]] = %{{.+}} to %[[LEN]] step %{{.+}} iter_args(%{{.+}} = %[[AE]])
// CHECK:       %[[SEEN:[^ ]+]] = arith.addi %[[SM]], %{{.+}} : index
// CHECK:       scf.for %[[SR:[^ ]+]] = %{{.+}} to %[[SEEN]] step
// CHECK:         %[[SRFROM:[^ ]+]] = arith.addi %[[SR]], %{{.+}} : index
// CHECK:         %[[DOT:[^ ]+]] = scf.for %[[SI:[^ ]+]] = {{.+}} -> (f32)
// CHECK:           tensor.extract %[[Q]]
// CHECK:           tensor.extract %[[K]]
// CHECK:           tensor.extract %[[P]]#2[%[[SEEN]], %[[SI]]]
// CHECK:           tensor.extract %[[P]]#2[%[[SRFROM]], %[[SI]]]
// CHECK:           math.exp
// CHECK:         tensor.insert %[[DOT]] into %{{.+}}[%[[SM]], %[[SR]]] : tensor<16x16xf32>
// CHECK:     %[[YN:[^ ]+]] = scf.for %[[YM:[^ ]+]] = %{{.+}} to %[[LEN]] step %{{.+}} iter_args(%{{.+}} = %[[YC]])
// CHECK:       %[[TY:[^ ]+]] = arith.addi %[[START]], %[[YM]] : index
// CHECK:       %[[YSEEN:[^ ]+]] = arith.addi %[[YM]], %{{.+}} : index
// CHECK:       scf.for %[[YJ:[^ ]+]] =
// CHECK:         %[[INTRA:[^ ]+]] = scf.for %{{.+}} = %{{.+}} to %[[YSEEN]] step
// CHECK:           tensor.extract %[[SCORES]][%[[YM]], %{{.+}}]
// CHECK:           tensor.extract %[[V]][%[[N]], %{{.+}}, %[[YJ]]]
// CHECK:         %[[INTER:[^ ]+]] = scf.for %[[YI:[^ ]+]] =
// CHECK:           tensor.extract %[[QD]][%[[YM]], %[[YI]]]
// CHECK:           tensor.extract %[[SC]][%[[N]], %[[YI]], %[[YJ]]]
// CHECK:         %[[YV:[^ ]+]] = arith.addf %[[INTRA]], %[[INTER]] : f32
// CHECK:         tensor.insert %[[YV]] into %{{.+}}[%[[N]], %[[TY]], %[[YJ]]]
// CHECK:     %[[SN:[^ ]+]] = scf.for %[[UI:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[SC]])
// CHECK:       tensor.extract %[[P]]#2[%[[LEN]], %[[UI]]]
// CHECK:       math.exp
// CHECK:       %[[USGN:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK:       %[[TOTAL:[^ ]+]] = arith.mulf %[[USGN]], %{{.+}} : f32
// CHECK:       scf.for %[[UJ:[^ ]+]] = {{.+}} iter_args(%[[ST:[^ ]+]] = %{{.+}})
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %[[ST]][%[[N]], %[[UI]], %[[UJ]]]
// CHECK:         %[[KV:[^ ]+]] = scf.for %[[UR:[^ ]+]] = %{{.+}} to %[[LEN]] step
// CHECK:           tensor.extract %[[KD]][%[[UR]], %[[UI]]]
// CHECK:         %[[KEPT:[^ ]+]] = arith.mulf %[[TOTAL]], %[[OLD]] : f32
// CHECK:         %[[NEW:[^ ]+]] = arith.addf %[[KEPT]], %[[KV]] : f32
// CHECK:         tensor.insert %[[NEW]] into %[[ST]][%[[N]], %[[UI]], %[[UJ]]]
// CHECK:     scf.yield %[[YN]], %[[SN]]
func.func @gla_chunked_real(%q: tensor<2x?x3xf32>, %k: tensor<2x?x3xf32>,
                            %v: tensor<2x?x4xf32>, %a: tensor<2x?x3xf32>)
    -> (tensor<2x?x4xf32>, tensor<2x3x4xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<chunked>, chunk_size = 16 : i64}
      : tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x4xf32>,
        tensor<2x?x3xf32>
  return %y, %s : tensor<2x?x4xf32>, tensor<2x3x4xf32>
}

// -----

// `chunked` without a chunk size takes chunks of 64 steps; T = 5 is static
// and shorter, so the scratch tensors have 5 (+ 1) rows. A
// complex decay: its zero test looks at both parts, and the prefix sums
// log|a| and arg a in f64; a decay is exp(log sum) (cos + i sin)(arg sum),
// of which the scores take only the real part. y reads Re(qd S) and the
// state is updated with complex products, starting from `init`.

// CHECK-LABEL: func.func @gla_chunked_complex
// CHECK-SAME: %[[A:[^ ]+]]: tensor<1x5x3xcomplex<f32>>, %[[S0:[^ ]+]]: tensor<1x3x2xcomplex<f32>>
// CHECK: scf.for %[[N:[^ ]+]] =
// CHECK:       tensor.extract %[[S0]][%[[N]], %{{.+}}, %{{.+}}]
// CHECK:   %[[C64:[^ ]+]] = arith.constant 64 : index
// CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %[[C64]] iter_args
// CHECK:     tensor.empty() : tensor<6x3xf64>
// CHECK:     tensor.empty() : tensor<6x3xf64>
// CHECK:     tensor.empty() : tensor<6x3xi64>
// CHECK:         %[[AM:[^ ]+]] = tensor.extract %[[A]][%[[N]], %{{.+}}, %{{.+}}] : tensor<1x5x3xcomplex<f32>>
// CHECK:         %[[RE:[^ ]+]] = complex.re %[[AM]] : complex<f32>
// CHECK:         %[[RE64:[^ ]+]] = arith.extf %[[RE]] : f32 to f64
// CHECK:         %[[IM:[^ ]+]] = complex.im %[[AM]] : complex<f32>
// CHECK:         %[[IM64:[^ ]+]] = arith.extf %[[IM]] : f32 to f64
// CHECK:         %[[RE0:[^ ]+]] = arith.cmpf oeq, %[[RE64]], %{{.+}} : f64
// CHECK:         %[[IM0:[^ ]+]] = arith.cmpf oeq, %[[IM64]], %{{.+}} : f64
// CHECK:         %[[ISZERO:[^ ]+]] = arith.andi %[[RE0]], %[[IM0]] : i1
// CHECK:         %[[A64:[^ ]+]] = complex.create %[[RE64]], %[[IM64]] : complex<f64>
// CHECK:         %[[ABS:[^ ]+]] = complex.abs %[[A64]] : complex<f64>
// CHECK:         %[[ARG:[^ ]+]] = math.atan2 %[[IM64]], %[[RE64]] : f64
// CHECK:         %[[PHASE:[^ ]+]] = arith.addf %{{.+}}, %[[ARG]] : f64
// CHECK:         %[[LOGA:[^ ]+]] = math.log %[[ABS]] : f64
// CHECK:         arith.select %[[ISZERO]], %{{.+}}, %[[PHASE]] : f64
// CHECK:     tensor.empty() : tensor<5x3xcomplex<f32>>
// CHECK:         math.exp %{{.+}} : f32
// CHECK:         %[[DPH:[^ ]+]] = arith.subf %{{.+}}, %{{.+}} : f64
// CHECK:         %[[DPH32:[^ ]+]] = arith.truncf %[[DPH]] : f64 to f32
// CHECK:         math.cos %[[DPH32]] : f32
// CHECK:         math.sin %[[DPH32]] : f32
// CHECK:         complex.create %{{.+}}, %{{.+}} : complex<f32>
// CHECK:     tensor.empty() : tensor<5x3xcomplex<f32>>
// CHECK:     tensor.empty() : tensor<5x5xf32>
// CHECK-NOT: math.sin
// CHECK:           math.cos %{{.+}} : f32
// CHECK-NOT: math.sin
// CHECK:         tensor.insert %{{.+}} : tensor<5x5xf32>
// CHECK:           %[[QDS:[^ ]+]] = tensor.extract %{{.+}} : tensor<5x3xcomplex<f32>>
// CHECK:           %[[SIJ:[^ ]+]] = tensor.extract %{{.+}} : tensor<1x3x2xcomplex<f32>>
// CHECK:           %[[QRE:[^ ]+]] = complex.re %[[QDS]] : complex<f32>
// CHECK:           %[[SRE:[^ ]+]] = complex.re %[[SIJ]] : complex<f32>
// CHECK:           %[[RR:[^ ]+]] = arith.mulf %[[QRE]], %[[SRE]] : f32
// CHECK:           %[[QIM:[^ ]+]] = complex.im %[[QDS]] : complex<f32>
// CHECK:           %[[SIM:[^ ]+]] = complex.im %[[SIJ]] : complex<f32>
// CHECK:           %[[II:[^ ]+]] = arith.mulf %[[QIM]], %[[SIM]] : f32
// CHECK:           arith.subf %[[RR]], %[[II]] : f32
// CHECK:         tensor.insert %{{.+}} : tensor<1x5x2xf32>
// CHECK:       %[[TOTAL:[^ ]+]] = complex.create %{{.+}}, %{{.+}} : complex<f32>
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %{{.+}} : tensor<1x3x2xcomplex<f32>>
// CHECK:         %[[KV:[^ ]+]] = scf.for {{.+}} -> (complex<f32>)
// CHECK:         %[[KEPT:[^ ]+]] = complex.mul %[[TOTAL]], %[[OLD]] : complex<f32>
// CHECK:         %[[NEW:[^ ]+]] = complex.add %[[KEPT]], %[[KV]] : complex<f32>
// CHECK:         tensor.insert %[[NEW]] into %{{.+}} : tensor<1x3x2xcomplex<f32>>
func.func @gla_chunked_complex(%q: tensor<1x5x3xf32>, %k: tensor<1x5x3xf32>,
                               %v: tensor<1x5x2xf32>,
                               %a: tensor<1x5x3xcomplex<f32>>,
                               %s0: tensor<1x3x2xcomplex<f32>>)
    -> (tensor<1x5x2xf32>, tensor<1x3x2xcomplex<f32>>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      init(%s0 : tensor<1x3x2xcomplex<f32>>)
      {algorithm = #recur.algorithm<chunked>}
      : tensor<1x5x3xf32>, tensor<1x5x3xf32>, tensor<1x5x2xf32>,
        tensor<1x5x3xcomplex<f32>>
  return %y, %s : tensor<1x5x2xf32>, tensor<1x3x2xcomplex<f32>>
}

// -----

// `auto` (on a vector state, dv = 1, or a matrix state) and `recurrent`
// keep the recurrent loop: one step at a time, no chunk, no log or exp.

// CHECK-LABEL: func.func @gla_auto_vector_state
// CHECK-NOT: math.
// CHECK-NOT: arith.minsi
// CHECK: %[[KV:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: %[[DEC:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: arith.addf %[[DEC]], %[[KV]] : f64
// CHECK-NOT: math.
// CHECK: return
func.func @gla_auto_vector_state(%q: tensor<2x9x3xf64>, %k: tensor<2x9x3xf64>,
                                 %v: tensor<2x9x1xf64>, %a: tensor<2x9x3xf64>)
    -> (tensor<2x9x1xf64>, tensor<2x3x1xf64>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      : tensor<2x9x3xf64>, tensor<2x9x3xf64>, tensor<2x9x1xf64>,
        tensor<2x9x3xf64>
  return %y, %s : tensor<2x9x1xf64>, tensor<2x3x1xf64>
}

// CHECK-LABEL: func.func @gla_recurrent_matrix_state
// CHECK-NOT: math.
// CHECK-NOT: arith.minsi
// CHECK: %[[KV:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: %[[DEC:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: arith.addf %[[DEC]], %[[KV]] : f64
// CHECK-NOT: math.
// CHECK: return
func.func @gla_recurrent_matrix_state(%q: tensor<2x9x3xf64>,
                                      %k: tensor<2x9x3xf64>,
                                      %v: tensor<2x9x4xf64>,
                                      %a: tensor<2x9x3xf64>)
    -> (tensor<2x9x4xf64>, tensor<2x3x4xf64>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<2x9x3xf64>, tensor<2x9x3xf64>, tensor<2x9x4xf64>,
        tensor<2x9x3xf64>
  return %y, %s : tensor<2x9x4xf64>, tensor<2x3x4xf64>
}

// CHECK-LABEL: func.func @gla_auto_matrix_state
// CHECK-NOT: math.
// CHECK-NOT: arith.minsi
// CHECK: %[[KV:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: %[[DEC:[^ ]+]] = arith.mulf %{{.+}}, %{{.+}} : f64
// CHECK: arith.addf %[[DEC]], %[[KV]] : f64
// CHECK-NOT: math.
// CHECK: return
func.func @gla_auto_matrix_state(%q: tensor<2x9x3xf64>, %k: tensor<2x9x3xf64>,
                                 %v: tensor<2x9x4xf64>, %a: tensor<2x9x3xf64>)
    -> (tensor<2x9x4xf64>, tensor<2x3x4xf64>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      : tensor<2x9x3xf64>, tensor<2x9x3xf64>, tensor<2x9x4xf64>,
        tensor<2x9x3xf64>
  return %y, %s : tensor<2x9x4xf64>, tensor<2x3x4xf64>
}
