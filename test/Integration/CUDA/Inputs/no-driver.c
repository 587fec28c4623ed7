/* A program linking a layer compiled with recurc --target=cuda and
 * librecur_rt, run where there is no CUDA driver: every symbol of the
 * object resolves in the runtime, the descriptor says the kernel runs on a
 * CUDA device (recur_forward copies to the device and back: tested with a
 * fake driver in test/unit/CudaScenarios.cpp), loading the
 * kernels at startup (a constructor) failed and left "no CUDA device" to
 * be taken, and the kernel entry called directly does nothing harmful and
 * leaves the same error again; so does the backward kernel's. */
#include "LRU.h"

#include <stdio.h>
#include <string.h>

int main(void) {
  recur_status status = recur_cuda_take_error();
  printf("startup: %s: %s\n", recur_status_name(status), recur_last_error());

  const recur_layer_desc *layer = recur_LRU_layer();
  printf("descriptor device %s kernel %s workspace %s\n",
         layer->device == RECUR_DEVICE_CUDA ? "cuda" : "cpu",
         layer->kernel ? "set" : "null", layer->workspace ? "set" : "null");

  /* The kernel on null buffers of zero size: no launch can happen. */
  int64_t in[256], out[256];
  memset(in, 0, sizeof(in));
  recur_LRU_kernel(in, out);
  status = recur_cuda_take_error();
  printf("kernel: %s: %s\n", recur_status_name(status), recur_last_error());
  status = recur_cuda_take_error();
  printf("again: %s\n", recur_status_name(status));

  /* The backward kernel, the same way. */
  printf("backward %s\n", layer->backward ? "set" : "null");
  recur_LRU_backward_kernel(in, out);
  status = recur_cuda_take_error();
  printf("backward: %s: %s\n", recur_status_name(status), recur_last_error());
  return 0;
}
