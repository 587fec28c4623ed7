// GateLoop, max-headed (Katsch 2023, arXiv 2311.01927, Eq. 7-8 and 24-25):
// one complex scalar recurrence per channel,
//
//   a_t = sigmoid(gamma_t) * exp(i * theta_t)      data-controlled transition
//   h_t = a_t * h_{t-1} + k_t * v_t                h_{-1} = 0
//   y_t = q_t * Re(h_t)
//
// for one channel over 8 steps, written directly in recur IR (the Recur
// language front end will generate this). `make demo` lowers it through the
// scalar reference pipeline, runs it and checks it against a float64 loop.

func.func private @printMemrefF64(tensor<*xf64>)

func.func @main() {
  %gamma = arith.constant dense<[2.0, 0.5, -1.0, 3.0, 0.0, 1.5, -0.5, 4.0]>
      : tensor<8xf64>
  %theta = arith.constant dense<[0.1, 0.7, -0.3, 1.2, 0.0, -1.0, 0.4, 2.0]>
      : tensor<8xf64>
  %q = arith.constant dense<[1.0, 0.5, -1.0, 2.0, 1.0, 0.25, 1.5, -0.5]>
      : tensor<8xf64>
  %k = arith.constant dense<[0.5, 1.0, 2.0, -1.0, 0.0, 1.0, 0.5, 1.0]>
      : tensor<8xf64>
  %v = arith.constant dense<[1.0, -2.0, 0.5, 1.0, 3.0, 2.0, -1.0, 0.25]>
      : tensor<8xf64>

  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  // a_t = sigmoid(gamma_t) * e^{i theta_t}, kv_t = k_t v_t (real, as complex).
  %a = tensor.generate {
  ^bb0(%t: index):
    %g = tensor.extract %gamma[%t] : tensor<8xf64>
    %th = tensor.extract %theta[%t] : tensor<8xf64>
    %ng = arith.negf %g : f64
    %e = math.exp %ng : f64
    %d = arith.addf %one, %e : f64
    %mag = arith.divf %one, %d : f64
    %c = math.cos %th : f64
    %s = math.sin %th : f64
    %re = arith.mulf %mag, %c : f64
    %im = arith.mulf %mag, %s : f64
    %z = complex.create %re, %im : complex<f64>
    tensor.yield %z : complex<f64>
  } : tensor<8xcomplex<f64>>
  %kv = tensor.generate {
  ^bb0(%t: index):
    %kt = tensor.extract %k[%t] : tensor<8xf64>
    %vt = tensor.extract %v[%t] : tensor<8xf64>
    %p = arith.mulf %kt, %vt : f64
    %z = complex.create %p, %zero : complex<f64>
    tensor.yield %z : complex<f64>
  } : tensor<8xcomplex<f64>>

  %h, %last = recur.linear_scan %a, %kv along 0
      : tensor<8xcomplex<f64>>, tensor<8xcomplex<f64>>

  %y = tensor.generate {
  ^bb0(%t: index):
    %ht = tensor.extract %h[%t] : tensor<8xcomplex<f64>>
    %re = complex.re %ht : complex<f64>
    %qt = tensor.extract %q[%t] : tensor<8xf64>
    %yt = arith.mulf %qt, %re : f64
    tensor.yield %yt : f64
  } : tensor<8xf64>
  %yu = tensor.cast %y : tensor<8xf64> to tensor<*xf64>
  call @printMemrefF64(%yu) : (tensor<*xf64>) -> ()
  return
}
