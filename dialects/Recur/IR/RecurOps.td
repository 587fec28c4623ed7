//===- RecurOps.td - recur dialect operations -----------------*- tablegen -*-===//
//
// Part of the Recur project.
//
// Every op states its semantics exactly; the float64 oracle and the scalar
// reference lowering (RecurToLoops) implement the same equations.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_DIALECT_RECUR_IR_RECUROPS_TD
#define RECUR_DIALECT_RECUR_IR_RECUROPS_TD

include "Recur/IR/RecurBase.td"
include "Recur/IR/RecurInterfaces.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ViewLikeInterface.td"

//===----------------------------------------------------------------------===//
// Scans
//===----------------------------------------------------------------------===//

def Recur_LinearScanOp : Recur_Op<"linear_scan", [Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "elementwise linear recurrence h_t = a_t * h_{t-1} + b_t";
  let description = [{
    Runs the first-order linear recurrence

        h_t = a_t * h_{t-1} + b_t        (t = 0 .. T-1 along `axis`)

    independently for every index of the other dimensions of `b`. `h_{-1}` is
    `init` when given, otherwise zero. With `reverse` the recurrence runs from
    `t = T-1` down to 0 (`h_t = a_t * h_{t+1} + b_t`), which is the shape of
    the backward pass of a forward scan.

    `a` covers a leading prefix of `b`'s dimensions (it must include `axis`)
    and is broadcast over the trailing ones. A vector state has `a` and `b` of
    one shape; an outer-product matrix state (GateLoop's `h[i,j]`, with one
    transition per key index `i`) has `b = k (x) v` of shape `[..., T, dk, dv]`
    and `a` of shape `[..., T, dk]`.

    Element types are float or complex. `a` has `b`'s element type, or, for a
    real decay of a complex state, the element type of `b`'s real part.

    Results: every state `h` (the type of `b`) and the final state `last`
    (`h` at the last step taken; the type of `b` without `axis`), which is what
    a streaming caller carries into the next call as `init`.

    Example (GateLoop, max-headed, batch 2, 128 steps, 64 complex channels):

    ```mlir
    %h, %last = recur.linear_scan %a, %kv init(%h0 : tensor<2x64xcomplex<f32>>)
        along 1 : tensor<2x128x64xcomplex<f32>>, tensor<2x128x64xcomplex<f32>>
    ```
  }];
  let arguments = (ins Recur_ScanTensor:$a, Recur_ScanTensor:$b,
                       Optional<Recur_ScanTensor>:$init,
                       I64Attr:$axis, UnitAttr:$reverse);
  let results = (outs Recur_ScanTensor:$h, Recur_ScanTensor:$last);
  let assemblyFormat = [{
    $a `,` $b (`init` `(` $init^ `:` type($init) `)`)? `along` $axis
    (`reverse` $reverse^)? attr-dict `:` type($a) `,` type($b)
  }];
  let hasVerifier = 1;
}

def Recur_ScanOp : Recur_Op<"scan", [RecursiveMemoryEffects,
    AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "generic inclusive scan with a user combine region";
  let description = [{
    Inclusive scan of N tensors of one shape along `axis` with the binary
    operator in `combine`:

        c_0 = x_0   (or init (.) x_0 when `init` is given)
        c_t = c_{t-1} (.) x_t

    The region takes the N elements of the accumulated operand, then the N
    elements of the new one (2N scalars) and yields the N combined elements.
    The operator need not be commutative. With `reverse` the scan runs from
    the last index to the first: `c_{T-1} = x_{T-1}` (or
    `init (.) x_{T-1}`), `c_t = c_{t+1} (.) x_t`; the accumulated value is
    always the first operand.

    `associative` asserts that the operator is associative, which makes tree
    and chunked evaluation legal; without it only the sequential order is.
    `identity`, when given, holds one element per input such that
    `identity (.) x == x`; backends use it to pad partial chunks.

    Example: GateLoop's operator (p1, p2) . (q1, q2) = (p1 q1, q1 p2 + q2).

    ```mlir
    %A, %H = recur.scan (%a, %kv) along 1 {associative}
        : tensor<4x16xf32>, tensor<4x16xf32> {
    ^bb0(%p1: f32, %p2: f32, %q1: f32, %q2: f32):
      %m = arith.mulf %p1, %q1 : f32
      %t = arith.mulf %q1, %p2 : f32
      %s = arith.addf %t, %q2 : f32
      recur.yield %m, %s : f32, f32
    }
    ```
  }];
  let arguments = (ins Variadic<Recur_ScanTensor>:$inputs,
                       Variadic<Recur_ScanTensor>:$inits,
                       I64Attr:$axis, UnitAttr:$reverse,
                       UnitAttr:$associative,
                       OptionalAttr<ArrayAttr>:$identity);
  let results = (outs Variadic<Recur_ScanTensor>:$results);
  let regions = (region SizedRegion<1>:$combine);
  let assemblyFormat = [{
    `(` $inputs `)` (`init` `(` $inits^ `:` type($inits) `)`)? `along` $axis
    (`reverse` $reverse^)? attr-dict `:` type($inputs) $combine
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Recur_YieldOp : Recur_Op<"yield", [Pure, ReturnLike, Terminator,
    ParentOneOf<["ScanOp", "BlockRecurrenceOp", "DepthLoopOp"]>]> {
  let summary = "terminator of recur regions";
  let description = [{
    Returns the values of a `recur.scan` combine region, a
    `recur.block_recurrence` body or a `recur.depth_loop` body. The parent op
    checks their number and types.

    ```mlir
    recur.yield %m, %s : f32, f32
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

def Recur_GatedLinearAttentionOp : Recur_Op<"gated_linear_attention",
    [Pure, InferTypeOpAdaptor,
     DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "matrix-state linear recurrence read out by queries";
  let description = [{
    Gated linear attention with an outer-product matrix state per leading
    index (batch, head):

        S_t[i, j] = a_t[i] * S_{t-1}[i, j] + k_t[i] * v_t[j]
        y_t[j]    = Re( sum_i q_t[i] * S_t[i, j] )

    `q` and `k` are `[..., T, dk]`, `v` is `[..., T, dv]` (same leading
    dimensions and T) and `a` has the shape of `k`. `q`, `k` and `v` are real
    and share one float type; `a` is of that type (real decays, GLA/Mamba
    style) or complex of it (GateLoop), and the state has `a`'s element type.
    `S_{-1}` is `init` when given, otherwise zero. Results: `y` (the type of
    `v`) and the final state `[..., dk, dv]`.

    `algorithm` chooses the evaluation: `recurrent` (the loop above),
    `chunked` (intra-chunk matmuls with decays taken in log space relative to
    the chunk start, and an inter-chunk state recurrence) or `auto` (the
    compiler's choice: on the CPU, the chunked algorithm's matrix products
    in chunks of 32 for real decays and a static state of at least 32 KiB
    per leading index, the recurrent loop otherwise; on a GPU, the recurrent
    loop). `chunk_size` overrides the chunk length of the chunked algorithm
    (and of `auto`'s products), and of the backward's recomputed chunks
    whatever the algorithm; it is an error with `recurrent`.

    ```mlir
    %y, %S = recur.gated_linear_attention %q, %k, %v, %a
        {algorithm = #recur.algorithm<chunked>, chunk_size = 64 : i64}
        : tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xf32>,
          tensor<4x8x4096x64xf32>, tensor<4x8x4096x64xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$q, Recur_RealTensor:$k,
                       Recur_RealTensor:$v, Recur_ScanTensor:$a,
                       Optional<Recur_ScanTensor>:$init,
                       DefaultValuedAttr<Recur_ScanAlgorithmAttr,
                         "::mlir::recur::ScanAlgorithm::Auto">:$algorithm,
                       OptionalAttr<I64Attr>:$chunk_size);
  let results = (outs Recur_RealTensor:$y, Recur_ScanTensor:$state);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $a (`init` `(` $init^ `:` type($init) `)`)?
    attr-dict `:` type($q) `,` type($k) `,` type($v) `,` type($a)
  }];
  let hasVerifier = 1;
}

def Recur_GatedLinearAttentionGradOp : Recur_Op<"gated_linear_attention_grad",
    [Pure, AllTypesMatch<["q", "dq"]>,
     AllTypesMatch<["k", "dk"]>, AllTypesMatch<["v", "dy", "dv"]>,
     AllTypesMatch<["a", "da"]>, AllTypesMatch<["dstate", "dinit"]>]> {
  let summary = "the reverse sweep of gated_linear_attention";
  let description = [{
    The cotangents of the operands of a `gated_linear_attention` with the
    same `q`, `k`, `v`, `a` and `init`, given `dy`, the cotangent of its
    output, and `dstate`, that of its final state (the state's type,
    `[..., dk, dv]`). With `G_t` the cotangent of the state `S_t`
    (`G_{T-1} = q_{T-1} dy_{T-1}^T + dstate`,
    `G_t = q_t dy_t^T + conj(a_{t+1}) G_{t+1}`, rows scaled by the decays):

        dq_t[i] = sum_j Re(S_t[i, j]) dy_t[j]
        dk_t[i] = sum_j Re(G_t[i, j]) v_t[j]
        dv_t[j] = sum_i Re(G_t[i, j]) k_t[i]
        da_t[i] = sum_j G_t[i, j] conj(S_{t-1}[i, j])
        dinit   = conj(a_0) G_0

    (conj and Re are the identity for real decays; complex cotangents follow
    PyTorch's convention, as every adjoint here). The state is recomputed:
    the sweep keeps it at the start of every chunk of `chunk_size` steps,
    then recomputes one chunk at a time in reverse, O(T / chunk_size + chunk_size)
    states per leading index. Sums over a row may be reassociated (they
    vectorize), so results agree with other orders to rounding.

    ```mlir
    %dq, %dk, %dv, %da, %dinit = recur.gated_linear_attention_grad
        %q, %k, %v, %a, %dy, %dstate chunk 64
        : tensor<2x4x64x16xf32>, tensor<2x4x64x16xf32>, tensor<2x4x64x16xf32>,
          tensor<2x4x64x16xf32>, tensor<2x4x16x16xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$q, Recur_RealTensor:$k,
                       Recur_RealTensor:$v, Recur_ScanTensor:$a,
                       Recur_RealTensor:$dy, Recur_ScanTensor:$dstate,
                       Optional<Recur_ScanTensor>:$init,
                       I64Attr:$chunk_size);
  let results = (outs Recur_RealTensor:$dq, Recur_RealTensor:$dk,
                      Recur_RealTensor:$dv, Recur_ScanTensor:$da,
                      Recur_ScanTensor:$dinit);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $a `,` $dy `,` $dstate
    (`init` `(` $init^ `:` type($init) `)`)? `chunk` $chunk_size attr-dict
    `:` type($q) `,` type($k) `,` type($v) `,` type($a) `,` type($dstate)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gates
//===----------------------------------------------------------------------===//

def Recur_GateOp : Recur_Op<"gate", [Pure,
    AllTypesMatch<["state", "candidate", "result"]>,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "gated state update (fixed, lstm or update gate)";
  let description = [{
    Combines the carried state `c` with a candidate `z` elementwise. The gate
    operands are pre-activations that broadcast to the state's shape
    (numpy rules, aligned on the trailing dimensions):

    - `fixed` (one gate operand `b_g`, input independent):
      `g = sigmoid(b_g)`, `c' = c * g + z * (1 - g)`
    - `lstm` (gate operands `i_pre`, `f_pre`):
      `i = sigmoid(i_pre + input_bias)`, `f = sigmoid(f_pre + forget_bias)`,
      `c' = c * f + z * i`, with `input_bias = -1` and `forget_bias = +1`
      unless given (the Block-Recurrent Transformer's bias toward remembering)
    - `update` (one gate operand `p`, GRU/MemBART style):
      `u = sigmoid(p)`, `c' = u * z + (1 - u) * c`

    ```mlir
    %c1 = recur.gate <lstm> %c, %z, gates(%i, %f : tensor<2x512x64xf32>,
                                                   tensor<2x512x64xf32>)
        : tensor<2x512x64xf32>
    %c2 = recur.gate <fixed> %c, %z, gates(%bg : tensor<64xf32>)
        : tensor<2x512x64xf32>
    ```
  }];
  let arguments = (ins Recur_GateKindAttr:$kind, Recur_RealTensor:$state,
                       Recur_RealTensor:$candidate,
                       Variadic<Recur_RealTensor>:$gates,
                       OptionalAttr<F64Attr>:$input_bias,
                       OptionalAttr<F64Attr>:$forget_bias);
  let results = (outs Recur_RealTensor:$result);
  let assemblyFormat = [{
    $kind $state `,` $candidate `,` `gates` `(` $gates `:` type($gates) `)`
    attr-dict `:` type($state)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The bias added to the lstm input gate's pre-activation.
    double getInputBiasOrDefault() {
      auto bias = getInputBias();
      return bias ? bias->convertToDouble() : -1.0;
    }
    /// The bias added to the lstm forget gate's pre-activation.
    double getForgetBiasOrDefault() {
      auto bias = getForgetBias();
      return bias ? bias->convertToDouble() : 1.0;
    }
  }];
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Recur_WindowAttentionOp : Recur_Op<"window_attention", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["v", "result"]>,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "causal sliding-window (band) attention with a K/V cache";
  let description = [{
    Softmax attention of `q` `[..., T, d]` over the keys `k` `[..., T, d]` and
    values `v` `[..., T, dv]` of the same sequence, preceded by an optional
    carried cache `k_cache` `[..., C, d]`, `v_cache` `[..., C, dv]` at
    positions `-C .. -1`. Query position `p` sees key position `p'` when
    `delta = p - p'` satisfies:

    - token band (`block = 0`): `1 <= delta <= window`, or with
      `include_self`: `0 <= delta <= window - 1` (exactly `window` keys);
    - block band (`block = B > 0`, `window` a multiple of `B`): `p'` lies in
      the query's block or in one of the `window / B` blocks before it, and
      `delta >= 1` (`delta >= 0` with `include_self`).

    Logits are `scale * q . k + bias` (`scale` defaults to `1/sqrt(d)`). A
    query that sees no key gets a zero output (safe softmax). `bias_kind`
    selects the bias and the `bias` operand: `none`; `t5`, a table
    `[H, num_buckets]` indexed by the unidirectional T5 bucket of `delta`
    (`num_buckets` 32 and `max_distance` 128 unless given; half the buckets
    are exact); `alibi`, slopes `[H]` giving `-slope * delta`. `H` is the
    dimension of `q` just before `T`.

    ```mlir
    %o = recur.window_attention %q, %k, %v
        bias(%t5 : tensor<8x32xf32>)
        cache(%kc, %vc : tensor<2x8x512x64xf32>, tensor<2x8x512x64xf32>)
        window 512 {bias_kind = #recur.bias<t5>}
        : tensor<2x8x1024x64xf32>, tensor<2x8x1024x64xf32>,
          tensor<2x8x1024x64xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$q, Recur_RealTensor:$k,
                       Recur_RealTensor:$v,
                       Optional<Recur_RealTensor>:$bias,
                       Optional<Recur_RealTensor>:$k_cache,
                       Optional<Recur_RealTensor>:$v_cache,
                       I64Attr:$window,
                       DefaultValuedAttr<I64Attr, "0">:$block,
                       UnitAttr:$include_self,
                       DefaultValuedAttr<Recur_BiasKindAttr,
                         "::mlir::recur::BiasKind::None">:$bias_kind,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$num_buckets,
                       OptionalAttr<I64Attr>:$max_distance);
  let results = (outs Recur_RealTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`cache` `(` $k_cache^ `,` $v_cache `:` type($k_cache) `,`
     type($v_cache) `)`)?
    `window` $window attr-dict `:` type($q) `,` type($k) `,` type($v)
  }];
  let hasVerifier = 1;
}

def Recur_WindowAttentionGradOp : Recur_Op<"window_attention_grad", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["v", "dy"]>]> {
  let summary = "the backward of window_attention, fused";
  let description = [{
    The cotangents of the operands of a `window_attention` with the same
    operands and attributes, given `dy`, the cotangent of its output. The
    results are, in order, `dq`, `dk`, `dv`, then `dbias` when there is a
    `bias`, then `dk_cache` and `dv_cache` when there is a cache, each of
    its operand's type. With `P` the softmax weights of a query row over
    the keys it sees (recomputed: the forward's weights are not kept),
    `dP_r = dy . v_r`, `dS_r = P_r (dP_r - sum_r' P_r' dP_r')`:

        dq      = scale sum_r dS_r k_r
        dk_r   += scale dS_r q           (over the queries that see r)
        dv_r   += P_r dy
        dbias  += dS_r at [head, bucket(delta)] (t5), or -delta dS_r (alibi)

    with keys `r` over `[k_cache; k]`. A query that sees no key gets a zero
    `dq` and gives nothing. Sums over keys and channels may be reassociated
    (they vectorize), so results agree with other orders to rounding.

    ```mlir
    %dq, %dk, %dv = recur.window_attention_grad %q, %k, %v, %dy window 4
        {include_self} : tensor<2x7x4xf32>, tensor<2x7x4xf32>,
        tensor<2x7x3xf32> -> tensor<2x7x4xf32>, tensor<2x7x4xf32>,
        tensor<2x7x3xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$q, Recur_RealTensor:$k,
                       Recur_RealTensor:$v, Recur_RealTensor:$dy,
                       Optional<Recur_RealTensor>:$bias,
                       Optional<Recur_RealTensor>:$k_cache,
                       Optional<Recur_RealTensor>:$v_cache,
                       I64Attr:$window,
                       DefaultValuedAttr<I64Attr, "0">:$block,
                       UnitAttr:$include_self,
                       DefaultValuedAttr<Recur_BiasKindAttr,
                         "::mlir::recur::BiasKind::None">:$bias_kind,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$num_buckets,
                       OptionalAttr<I64Attr>:$max_distance);
  let results = (outs Variadic<Recur_RealTensor>:$grads);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $dy (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`cache` `(` $k_cache^ `,` $v_cache `:` type($k_cache) `,`
     type($v_cache) `)`)?
    `window` $window attr-dict `:` type($q) `,` type($k) `,` type($v)
    `->` type($grads)
  }];
  let extraClassDeclaration = [{
    ::mlir::Value getDq() { return getGrads()[0]; }
    ::mlir::Value getDk() { return getGrads()[1]; }
    ::mlir::Value getDv() { return getGrads()[2]; }
    /// Null without a bias.
    ::mlir::Value getDbias() {
      return getBias() ? getGrads()[3] : ::mlir::Value();
    }
    /// Null without a cache.
    ::mlir::Value getDkCache() {
      return getKCache() ? getGrads()[getBias() ? 4 : 3] : ::mlir::Value();
    }
    ::mlir::Value getDvCache() {
      return getKCache() ? getGrads()[getBias() ? 5 : 4] : ::mlir::Value();
    }
  }];
  let hasVerifier = 1;
}

def Recur_AttentionOp : Recur_Op<"attention", [Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "dense softmax attention with a structured mask";
  let description = [{
    `out = softmax(scale * q k^T + mask) v` with `q` `[..., Tq, d]`, `k`
    `[..., Tk, d]`, `v` `[..., Tk, dv]` and `out` `[..., Tq, dv]`
    (`scale` defaults to `1/sqrt(d)`). The mask:

    - `none`: every key is visible;
    - `causal`: query `i` sees key `j` iff `j <= i + (Tk - Tq)` (queries are
      the last `Tq` positions of the keys);
    - `memory`: MemBART's block mask over `[memory; tokens]` (`Tq == Tk`, the
      first `memory_slots` rows and columns are memory slots): a memory row
      sees its own slot and every token; a token row sees everything.

    `key_padding` `[..., Tk]` (true = padding) hides keys from every query. A
    query that sees no key gets a zero output.

    ```mlir
    %o = recur.attention %q, %k, %v key_padding(%pad : tensor<2x96xi1>)
        {mask = #recur.mask<memory>, memory_slots = 32 : i64}
        : tensor<2x96x64xf32>, tensor<2x96x64xf32>, tensor<2x96x64xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$q, Recur_RealTensor:$k,
                       Recur_RealTensor:$v,
                       Optional<Recur_MaskTensor>:$key_padding,
                       DefaultValuedAttr<Recur_MaskKindAttr,
                         "::mlir::recur::MaskKind::None">:$mask,
                       OptionalAttr<I64Attr>:$memory_slots,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Recur_RealTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`key_padding` `(` $key_padding^ `:` type($key_padding)
    `)`)? attr-dict `:` type($q) `,` type($k) `,` type($v)
  }];
  let hasVerifier = 1;
}

def Recur_RelAttentionOp : Recur_Op<"rel_attention",
    [Pure, InferTypeOpAdaptor,
     DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "Transformer-XL relative-position attention over memory";
  let description = [{
    Transformer-XL's four-term attention. `q` is `[..., H, L, dh]` (the
    segment), `k` `[..., H, K, dh]` and `v` `[..., H, K, dv]` cover the memory
    and the segment (`K = M + L`, memory first), `r` `[H, K, dh]` holds the
    projected relative encodings `R W_{k,R}` for distances `K-1 .. 0`
    (row `K - 1 - delta` is distance `delta`), and `u`, `pos_bias` `[H, dh]`
    are the global content and position biases:

        S[i, j] = (q_i + u) . k_j + (q_i + pos_bias) . r_{(M + i) - j}
        out     = softmax(scale * S + mask) v

    Query `i` sees key `j` iff `j <= M + i`. `scale` defaults to `1/sqrt(dh)`.

    ```mlir
    %o = recur.rel_attention %q, %k, %v, %r, %u, %pb
        : tensor<2x8x128x64xf32>, tensor<2x8x384x64xf32>,
          tensor<2x8x384x64xf32>, tensor<8x384x64xf32>, tensor<8x64xf32>,
          tensor<8x64xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$q, Recur_RealTensor:$k,
                       Recur_RealTensor:$v, Recur_RealTensor:$r,
                       Recur_RealTensor:$u, Recur_RealTensor:$pos_bias,
                       OptionalAttr<F64Attr>:$scale);
  let results = (outs Recur_RealTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v `,` $r `,` $u `,` $pos_bias attr-dict `:` type($q) `,`
    type($k) `,` type($v) `,` type($r) `,` type($u) `,` type($pos_bias)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Block recurrence and memory
//===----------------------------------------------------------------------===//

def Recur_BlockRecurrenceOp : Recur_Op<"block_recurrence", [
    RecursiveMemoryEffects, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "sequential loop over blocks carrying state through a body";
  let description = [{
    Cuts every input along `axis` into blocks of `block_size` positions and
    runs `body` on the blocks in order, carrying state:

        for t in 0 .. T / block_size - 1:
          (y_t..., c_{t+1}...) = body(x_t..., c_t...)

    The body takes one block of each input (the input's type with
    `block_size` at `axis`) and then the carried values (the types of
    `inits`), and yields one block of each output followed by the next
    carried values. The results are the outputs, concatenated along `axis`
    (length `T`), then the final carried values. `T` must be a multiple of
    `block_size`. This is the Block-Recurrent Transformer's cell loop and
    MemBART's turn loop.

    ```mlir
    %y, %c = recur.block_recurrence (%x : tensor<2x1024x64xf32>)
        init(%c0 : tensor<2x16x64xf32>) block 512 along 1
        -> tensor<2x1024x64xf32>, tensor<2x16x64xf32> {
    ^bb0(%xb: tensor<2x512x64xf32>, %cb: tensor<2x16x64xf32>):
      recur.yield %xb, %cb : tensor<2x512x64xf32>, tensor<2x16x64xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       Variadic<AnyType>:$inits,
                       I64Attr:$block_size, I64Attr:$axis);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `:` type($inputs) `)` (`init` `(` $inits^ `:` type($inits)
    `)`)? `block` $block_size `along` $axis attr-dict `->` type($results)
    $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The outputs, concatenated over blocks: the results before the final
    /// carried values.
    ::mlir::ResultRange getOutputs() {
      return getResults().take_front(getResults().size() - getInits().size());
    }
    /// The final carried values.
    ::mlir::ResultRange getFinalStates() {
      return getResults().take_back(getInits().size());
    }
  }];
}

def Recur_MemoryUpdateOp : Recur_Op<"memory_update",
    [Pure, InferTypeOpAdaptor,
     DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "segment memory: keep the last positions, without gradient";
  let description = [{
    Concatenates `memory` `[..., M, ...]` and the new states `new`
    `[..., L, ...]` along `axis` and keeps the last `size` positions:
    `result = stop_gradient(concat(memory, new)[M + L - size :])`. This is
    Transformer-XL's memory update and the Block-Recurrent Transformer's K/V
    cache; no gradient flows from the result into either operand.

    ```mlir
    %m1 = recur.memory_update %m0, %h along 1 keep 384
        : tensor<2x384x512xf32>, tensor<2x128x512xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$memory, Recur_RealTensor:$new_states,
                       I64Attr:$axis, I64Attr:$size);
  let results = (outs Recur_RealTensor:$result);
  let assemblyFormat = [{
    $memory `,` $new_states `along` $axis `keep` $size attr-dict `:`
    type($memory) `,` type($new_states)
  }];
  let hasVerifier = 1;
}

def Recur_StopGradientOp : Recur_Op<"stop_gradient",
    [Pure, SameOperandsAndResultType,
     DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "identity in the forward pass, zero gradient in the backward";
  let description = [{
    Returns its operand unchanged; reverse-mode differentiation sends no
    gradient through it (Transformer-XL's SG, the cached keys and values of
    the Block-Recurrent Transformer).

    ```mlir
    %m = recur.stop_gradient %mem : tensor<2x384x512xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

//===----------------------------------------------------------------------===//
// Depth recurrence, halting and experts
//===----------------------------------------------------------------------===//

def Recur_HaltingOp : Recur_Op<"halting", [Pure,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>,
    AllTypesMatch<["p_hat", "mass", "a", "new_mass"]>,
    AllTypesMatch<["h", "acc", "s_prev", "s", "new_acc"]>]> {
  let summary = "one depth step of stick-breaking halting";
  let description = [{
    One step `l` of the Sparse Universal Transformer's stick-breaking halting,
    per token. `p_hat` `[...]` is this step's halting probability, `h`
    `[..., d]` this step's state, `mass` `[...]` the halted mass so far
    (`sum_{l'<l} a_l'`), `acc` `[..., d]` the halted states so far
    (`sum_{l'<l} a_l' h_l'`) and `s_prev` the previous halted state. A token
    is active while `mass < threshold` (default 0.999):

        active:  a = p_hat * (1 - mass)           (= p_hat * prod (1 - p_hat_l'))
                 s = (1 - mass) * h + acc         (Eq. 3: convex in h_0..h_l)
                 new_acc = acc + a * h,  new_mass = mass + a
        halted:  a = 0, s = s_prev, new_acc = acc, new_mass = mass  (exact copies)

    ```mlir
    %a, %s, %mass1, %acc1 = recur.halting %p, %h, %mass, %acc, %s0
        {threshold = 0.999 : f64} : tensor<2x128xf32>, tensor<2x128x512xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$p_hat, Recur_RealTensor:$h,
                       Recur_RealTensor:$mass, Recur_RealTensor:$acc,
                       Recur_RealTensor:$s_prev,
                       DefaultValuedAttr<F64Attr, "0.999">:$threshold);
  let results = (outs Recur_RealTensor:$a, Recur_RealTensor:$s,
                      Recur_RealTensor:$new_mass, Recur_RealTensor:$new_acc);
  let assemblyFormat = [{
    $p_hat `,` $h `,` $mass `,` $acc `,` $s_prev attr-dict `:` type($p_hat)
    `,` type($h)
  }];
  let hasVerifier = 1;
}

def Recur_DepthLoopOp : Recur_Op<"depth_loop", [RecursiveMemoryEffects,
    InferTypeOpAdaptor, DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "applies one shared body up to max_depth times";
  let description = [{
    Depth recurrence of a Universal Transformer: the body, given the step
    index `l` (`index`, 0-based) and the carried values, yields the next
    carried values; it runs `max_depth` times and the results are the last
    carried values. Per-token halting lives in the body (`recur.halting`),
    whose halted tokens are copied exactly, so a backend may stop early once
    every token has halted.

    ```mlir
    %h, %m = recur.depth_loop max_depth 6
        init(%h0, %m0 : tensor<2x128x512xf32>, tensor<2x128xf32>) {
    ^bb0(%l: index, %h: tensor<2x128x512xf32>, %m: tensor<2x128xf32>):
      recur.yield %h, %m : tensor<2x128x512xf32>, tensor<2x128xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$inits, I64Attr:$max_depth);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `max_depth` $max_depth `init` `(` $inits `:` type($inits) `)`
    attr-dict-with-keyword
    $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Recur_RouteTopKOp : Recur_Op<"route_topk", [Pure, InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "top-k expert selection with renormalised gates";
  let description = [{
    For router probabilities `probs` `[..., E]`, selects the `k` largest
    (ties broken toward the lower expert index, in descending order of
    probability) and returns their indices `[..., k]` (i32) and gates
    `g / (sum_topk g + eps)` `[..., k]` (`eps` defaults to 1e-6).

    ```mlir
    %gates, %idx = recur.route_topk %probs top 2 : tensor<2x128x8xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$probs, I64Attr:$k,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Recur_RealTensor:$gates, Recur_IndexTensor:$indices);
  let assemblyFormat = "$probs `top` $k attr-dict `:` type($probs)";
  let hasVerifier = 1;
}

def Recur_MoEOp : Recur_Op<"moe", [Pure, AllTypesMatch<["x", "result"]>,
    DeclareOpInterfaceMethods<Recur_AdjointOpInterface>]> {
  let summary = "sparse mixture of feed-forward experts";
  let description = [{
    For each token `x` `[..., d]` with selected experts `indices` `[..., k]`
    and gates `gates` `[..., k]`:

        y = sum_j gates[j] * act(x W_in[indices[j]]) W_out[indices[j]]

    with `w_in` `[E, d, D]` and `w_out` `[E, D, d]`. A token whose `active`
    flag (`[...]`, optional) is false goes to no expert and gets `y = 0` (the
    Sparse Universal Transformer's no-op expert for halted tokens).

    ```mlir
    %y = recur.moe %x, %idx, %g, %w1, %w2 {activation = #recur.activation<gelu>}
        : tensor<2x128x512xf32>, tensor<2x128x2xi32>, tensor<2x128x2xf32>,
          tensor<8x512x1024xf32>, tensor<8x1024x512xf32>
    ```
  }];
  let arguments = (ins Recur_RealTensor:$x, Recur_IndexTensor:$indices,
                       Recur_RealTensor:$gates, Recur_RealTensor:$w_in,
                       Recur_RealTensor:$w_out,
                       Optional<Recur_MaskTensor>:$active,
                       DefaultValuedAttr<Recur_ActivationAttr,
                         "::mlir::recur::Activation::Relu">:$activation);
  let results = (outs Recur_RealTensor:$result);
  let assemblyFormat = [{
    $x `,` $indices `,` $gates `,` $w_in `,` $w_out
    (`active` `(` $active^ `:` type($active) `)`)? attr-dict `:` type($x) `,`
    type($indices) `,` type($gates) `,` type($w_in) `,` type($w_out)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Lowering helpers: complex values seen as their parts
//===----------------------------------------------------------------------===//

class Recur_ComplexViewOp<string mnemonic> : Recur_Op<mnemonic, [Pure,
    DeclareOpInterfaceMethods<ViewLikeOpInterface>,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
      ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
       "getAliasingValues", "bufferize", "getBufferType"]>]> {
  let arguments = (ins AnyTypeOf<[AnyRankedTensor, AnyStridedMemRef]>:$source);
  let results = (outs AnyTypeOf<[AnyRankedTensor, AnyStridedMemRef]>:$result);
  let assemblyFormat = "$source attr-dict `:` type($source) `to` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Value":$source), [{
      build($_builder, $_state, getViewType(source.getType()), source);
    }]>
  ];
  let extraClassDeclaration = [{
    /// The type of this view of a `source` of that type, or null where
    /// there is none (see the op's description).
    static ::mlir::Type getViewType(::mlir::Type source);
  }];
  let hasVerifier = 1;
}

def Recur_ViewAsRealOp : Recur_ComplexViewOp<"view_as_real"> {
  let summary = "a complex tensor or buffer seen as its real and imaginary parts";
  let description = [{
    The same elements as `source`, of `complex<F>`, seen as `F` with the last
    dimension twice as long: element `[..., j]` of the source is elements
    `[..., 2 j]` (its real part) and `[..., 2 j + 1]` (its imaginary part) of
    the result, which is how a complex number lies in memory. On tensors it
    is a value; bufferized, it is a view of the same buffer (no copy), whose
    offset and strides (but the last) are twice the source's. A buffer's last
    dimension must have a static stride of 1; a tensor whose buffer is not
    known to have one (a layout bufferization made fully dynamic) is copied
    into a contiguous buffer, which is viewed.

    The CPU lowering uses it to scan complex channels in vectors of `F`
    (`linear_scan`); the ops of a spec never produce it.

    ```mlir
    %r = recur.view_as_real %h : tensor<4x?x512xcomplex<f32>> to tensor<4x?x1024xf32>
    ```
  }];
}

def Recur_ViewAsComplexOp : Recur_ComplexViewOp<"view_as_complex"> {
  let summary = "real and imaginary parts seen as a complex tensor or buffer";
  let description = [{
    The inverse of `view_as_real`: `source`, of `F` with an even last
    dimension, seen as `complex<F>` with the last dimension half as long
    (elements `[..., 2 j]` and `[..., 2 j + 1]` are the real and imaginary
    parts of element `[..., j]`). A buffer's last dimension must have a
    static stride of 1, and its offset and other strides must be even (the
    static ones are checked; the dynamic ones come from `view_as_real`).

    ```mlir
    %h = recur.view_as_complex %r : tensor<4x?x1024xf32> to tensor<4x?x512xcomplex<f32>>
    ```
  }];
}

#endif // RECUR_DIALECT_RECUR_IR_RECUROPS_TD
