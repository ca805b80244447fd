// Which of FSDP2's pageable temporaries land in freshly mapped memory (page-faulted by the copy)
// and which in memory glibc had freed before: a later sync's `.to("cpu")` allocates one tensor per
// parameter through PyTorch's CPU allocator (posix_memalign, 64-byte aligned), writes it in full
// (the D2H), adds it and frees it before the next (_fsdp_collectives.py foreach_reduce). gpt2-xl
// (n_embd 1600, 48 blocks, vocab 50257, 1024 positions), backward order, three later syncs a step
// (SSSS), three steps; against one buffer per unit (the suite before 2026-12-04). A block is fresh
// when glibc served it with its own mmap (the IS_MMAPPED bit, 0x2, of the chunk's size field just
// before the pointer, glibc malloc/malloc.c): every page of it is faulted in by its first write
// and unmapped by free. Counting page faults instead says nothing on this VM, whose kernel
// reports few faults for a first write of fresh memory.
// Build and run: cc -O2 pageable_blocks.c -o pageable_blocks && ./pageable_blocks
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// One temporary: allocated, written, freed; its bytes added to *fresh when glibc mapped it afresh.
static void temporary(size_t bytes, size_t* total, size_t* fresh) {
  void* p;
  if (posix_memalign(&p, 64, bytes)) abort();
  if (((const size_t*)p)[-1] & 2) *fresh += bytes;
  memset(p, 1, bytes);
  *total += bytes;
  free(p);
}

int main(void) {
  const size_t d = 1600, vocab = 50257, pos = 1024, inner = 6400, layers = 48, f = 4;
  // transformer.h.i in named_parameters() order: ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj.
  const size_t block[] = {d, d, d * 3 * d, 3 * d, d * d, d, d, d, d * inner, inner, inner * d, d};
  const size_t nblock = sizeof block / sizeof block[0];
  size_t unit = 0;
  for (size_t i = 0; i < nblock; ++i) unit += block[i];
  for (int per_unit = 0; per_unit < 2; ++per_unit)
    for (int step = 0; step < 3; ++step) {
      size_t total = 0, fresh = 0;
      for (int sync = 0; sync < 3; ++sync) {
        if (per_unit) {
          temporary(2 * d * f, &total, &fresh);  // ln_f
          for (size_t l = 0; l < layers; ++l) temporary(unit * f, &total, &fresh);
          temporary((vocab + pos) * d * f, &total, &fresh);  // wte + wpe
        } else {
          temporary(d * f, &total, &fresh);
          temporary(d * f, &total, &fresh);
          for (size_t l = 0; l < layers; ++l)
            for (size_t i = 0; i < nblock; ++i) temporary(block[i] * f, &total, &fresh);
          temporary(vocab * d * f, &total, &fresh);
          temporary(pos * d * f, &total, &fresh);
        }
      }
      printf("%-13s step %d: %.3f GB written, %.3f GB into fresh mappings (%.1f%%)\n",
             per_unit ? "per unit" : "per parameter", step, total / 1e9, fresh / 1e9,
             100.0 * fresh / total);
    }
  return 0;
}
