// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.
// RUN: recur-opt %s --convert-recur-to-loops=window-tiles=true --split-input-file | FileCheck %s --check-prefix=TILES --implicit-check-not=recur.

// Token band with include_self over a dynamic T: query p sees the keys at
// p - 2 .. p (window 3), clamped at 0. The keys are first copied transposed
// (K^T [h, e, r]); per query the row is zeroed, the logits of its keys are
// accumulated into a scratch row four channels e at a time over consecutive
// keys (each logit summing its channels in order), scaled, and the ALiBi
// bias -slope[h] * (p - p') added; then the largest logit, exp(logit - max)
// in place of the logits with their sum (reassociable, so that the loop
// vectorizes with its exp), the weighted value rows, and the
// row divided by the sum only when some key was seen.

// CHECK-LABEL: func.func @window_token_alibi
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x?x4xf32>, %[[K:[^ ]+]]: tensor<2x?x4xf32>, %[[V:[^ ]+]]: tensor<2x?x3xf32>, %[[SL:[^ ]+]]: tensor<2xf32>)
// CHECK-DAG: %[[T:[^ ]+]] = tensor.dim %[[Q]], %{{.+}} : tensor<2x?x4xf32>
// CHECK-DAG: %[[C:[^ ]+]] = arith.constant 0 : index
// CHECK-DAG: %[[SCALE:[^ ]+]] = arith.constant 2.500000e-01 : f32
// CHECK: %[[KT:[^ ]+]] = scf.for %[[H0:[^ ]+]] =
// CHECK:   scf.for %[[R0:[^ ]+]] =
// CHECK:     scf.for %[[E0:[^ ]+]] =
// CHECK:       %[[KE0:[^ ]+]] = tensor.extract %[[K]][%[[H0]], %[[R0]], %[[E0]]]
// CHECK:       tensor.insert %[[KE0]] into %{{.+}}[%[[H0]], %[[E0]], %[[R0]]] : tensor<2x4x?xf32>
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
// CHECK:     %[[COUNT:[^ ]+]] = arith.subi %[[END]], %[[BEGIN]] : index
// CHECK:     %[[SCRATCH:[^ ]+]] = bufferization.alloc_tensor(%{{.+}}) : tensor<?xf32>
// CHECK:     %[[CLEARED:[^ ]+]] = scf.for {{.+}} iter_args(%{{.+}} = %[[SCRATCH]])
// Four channels a pass over the row (channels 4g .. 4g+3 added in order),
// then the rest one at a time.
// CHECK:     %[[FOURD:[^ ]+]] = arith.constant 4 : index
// CHECK:     %[[PASSES:[^ ]+]] = arith.divui %{{.+}}, %[[FOURD]] : index
// CHECK:     %[[DOTS4:[^ ]+]] = scf.for %[[G:[^ ]+]] = %{{.+}} to %[[PASSES]] {{.+}} iter_args(%{{.+}} = %[[CLEARED]])
// CHECK:       %[[EA:[^ ]+]] = arith.muli %[[G]], %[[FOURD]] : index
// CHECK:       %[[EB:[^ ]+]] = arith.addi %[[EA]], %{{.+}} : index
// CHECK:       %[[EC:[^ ]+]] = arith.addi %[[EA]], %{{.+}} : index
// CHECK:       %[[ED:[^ ]+]] = arith.addi %[[EA]], %{{.+}} : index
// CHECK:       %[[QA:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[P]], %[[EA]]]
// CHECK:       %[[QB:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[P]], %[[EB]]]
// CHECK:       %[[QC:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[P]], %[[EC]]]
// CHECK:       %[[QD:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[P]], %[[ED]]]
// CHECK:       scf.for %[[I:[^ ]+]] =
// CHECK:         %[[ACC0:[^ ]+]] = tensor.extract %{{.+}}[%[[I]]] : tensor<?xf32>
// CHECK:         %[[R:[^ ]+]] = arith.addi %[[BEGIN]], %[[I]] : index
// CHECK:         %[[KA:[^ ]+]] = tensor.extract %[[KT]][%[[H]], %[[EA]], %[[R]]]
// CHECK:         %[[PA:[^ ]+]] = arith.mulf %[[QA]], %[[KA]] : f32
// CHECK:         %[[SA:[^ ]+]] = arith.addf %[[ACC0]], %[[PA]] : f32
// CHECK:         %[[KB:[^ ]+]] = tensor.extract %[[KT]][%[[H]], %[[EB]], %[[R]]]
// CHECK:         %[[PB:[^ ]+]] = arith.mulf %[[QB]], %[[KB]] : f32
// CHECK:         %[[SB:[^ ]+]] = arith.addf %[[SA]], %[[PB]] : f32
// CHECK:         %[[KC:[^ ]+]] = tensor.extract %[[KT]][%[[H]], %[[EC]], %[[R]]]
// CHECK:         %[[PC3:[^ ]+]] = arith.mulf %[[QC]], %[[KC]] : f32
// CHECK:         %[[SC:[^ ]+]] = arith.addf %[[SB]], %[[PC3]] : f32
// CHECK:         %[[KD:[^ ]+]] = tensor.extract %[[KT]][%[[H]], %[[ED]], %[[R]]]
// CHECK:         %[[PD:[^ ]+]] = arith.mulf %[[QD]], %[[KD]] : f32
// CHECK:         %[[SD:[^ ]+]] = arith.addf %[[SC]], %[[PD]] : f32
// CHECK:         tensor.insert %[[SD]] into %{{.+}}[%[[I]]]
// CHECK:     %[[REST:[^ ]+]] = arith.muli %[[PASSES]], %[[FOURD]] : index
// CHECK:     %[[DOTS:[^ ]+]] = scf.for %[[E:[^ ]+]] = %[[REST]] to %{{.+}} {{.+}} iter_args(%{{.+}} = %[[DOTS4]])
// CHECK:       %[[QE:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[P]], %[[E]]]
// CHECK:       scf.for %[[I1:[^ ]+]] =
// CHECK:         %[[ACC1:[^ ]+]] = tensor.extract %{{.+}}[%[[I1]]] : tensor<?xf32>
// CHECK:         %[[R1:[^ ]+]] = arith.addi %[[BEGIN]], %[[I1]] : index
// CHECK:         %[[KE:[^ ]+]] = tensor.extract %[[KT]][%[[H]], %[[E]], %[[R1]]]
// CHECK:         %[[PROD:[^ ]+]] = arith.mulf %[[QE]], %[[KE]] : f32
// CHECK:         arith.addf %[[ACC1]], %[[PROD]] : f32
// CHECK:     %[[LOGITS:[^ ]+]] = scf.for %[[I2:[^ ]+]] = {{.+}} iter_args(%{{.+}} = %[[DOTS]])
// CHECK:       %[[SCALED:[^ ]+]] = arith.mulf %[[SCALE]], %{{.+}} : f32
// CHECK:       %[[R2:[^ ]+]] = arith.addi %[[BEGIN]], %[[I2]] : index
// CHECK:       %[[PC:[^ ]+]] = arith.addi %[[P]], %[[C]] : index
// CHECK:       %[[DELTA:[^ ]+]] = arith.subi %[[PC]], %[[R2]] : index
// CHECK:       %[[SLOPE:[^ ]+]] = tensor.extract %[[SL]][%[[H]]] : tensor<2xf32>
// CHECK:       %[[NEG:[^ ]+]] = arith.negf %[[SLOPE]] : f32
// CHECK:       %[[DI:[^ ]+]] = arith.index_cast %[[DELTA]] : index to i64
// CHECK:       %[[DF:[^ ]+]] = arith.sitofp %[[DI]] : i64 to f32
// CHECK:       %[[BIAS:[^ ]+]] = arith.mulf %[[NEG]], %[[DF]] : f32
// CHECK:       arith.addf %[[SCALED]], %[[BIAS]] : f32
// CHECK:     %[[NEGINF:[^ ]+]] = arith.constant 0xFF800000 : f32
// CHECK:     %[[MAX:[^ ]+]] = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] {{.+}} iter_args(%[[M:[^ ]+]] = %[[NEGINF]]) -> (f32)
// CHECK:       %[[L:[^ ]+]] = tensor.extract %[[LOGITS]]
// CHECK:       arith.maximumf %[[M]], %[[L]] : f32
// CHECK:     %[[WS:[^ ]+]]:2 = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] {{.+}} iter_args(%{{.+}} = %[[LOGITS]], %[[SUM:[^ ]+]] = %{{.+}})
// CHECK:       %[[SH:[^ ]+]] = arith.subf %{{.+}}, %[[MAX]] : f32
// CHECK:       %[[W:[^ ]+]] = math.exp %[[SH]] : f32
// CHECK:       arith.addf %[[SUM]], %[[W]] fastmath<reassoc> : f32
// CHECK:       tensor.insert %[[W]]
// The weighted value rows likewise, four keys a pass over the output row.
// CHECK:     %[[FOURK:[^ ]+]] = arith.constant 4 : index
// CHECK:     %[[KPASSES:[^ ]+]] = arith.divui %[[COUNT]], %[[FOURK]] : index
// CHECK:     %[[ACC4:[^ ]+]] = scf.for %[[G2:[^ ]+]] = %{{.+}} to %[[KPASSES]] {{.+}} iter_args(%{{.+}} = %[[ZEROED]])
// CHECK:       %[[I4:[^ ]+]] = arith.muli %[[G2]], %[[FOURK]] : index
// CHECK-COUNT-4: tensor.extract %[[WS]]#0
// CHECK:       scf.for %[[J4:[^ ]+]] =
// CHECK:         %[[OLD4:[^ ]+]] = tensor.extract %{{.+}}[%[[H]], %[[P]], %[[J4]]]
// CHECK:         %[[V4:[^ ]+]] = tensor.extract %[[V]][%[[H]], %{{.+}}, %[[J4]]]
// CHECK:         %[[WV4:[^ ]+]] = arith.mulf %{{.+}}, %[[V4]] : f32
// CHECK:         arith.addf %[[OLD4]], %[[WV4]] : f32
// CHECK-COUNT-3: arith.addf
// CHECK:         tensor.insert
// CHECK:     %[[KREST:[^ ]+]] = arith.muli %[[KPASSES]], %[[FOURK]] : index
// CHECK:     %[[ACC:[^ ]+]] = scf.for %[[I3:[^ ]+]] = %[[KREST]] to %[[COUNT]] {{.+}} iter_args(%{{.+}} = %[[ACC4]])
// CHECK:       %[[R3:[^ ]+]] = arith.addi %[[BEGIN]], %[[I3]] : index
// CHECK:       %[[WI:[^ ]+]] = tensor.extract %[[WS]]#0[%[[I3]]]
// CHECK:       scf.for %[[J:[^ ]+]] =
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %{{.+}}[%[[H]], %[[P]], %[[J]]]
// CHECK:         %[[VJ:[^ ]+]] = tensor.extract %[[V]][%[[H]], %[[R3]], %[[J]]]
// CHECK:         %[[WV:[^ ]+]] = arith.mulf %[[WI]], %[[VJ]] : f32
// CHECK:         arith.addf %[[OLD]], %[[WV]] : f32
// CHECK:     %[[SEEN:[^ ]+]] = arith.cmpf ogt, %[[WS]]#1, %{{.+}} : f32
// CHECK:     scf.if %[[SEEN]] -> (tensor<2x?x3xf32>)
// CHECK:       scf.for
// CHECK:         arith.divf %{{.+}}, %[[WS]]#1 : f32
// CHECK:     } else {
// CHECK:       scf.yield %[[ACC]]
// With window-tiles (the CPU pipeline's form), the forward goes as
// window_attention_grad does: the keys transposed in panels of 8 keys at
// each channel ([n, C + T padded / 8, e, 8]) and the values as rows ([n, e,
// C + T padded]), padded to whole vectors of 8 keys and one more cache line;
// per leading index the ALiBi bias of each distance 0 .. 3 once; tiles of 16
// queries over the union of their bands (at most ceil((3 + 16 + 16) / 8) *
// 8 = 40 keys): the tile's rows of q, S = Q K^T in register blocks of 4
// rows x 3 vectors of keys over the channels, read from the panels, the
// softmax of each row over its band (scaled logit plus the bias of its
// distance), then O = P V in blocks of rows x channels over the vectors of
// keys, summed across the lanes, into the tile's rows.
// TILES-LABEL: func.func @window_token_alibi
// TILES-SAME: (%[[Q:[^:]+]]: tensor<2x?x4xf32>, %[[K:[^:]+]]: tensor<2x?x4xf32>, %[[V:[^:]+]]: tensor<2x?x3xf32>, %[[SL:[^:]+]]: tensor<2xf32>)
// TILES:       scf.for {{.+}} -> (tensor<2x?x4x8xf32>)
// TILES:         tensor.extract %[[K]]
// TILES:       %[[KP:.+]] = scf.for {{.+}} -> (tensor<2x?x4x8xf32>)
// TILES:       scf.for {{.+}} -> (tensor<2x3x?xf32>)
// TILES:         tensor.extract %[[V]]
// TILES:       scf.for %[[N:[^ ]+]] = {{.+}} -> (tensor<2x?x3xf32>)
// TILES:         bufferization.alloc_tensor(%c4{{.*}}) : tensor<?xf32>
// TILES:           tensor.extract %[[SL]][%[[N]]]
// TILES:         scf.for %{{.+}} -> (tensor<2x?x3xf32>)
// TILES:           bufferization.alloc_tensor(%c4) : tensor<16x?xf32>
// TILES:             tensor.extract %[[Q]]
// TILES:           bufferization.alloc_tensor(%c40) : tensor<16x?xf32>
// TILES-COUNT-3:       vector.transfer_read %[[KP]][%[[N]], %{{.+}}, %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x?x4x8xf32>, vector<8xf32>
// TILES-COUNT-12:      vector.fma
// TILES:             arith.mulf %cst{{.*}}, %{{.+}} : f32
// TILES:             arith.addf
// TILES:             arith.maximumf
// TILES:             math.exp
// TILES:             arith.addf %{{.+}}, %{{.+}} fastmath<reassoc> : f32
// TILES:           bufferization.alloc_tensor(%c3) : tensor<16x?xf32>
// TILES:               vector.transfer_read %{{.+}}[%[[N]], %{{.+}}, %{{.+}}], %{{.+}} {in_bounds = [true]} : tensor<2x3x?xf32>, vector<8xf32>
// TILES:             vector.reduction <add>, %{{.+}} fastmath<reassoc> : vector<8xf32> into f32
// TILES:           tensor.insert %{{.+}} into %{{.+}}[%[[N]], %{{.+}}, %{{.+}}] : tensor<2x?x3xf32>
// TILES:       return
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
// T5 bias: key r sits at position r - C, and the transposed keys and the
// values are first copied with the cache in front (read from the cache when
// r < C); query p sees the positions from (p / 2) * 2 - 4 to p - 1, at most
// window + block keys; the bias table is read at the bucket of delta = p + C
// - r (16 exact buckets, then log-spaced up to 128: 16 plus the number of
// the first distances of buckets 17..31 that delta reaches, those distances
// computed by recurc from the definition's f64 logs, and checked here against
// the same formula evaluated in Python); the default scale is 1/sqrt(4).

// CHECK-LABEL: func.func @window_block_t5_cache
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<1x2x6x4xf32>, %[[K:[^ ]+]]: tensor<1x2x6x4xf32>, %[[V:[^ ]+]]: tensor<1x2x6x3xf32>, %[[TAB:[^ ]+]]: tensor<2x32xf32>, %[[KC:[^ ]+]]: tensor<1x2x5x4xf32>, %[[VC:[^ ]+]]: tensor<1x2x5x3xf32>)
// CHECK-DAG: %[[C:[^ ]+]] = arith.constant 5 : index
// CHECK-DAG: %[[SCALE:[^ ]+]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[KT:[^ ]+]] = scf.for %[[B0:[^ ]+]] =
// CHECK:   scf.for %[[H0:[^ ]+]] =
// CHECK:     scf.for %[[R0:[^ ]+]] =
// CHECK:       scf.for %[[E0:[^ ]+]] =
// CHECK:         %[[INCACHE:[^ ]+]] = arith.cmpi slt, %[[R0]], %[[C]] : index
// CHECK:         %[[KX:[^ ]+]] = scf.if %[[INCACHE]] -> (f32) {
// CHECK:           tensor.extract %[[KC]][%[[B0]], %[[H0]], %[[R0]], %[[E0]]]
// CHECK:         } else {
// CHECK:           %[[POS:[^ ]+]] = arith.subi %[[R0]], %[[C]] : index
// CHECK:           tensor.extract %[[K]][%[[B0]], %[[H0]], %[[POS]], %[[E0]]]
// CHECK:         tensor.insert %[[KX]] into %{{.+}}[%[[B0]], %[[H0]], %[[E0]], %[[R0]]] : tensor<1x2x4x11xf32>
// CHECK: %[[VALS:[^ ]+]] = scf.for %[[B1:[^ ]+]] =
// CHECK:   scf.for %[[H1:[^ ]+]] =
// CHECK:     scf.for %[[R1:[^ ]+]] =
// CHECK:       scf.for %[[J1:[^ ]+]] =
// CHECK:         %[[INCACHE2:[^ ]+]] = arith.cmpi slt, %[[R1]], %[[C]] : index
// CHECK:         %[[VX:[^ ]+]] = scf.if %[[INCACHE2]] -> (f32) {
// CHECK:           tensor.extract %[[VC]][%[[B1]], %[[H1]], %[[R1]], %[[J1]]]
// CHECK:         } else {
// CHECK:           tensor.extract %[[V]][%[[B1]], %[[H1]], %{{.+}}, %[[J1]]]
// CHECK:         tensor.insert %[[VX]] into %{{.+}}[%[[B1]], %[[H1]], %[[R1]], %[[J1]]] : tensor<1x2x11x3xf32>
// CHECK: %[[CAP:[^ ]+]] = arith.constant 7 : index
// CHECK: scf.for %[[B:[^ ]+]] =
// CHECK: scf.for %[[H:[^ ]+]] =
// CHECK: scf.for %[[P:[^ ]+]] =
// CHECK:   %[[BL:[^ ]+]] = arith.constant 2 : index
// CHECK:   %[[BI:[^ ]+]] = arith.divui %[[P]], %[[BL]] : index
// CHECK:   %[[BS:[^ ]+]] = arith.muli %[[BI]], %[[BL]] : index
// CHECK:   %[[W:[^ ]+]] = arith.constant 4 : index
// CHECK:   %[[FIRST:[^ ]+]] = arith.subi %[[BS]], %[[W]] : index
// CHECK:   %[[LAST:[^ ]+]] = arith.subi %[[P]], %{{.+}} : index
// CHECK:   %[[FIRSTR:[^ ]+]] = arith.addi %[[FIRST]], %[[C]] : index
// CHECK:   %[[BEGIN:[^ ]+]] = arith.maxsi %[[FIRSTR]], %{{.+}} : index
// CHECK:   %[[LASTR:[^ ]+]] = arith.addi %[[LAST]], %[[C]] : index
// CHECK:   %[[END:[^ ]+]] = arith.addi %[[LASTR]], %{{.+}} : index
// CHECK:   bufferization.alloc_tensor(%[[CAP]]) : tensor<?xf32>
// CHECK:   tensor.extract %[[Q]][%[[B]], %[[H]], %[[P]], %[[E:[^ ]+]]]
// CHECK:     %[[R:[^ ]+]] = arith.addi %[[BEGIN]], %{{.+}} : index
// CHECK:     tensor.extract %[[KT]][%[[B]], %[[H]], %[[E]], %[[R]]]
// CHECK:   scf.for %[[I2:[^ ]+]] =
// CHECK:     %[[SCALED:[^ ]+]] = arith.mulf %[[SCALE]], %{{.+}} : f32
// CHECK:     %[[R2:[^ ]+]] = arith.addi %[[BEGIN]], %[[I2]] : index
// CHECK:     %[[PC:[^ ]+]] = arith.addi %[[P]], %[[C]] : index
// CHECK:     %[[DELTA:[^ ]+]] = arith.subi %[[PC]], %[[R2]] : index
// CHECK:     %[[EXACT:[^ ]+]] = arith.constant 16 : index
// CHECK:     %[[N:[^ ]+]] = arith.maxsi %[[DELTA]], %{{.+}} : index
// CHECK:     %[[ISEXACT:[^ ]+]] = arith.cmpi slt, %[[N]], %[[EXACT]] : index
// CHECK:     %[[T0:[^ ]+]] = arith.constant 19 : index
// CHECK:     %[[GE0:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T0]] : index
// CHECK:     %[[GI0:[^ ]+]] = arith.index_castui %[[GE0]] : i1 to index
// CHECK:     %[[LB0:[^ ]+]] = arith.addi %[[EXACT]], %[[GI0]] : index
// CHECK:     %[[T1:[^ ]+]] = arith.constant 21 : index
// CHECK:     %[[GE1:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T1]] : index
// CHECK:     %[[GI1:[^ ]+]] = arith.index_castui %[[GE1]] : i1 to index
// CHECK:     %[[LB1:[^ ]+]] = arith.addi %[[LB0]], %[[GI1]] : index
// CHECK:     %[[T2:[^ ]+]] = arith.constant 24 : index
// CHECK:     %[[GE2:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T2]] : index
// CHECK:     %[[GI2:[^ ]+]] = arith.index_castui %[[GE2]] : i1 to index
// CHECK:     %[[LB2:[^ ]+]] = arith.addi %[[LB1]], %[[GI2]] : index
// CHECK:     %[[T3:[^ ]+]] = arith.constant 27 : index
// CHECK:     %[[GE3:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T3]] : index
// CHECK:     %[[GI3:[^ ]+]] = arith.index_castui %[[GE3]] : i1 to index
// CHECK:     %[[LB3:[^ ]+]] = arith.addi %[[LB2]], %[[GI3]] : index
// CHECK:     %[[T4:[^ ]+]] = arith.constant 31 : index
// CHECK:     %[[GE4:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T4]] : index
// CHECK:     %[[GI4:[^ ]+]] = arith.index_castui %[[GE4]] : i1 to index
// CHECK:     %[[LB4:[^ ]+]] = arith.addi %[[LB3]], %[[GI4]] : index
// CHECK:     %[[T5:[^ ]+]] = arith.constant 35 : index
// CHECK:     %[[GE5:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T5]] : index
// CHECK:     %[[GI5:[^ ]+]] = arith.index_castui %[[GE5]] : i1 to index
// CHECK:     %[[LB5:[^ ]+]] = arith.addi %[[LB4]], %[[GI5]] : index
// CHECK:     %[[T6:[^ ]+]] = arith.constant 40 : index
// CHECK:     %[[GE6:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T6]] : index
// CHECK:     %[[GI6:[^ ]+]] = arith.index_castui %[[GE6]] : i1 to index
// CHECK:     %[[LB6:[^ ]+]] = arith.addi %[[LB5]], %[[GI6]] : index
// CHECK:     %[[T7:[^ ]+]] = arith.constant 46 : index
// CHECK:     %[[GE7:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T7]] : index
// CHECK:     %[[GI7:[^ ]+]] = arith.index_castui %[[GE7]] : i1 to index
// CHECK:     %[[LB7:[^ ]+]] = arith.addi %[[LB6]], %[[GI7]] : index
// CHECK:     %[[T8:[^ ]+]] = arith.constant 52 : index
// CHECK:     %[[GE8:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T8]] : index
// CHECK:     %[[GI8:[^ ]+]] = arith.index_castui %[[GE8]] : i1 to index
// CHECK:     %[[LB8:[^ ]+]] = arith.addi %[[LB7]], %[[GI8]] : index
// CHECK:     %[[T9:[^ ]+]] = arith.constant 59 : index
// CHECK:     %[[GE9:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T9]] : index
// CHECK:     %[[GI9:[^ ]+]] = arith.index_castui %[[GE9]] : i1 to index
// CHECK:     %[[LB9:[^ ]+]] = arith.addi %[[LB8]], %[[GI9]] : index
// CHECK:     %[[T10:[^ ]+]] = arith.constant 67 : index
// CHECK:     %[[GE10:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T10]] : index
// CHECK:     %[[GI10:[^ ]+]] = arith.index_castui %[[GE10]] : i1 to index
// CHECK:     %[[LB10:[^ ]+]] = arith.addi %[[LB9]], %[[GI10]] : index
// CHECK:     %[[T11:[^ ]+]] = arith.constant 77 : index
// CHECK:     %[[GE11:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T11]] : index
// CHECK:     %[[GI11:[^ ]+]] = arith.index_castui %[[GE11]] : i1 to index
// CHECK:     %[[LB11:[^ ]+]] = arith.addi %[[LB10]], %[[GI11]] : index
// CHECK:     %[[T12:[^ ]+]] = arith.constant 87 : index
// CHECK:     %[[GE12:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T12]] : index
// CHECK:     %[[GI12:[^ ]+]] = arith.index_castui %[[GE12]] : i1 to index
// CHECK:     %[[LB12:[^ ]+]] = arith.addi %[[LB11]], %[[GI12]] : index
// CHECK:     %[[T13:[^ ]+]] = arith.constant 99 : index
// CHECK:     %[[GE13:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T13]] : index
// CHECK:     %[[GI13:[^ ]+]] = arith.index_castui %[[GE13]] : i1 to index
// CHECK:     %[[LB13:[^ ]+]] = arith.addi %[[LB12]], %[[GI13]] : index
// CHECK:     %[[T14:[^ ]+]] = arith.constant 113 : index
// CHECK:     %[[GE14:[^ ]+]] = arith.cmpi sge, %[[N]], %[[T14]] : index
// CHECK:     %[[GI14:[^ ]+]] = arith.index_castui %[[GE14]] : i1 to index
// CHECK:     %[[LB14:[^ ]+]] = arith.addi %[[LB13]], %[[GI14]] : index
// CHECK:     %[[BUCKET:[^ ]+]] = arith.select %[[ISEXACT]], %[[N]], %[[LB14]] : index
// CHECK:     %[[BIAS:[^ ]+]] = tensor.extract %[[TAB]][%[[H]], %[[BUCKET]]] : tensor<2x32xf32>
// CHECK:     arith.addf %[[SCALED]], %[[BIAS]] : f32
// CHECK:   arith.maximumf
// CHECK:   math.exp
// CHECK:   scf.for %[[I3:[^ ]+]] =
// CHECK:     %[[R3:[^ ]+]] = arith.addi %[[BEGIN]], %[[I3]] : index
// CHECK:     scf.for %[[J:[^ ]+]] =
// CHECK:       tensor.extract %[[VALS]][%[[B]], %[[H]], %[[R3]], %[[J]]]
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
