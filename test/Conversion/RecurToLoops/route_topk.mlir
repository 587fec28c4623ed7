// RUN: recur-opt %s --convert-recur-to-loops | FileCheck %s --implicit-check-not=recur.

// Per token, k rounds of selection over the experts. Round j takes the
// largest probability among the experts after the previous pick in the order
// (probability descending, index ascending), i.e. not taken yet; the strict
// comparison keeps the lower index on ties. The picks are summed in order
// and divided by (sum + eps).

// CHECK-LABEL: func.func @route_topk
// CHECK-SAME: (%[[P:[^ ]+]]: tensor<4x8xf32>)
// CHECK: scf.for %[[T:[^ ]+]] =
// CHECK:   %[[INF:[^ ]+]] = arith.constant 0x7F800000 : f32
// CHECK:   %[[NONE:[^ ]+]] = arith.constant -1 : index
// CHECK:   %[[PICKS:[^ ]+]]:5 = scf.for %[[J:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[GS:[^ ]+]] = %{{.+}}, %[[IS:[^ ]+]] = %{{.+}}, %[[PV:[^ ]+]] = %[[INF]], %[[PI:[^ ]+]] = %[[NONE]], %[[SUM:[^ ]+]] = %{{.+}}) -> (tensor<4x2xf32>, tensor<4x2xi32>, f32, index, f32)
// CHECK:     %[[BEST:[^ ]+]]:2 = scf.for %[[E:[^ ]+]] = %[[Z:[^ ]+]] to %{{.+}} step %{{.+}} iter_args(%[[BI:[^ ]+]] = %{{.+}}, %[[BV:[^ ]+]] = %{{.+}}) -> (index, f32)
// CHECK:       %[[X:[^ ]+]] = tensor.extract %[[P]][%[[T]], %[[E]]]
// CHECK:       %[[LT:[^ ]+]] = arith.cmpf olt, %[[X]], %[[PV]] : f32
// CHECK:       %[[EQ:[^ ]+]] = arith.cmpf oeq, %[[X]], %[[PV]] : f32
// CHECK:       %[[GT:[^ ]+]] = arith.cmpi sgt, %[[E]], %[[PI]] : index
// CHECK:       %[[TIE:[^ ]+]] = arith.andi %[[EQ]], %[[GT]] : i1
// CHECK:       %[[AFTER:[^ ]+]] = arith.ori %[[LT]], %[[TIE]] : i1
// CHECK:       %[[FIRST:[^ ]+]] = arith.cmpi slt, %[[BI]], %[[Z]] : index
// CHECK:       %[[BIGGER:[^ ]+]] = arith.cmpf ogt, %[[X]], %[[BV]] : f32
// CHECK:       %[[BETTER:[^ ]+]] = arith.ori %[[FIRST]], %[[BIGGER]] : i1
// CHECK:       %[[TAKE:[^ ]+]] = arith.andi %[[AFTER]], %[[BETTER]] : i1
// CHECK:       %[[NI:[^ ]+]] = arith.select %[[TAKE]], %[[E]], %[[BI]] : index
// CHECK:       %[[NV:[^ ]+]] = arith.select %[[TAKE]], %[[X]], %[[BV]] : f32
// CHECK:       scf.yield %[[NI]], %[[NV]] : index, f32
// CHECK:     %[[G1:[^ ]+]] = tensor.insert %[[BEST]]#1 into %[[GS]][%[[T]], %[[J]]]
// CHECK:     %[[I32:[^ ]+]] = arith.index_cast %[[BEST]]#0 : index to i32
// CHECK:     %[[I1:[^ ]+]] = tensor.insert %[[I32]] into %[[IS]][%[[T]], %[[J]]]
// CHECK:     %[[SUM1:[^ ]+]] = arith.addf %[[SUM]], %[[BEST]]#1 : f32
// CHECK:     scf.yield %[[G1]], %[[I1]], %[[BEST]]#1, %[[BEST]]#0, %[[SUM1]]
// CHECK:   %[[EPS:[^ ]+]] = arith.constant 9.99999997E-7 : f32
// CHECK:   %[[DEN:[^ ]+]] = arith.addf %[[PICKS]]#4, %[[EPS]] : f32
// CHECK:   scf.for
// CHECK:     arith.divf %{{.+}}, %[[DEN]] : f32
func.func @route_topk(%p: tensor<4x8xf32>)
    -> (tensor<4x2xf32>, tensor<4x2xi32>) {
  %g, %i = recur.route_topk %p top 2 : tensor<4x8xf32>
  return %g, %i : tensor<4x2xf32>, tensor<4x2xi32>
}
