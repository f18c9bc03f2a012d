// qweight.wgsl — one weight W[o, c] of a quantized matrix [OC × C], dequantized exactly (q·s is
// exact in f32), for the kernels that read Q8 / Q4 weights (matmul_q.wgsl, matvec.wgsl: listed
// before them; each declares the module-scope `q` and `scales` arrays and the QBITS override):
//   QBITS = 8: q[o·C + c] int8, W = q · s                     (GGUF Q8_0 numbers)
//   QBITS = 4: nibble of byte ⌊(o·C + c)/2⌋, low for even c, W = (nibble − 8) · s  (MatMulNBits)
//   s = f16(scales[o·(C/32) + ⌊c/32⌋]);  bytes and halves arrive packed little-endian in u32 words.
// f16 → f32 is decoded with integer ops and ldexp (exact, subnormals included).
// Twins: dequantRowsQ8 / dequantRowsQ4 in src/backend/cpu/quant.ts.

fn f16_to_f32(h: u32) -> f32 {
  let sgn = select(1.0, -1.0, (h & 0x8000u) != 0u);
  let e = (h >> 10u) & 0x1fu;
  let m = f32(h & 0x3ffu);
  if (e == 0u) { return sgn * ldexp(m, -24); }
  if (e == 31u) { return bitcast<f32>(0x7f800000u | ((h & 0x8000u) << 16u) | ((h & 0x3ffu) << 13u)); } // ±Inf / NaN
  return sgn * ldexp(1.0 + m / 1024.0, i32(e) - 15);
}

fn qweight(o: u32, c: u32, C: u32) -> f32 {
  let e = o * C + c;
  let si = e / 32u; // = o·(C/32) + ⌊c/32⌋ since C is a multiple of 32
  let s = f16_to_f32((scales[si >> 1u] >> ((si & 1u) * 16u)) & 0xffffu);
  if (QBITS == 8u) {
    let w = q[e >> 2u];
    let by = i32(w << (24u - 8u * (e & 3u))) >> 24u; // sign-extend byte e%4
    return f32(by) * s;
  }
  let nib = (q[e >> 3u] >> (4u * (e & 7u))) & 15u;
  return (f32(nib) - 8.0) * s;
}

