// philox.wgsl — Philox4x32-10 (Salmon et al., SC 2011) in u32 arithmetic: a helper concatenated
// in front of the kernels that draw random numbers (sample.wgsl, philox_kat.wgsl), not a kernel.
// Bit for bit the generator of src/core/rng.ts (philox4x32, u32ToUniform): the 64-bit product
// is formed from 16-bit halves, exactly as the TypeScript does. Not here: any bindings.

const PHILOX_M0: u32 = 0xd2511f53u;
const PHILOX_M1: u32 = 0xcd9e8d57u;
const PHILOX_W0: u32 = 0x9e3779b9u;
const PHILOX_W1: u32 = 0xbb67ae85u;

// (high, low) 32-bit halves of the 64-bit product a·b.
fn philox_mulhilo(a: u32, b: u32) -> vec2u {
  let aL = a & 0xffffu;
  let aH = a >> 16u;
  let bL = b & 0xffffu;
  let bH = b >> 16u;
  let ll = aL * bL;
  let lh = aL * bH;
  let hl = aH * bL;
  let hh = aH * bH;
  let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
  return vec2u(hh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u), a * b);
}

// Four u32 words from counter c and key k (10 rounds).
fn philox4x32_10(c: vec4u, k: vec2u) -> vec4u {
  var x = c;
  var key = k;
  for (var r = 0u; r < 10u; r++) {
    let p0 = philox_mulhilo(PHILOX_M0, x.x);
    let p1 = philox_mulhilo(PHILOX_M1, x.z);
    x = vec4u(p1.x ^ x.y ^ key.x, p1.y, p0.x ^ x.w ^ key.y, p0.y);
    key = key + vec2u(PHILOX_W0, PHILOX_W1);
  }
  return x;
}

// u32 → uniform in [0, 1) with 24 bits (exact in f32), as u32ToUniform.
fn philox_uniform(w: u32) -> f32 {
  return f32(w >> 8u) * 5.9604644775390625e-8;
}
