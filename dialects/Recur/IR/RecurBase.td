//===- RecurBase.td - recur dialect, base op class, enums -----*- tablegen -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_DIALECT_RECUR_IR_RECURBASE_TD
#define RECUR_DIALECT_RECUR_IR_RECURBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Recur_Dialect : Dialect {
  let name = "recur";
  let cppNamespace = "::mlir::recur";
  let summary = "Linear recurrences, gated states, scans and windowed attention";
  let description = [{
    The `recur` dialect holds the ideas recurrent sequence layers are made
    of: linear recurrences and associative scans, gated state updates, block
    recurrence with carried state, windowed, dense and relative-position
    attention, segment memory, stick-breaking halting with a depth loop, and
    sparse expert routing. Every op works on ranked tensors; the time axis and
    the window semantics are attributes, fixed exactly in each op's
    description, in the float64 oracle and in the scalar reference lowering
    (`--convert-recur-to-loops`).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
  let useDefaultAttributePrinterParser = 1;
}

/// The base class of every recur op.
class Recur_Op<string mnemonic, list<Trait> traits = []>
    : Op<Recur_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def Recur_RealTensor : RankedTensorOf<[AnyFloat]>;
def Recur_ScanTensor : RankedTensorOf<[AnyFloat, Complex<AnyFloat>]>;
def Recur_IndexTensor : RankedTensorOf<[I32]>;
def Recur_MaskTensor : RankedTensorOf<[I1]>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Recur_GateKind : I32EnumAttr<"GateKind", "gated state update", [
    I32EnumAttrCase<"Fixed", 0, "fixed">,
    I32EnumAttrCase<"Lstm", 1, "lstm">,
    I32EnumAttrCase<"Update", 2, "update">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::recur";
}
def Recur_GateKindAttr : EnumAttr<Recur_Dialect, Recur_GateKind, "gate_kind"> {
  let assemblyFormat = "`<` $value `>`";
}

def Recur_ScanAlgorithm : I32EnumAttr<"ScanAlgorithm",
    "algorithm of a matrix-state recurrence", [
    I32EnumAttrCase<"Auto", 0, "auto">,
    I32EnumAttrCase<"Recurrent", 1, "recurrent">,
    I32EnumAttrCase<"Chunked", 2, "chunked">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::recur";
}
def Recur_ScanAlgorithmAttr
    : EnumAttr<Recur_Dialect, Recur_ScanAlgorithm, "algorithm"> {
  let assemblyFormat = "`<` $value `>`";
}

def Recur_BiasKind : I32EnumAttr<"BiasKind", "attention position bias", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"T5", 1, "t5">,
    I32EnumAttrCase<"Alibi", 2, "alibi">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::recur";
}
def Recur_BiasKindAttr : EnumAttr<Recur_Dialect, Recur_BiasKind, "bias"> {
  let assemblyFormat = "`<` $value `>`";
}

def Recur_MaskKind : I32EnumAttr<"MaskKind", "structured attention mask", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Causal", 1, "causal">,
    I32EnumAttrCase<"Memory", 2, "memory">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::recur";
}
def Recur_MaskKindAttr : EnumAttr<Recur_Dialect, Recur_MaskKind, "mask"> {
  let assemblyFormat = "`<` $value `>`";
}

def Recur_Activation : I32EnumAttr<"Activation", "expert activation", [
    I32EnumAttrCase<"Relu", 0, "relu">,
    I32EnumAttrCase<"Gelu", 1, "gelu">,
    I32EnumAttrCase<"Silu", 2, "silu">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::mlir::recur";
}
def Recur_ActivationAttr
    : EnumAttr<Recur_Dialect, Recur_Activation, "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // RECUR_DIALECT_RECUR_IR_RECURBASE_TD
