"""Writes a C program that includes the header of every layer in OUTDIR and
prints each layer's descriptor (name, tensors, step), so that linking it with
every object checks that all headers compile together and every kernel
symbol resolves. Usage: link-all.py OUTDIR > main.c"""

import pathlib
import sys

layers = sorted(p.stem for p in pathlib.Path(sys.argv[1]).glob("*.h"))
print('#include <stdio.h>')
for layer in layers:
    print(f'#include "{layer}.h"')
print('int main(void) {')
print('  const recur_layer_desc *layers[] = {')
print(',\n'.join(f'    recur_{layer}_layer()' for layer in layers))
print('  };')
print(f'  for (int i = 0; i < {len(layers)}; ++i) {{')
print('    const recur_layer_desc *d = layers[i];')
print('    printf("%s: %d inputs, %d params, %d states, %d outputs, step %lld,'
      ' kernel %s\\n", d->name, d->num_inputs, d->num_params, d->num_states,'
      ' d->num_outputs, (long long)d->step_length,'
      ' d->kernel ? "linked" : "missing");')
print('  }')
print('  return 0;')
print('}')
